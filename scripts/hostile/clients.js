/**
 * The hostile bench's HTTP clients: every request belongs to a client set and has a time limit, and
 * `destroyAll()` ends whatever is open, so no attack leaves a socket hanging. Answers are counted,
 * only their first bytes kept to read an error's JSON.
 */
import http from 'node:http'
import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { performance } from 'node:perf_hooks'

/** Bytes of an answer kept to read its JSON error; the rest is only counted. */
const KEPT = 16 * 1024

/**
 * @typedef {{ status: number, ms: number, sentBytes: number, receivedBytes: number,
 *   body: any, error: string|null }} Outcome
 *   `status` 0 with `error` ('timeout', 'abandoned', 'destroyed', ECONNREFUSED ...) when no answer came
 */

/** A set of requests that can all be ended at once. */
export function createClientSet () {
  const open = new Set()
  let closed = false

  /**
   * One request, its whole answer read (counted, the first KEPT bytes kept). The body is `body`, or
   * `streams` for pipeline, or `send(req, count)`, which writes it and returns its cleanup;
   * `abandonAfterMs`: hang up after this long.
   */
  function request (url, { method = 'GET', headers = {}, body = null, streams = null, send = null, timeoutMs, abandonAfterMs = null }) {
    const started = performance.now()
    let sentBytes = 0
    return new Promise(function sendRequest (resolve) {
      let settled = false
      let stopSending = null
      const timers = []
      const req = http.request(url, { method, headers, agent: false })
      const entry = { destroy: function destroyRequest () { finish({ status: 0, body: null, error: 'destroyed' }) } }
      open.add(entry)
      function finish (result) {
        if (settled) return
        settled = true
        for (const timer of timers) clearTimeout(timer)
        if (stopSending) stopSending()
        open.delete(entry)
        req.destroy()
        resolve({ receivedBytes: 0, ...result, ms: performance.now() - started, sentBytes })
      }
      if (closed) {
        finish({ status: 0, body: null, error: 'destroyed' })
        return
      }
      timers.push(setTimeout(function timedOut () { finish({ status: 0, body: null, error: 'timeout' }) }, timeoutMs))
      if (abandonAfterMs !== null) {
        timers.push(setTimeout(function abandon () { finish({ status: 0, body: null, error: 'abandoned' }) }, abandonAfterMs))
      }
      let responded = false
      req.on('error', function failed (err) {
        // an answer that came before the write failed (EPIPE after a 413) is still read to its end
        if (!responded) finish({ status: 0, body: null, error: err.code ?? err.message })
      })
      req.on('response', function onResponse (res) {
        responded = true
        readAnswer(res, finish)
      })
      function count (n) { sentBytes += n }
      if (send !== null) {
        stopSending = send(req, count)
      } else if (streams !== null) {
        const counter = countingPassThrough(count)
        pipeline(...streams, counter, req).catch(function ignore () {
          // an answer before the whole body was sent (a 413) ends the upload early: the answer is what counts
        })
      } else {
        if (body !== null) count(body.length)
        req.end(body ?? undefined)
      }
    })
  }

  /** A long-lived GET (an SSE stream), read and dropped until destroyAll(); resolves on the answer's head (timeoutMs) or failure. */
  function openStream (url, { headers = {}, timeoutMs }) {
    return new Promise(function connect (resolve) {
      let answered = false
      const req = http.get(url, { headers, agent: false })
      const entry = { destroy: function destroyStream () { req.destroy() } }
      if (closed) {
        resolve({ status: 0, error: 'destroyed' })
        return
      }
      open.add(entry)
      function settle (result) {
        if (answered) return
        answered = true
        clearTimeout(timer)
        resolve(result)
      }
      const timer = setTimeout(function headTimedOut () {
        settle({ status: 0, error: 'timeout' })
        req.destroy()
      }, timeoutMs)
      req.on('error', function failed (err) {
        open.delete(entry)
        settle({ status: 0, error: err.code ?? err.message })
      })
      req.on('close', function closedStream () { open.delete(entry) })
      req.on('response', function onHead (res) {
        res.on('error', function ignoreStreamError () {
          // the socket is destroyed at the end: its error is expected
        })
        res.resume()
        settle({ status: res.statusCode, error: null })
      })
    })
  }

  return {
    request,
    openStream,
    /** End every request and stream still open. @returns {number} how many were */
    destroyAll: function destroyAll () {
      closed = true
      const entries = [...open]
      for (const entry of entries) entry.destroy()
      open.clear()
      return entries.length
    },
    open: function openCount () { return open.size }
  }
}

function countingPassThrough (count) {
  return new Transform({
    transform: function countSent (chunk, encoding, callback) {
      count(chunk.length)
      callback(null, chunk)
    }
  })
}

/** Count the answer, keep its first bytes, parse them as JSON where they are JSON. */
function readAnswer (res, done) {
  const kept = []
  let keptBytes = 0
  let receivedBytes = 0
  res.on('data', function keep (chunk) {
    receivedBytes += chunk.length
    if (keptBytes < KEPT) {
      kept.push(chunk.subarray(0, KEPT - keptBytes))
      keptBytes += Math.min(chunk.length, KEPT - keptBytes)
    }
  })
  function parsed () {
    const text = Buffer.concat(kept).toString('utf8')
    try {
      return JSON.parse(text)
    } catch {
      return text // not JSON, or cut at 16 KiB
    }
  }
  res.on('end', function ended () {
    done({ status: res.statusCode, body: parsed(), receivedBytes, error: null })
  })
  res.on('error', function failed (err) {
    done({ status: 0, body: null, receivedBytes, error: err.code ?? err.message })
  })
  res.on('close', function closedEarly () {
    // after 'end' this changes nothing; before it, the status is what the lab said
    done({ status: res.statusCode, body: parsed(), receivedBytes, error: 'answer cut short' })
  })
}
