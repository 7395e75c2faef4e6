/** The grader's side of a request: sent with a deadline, read as JSON; a reset or timeout is `{ status: 0, error }`, never a throw. */
import fs from 'node:fs'
import http from 'node:http'
import { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { performance } from 'node:perf_hooks'

/** How every check sends its bodies: /good's own way (docs/lessons/grade.md). */
const BODY_HEADERS = Object.freeze({ 'content-type': 'application/octet-stream' })

/** origin -> the tallies counting the requests sent there */
const tallies = new Map()

/** Count the requests sent to `origin` until `stop()`; `open`: sent and not yet answered, cut off or given up. */
export function countRequests (origin) {
  const tally = {
    sent: 0,
    answered: 0,
    open: 0,
    stop: function stopCounting () {
      tallies.get(origin)?.delete(tally)
      if (tallies.get(origin)?.size === 0) tallies.delete(origin)
    }
  }
  if (!tallies.has(origin)) tallies.set(origin, new Set())
  tallies.get(origin).add(tally)
  return tally
}

/** A request to `url` starts: returns what to call with its status once it is over (0: no answer). */
function countStart (url) {
  const counting = tallies.get(new URL(url).origin)
  if (counting === undefined) return function notCounted () {}
  const mine = [...counting]
  for (const tally of mine) {
    tally.sent++
    tally.open++
  }
  let over = false
  return function countEnd (status) {
    if (over) return
    over = true
    for (const tally of mine) {
      tally.open--
      if (status > 0) tally.answered++
    }
  }
}

/** POST `buffer` (whole or in writes), `file` or `streams`; `status` 0 and `error` ('timeout' or the socket's code) without an answer. */
export function send (url, body) {
  const started = performance.now()
  const headers = { ...BODY_HEADERS, ...body.headers }
  if (body.buffer) headers['content-length'] = body.buffer.length
  else if (body.file) headers['content-length'] = fs.statSync(body.file).size
  let sentBytes = 0
  const countEnd = countStart(url)
  return new Promise(function exchange (resolve) {
    let settled = false
    let source = null
    const req = http.request(url, { method: 'POST', agent: false, headers }, function onResponse (res) {
      const parts = []
      res.on('data', function keep (chunk) { parts.push(chunk) })
      res.on('end', function answered () {
        const text = Buffer.concat(parts).toString('utf8')
        let json = null
        try {
          json = JSON.parse(text)
        } catch {
          // not JSON: the check says so
        }
        settle({ status: res.statusCode, json, text, error: null })
      })
      res.on('error', function cut (err) { settle({ status: 0, json: null, text: '', error: err.code ?? err.message }) })
    })
    const timer = setTimeout(function giveUp () {
      settle({ status: 0, json: null, text: '', error: 'timeout' })
    }, body.timeoutMs)
    function settle (outcome) {
      if (settled) return
      settled = true
      clearTimeout(timer)
      countEnd(outcome.status)
      // an answer before the whole body went (a refusal): stop sending, and let the socket go
      if (source) source.destroy()
      req.destroy()
      resolve({ ...outcome, ms: Math.round((performance.now() - started) * 10) / 10, sentBytes })
    }
    req.on('error', function failed (err) {
      // after an answer, a write error is only the server closing early: the answer counts
      settle({ status: 0, json: null, text: '', error: err.code ?? err.message })
    })
    const counter = new Transform({
      transform: function countSent (chunk, encoding, callback) {
        sentBytes += chunk.length
        callback(null, chunk)
      }
    })
    if (body.writes && body.buffer) {
      writeInPieces(req, body.buffer, body.writes, function wrote (n) { sentBytes += n }, function stopped () { return settled })
      return
    }
    const streams = body.streams ?? [body.file ? fs.createReadStream(body.file) : bufferStream(body.buffer)]
    source = streams[0]
    pipeline(...streams, counter, req).catch(function ignore () {
      // the request's own error listener, or the answer, settles it
    })
  })
}

/** Send the headers and `bytes` of `buffer` (its whole length announced), then destroy the socket; resolves once gone. */
export function abortUpload (url, buffer, bytes, headers = {}) {
  const countEnd = countStart(url)
  return new Promise(function startAndCut (resolve) {
    const all = { ...BODY_HEADERS, ...headers, 'content-length': buffer.length }
    const req = http.request(url, { method: 'POST', agent: false, headers: all })
    let status = 0
    req.on('error', function expected () {
    })
    req.on('close', function gone () {
      countEnd(status)
      resolve()
    })
    req.on('response', function early (res) {
      // refused before the cut: fine, the check only asks that nothing stays stuck
      status = res.statusCode
      res.resume()
    })
    req.flushHeaders()
    req.write(buffer.subarray(0, bytes), function written () {
      // long enough for the handler to be reading when the client vanishes
      setTimeout(function cut () { req.destroy() }, 30)
    })
  })
}

function bufferStream (buffer) {
  return Readable.from([buffer], { objectMode: false })
}

/** Writes of `min`..`max` bytes, a macrotask apart, so the server reads them one by one. */
function writeInPieces (req, buffer, { min, max }, onWrote, stopped) {
  req.on('socket', function noDelay (socket) { socket.setNoDelay(true) })
  let at = 0
  let turn = 0
  function writeNext () {
    if (stopped()) return
    if (at >= buffer.length) {
      req.end()
      return
    }
    // a fixed pattern of sizes: every run splits the same bytes the same way
    const size = min + (turn++ * 7919) % (max - min + 1)
    const piece = buffer.subarray(at, at + size)
    at += piece.length
    onWrote(piece.length)
    if (req.write(piece)) setImmediate(writeNext)
    else req.once('drain', writeNext)
  }
  writeNext()
}
