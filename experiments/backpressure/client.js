/**
 * The backpressure experiment's client, in a process of its own: sends one
 * gzipped NDJSON file to POST /backpressure/:token, paced to a rate or as fast
 * as the connection takes it, honouring write()'s return all the way (so when
 * the server stops reading, this process stops writing). Started with
 * `runChildJob`; speaks the protocol of lib/experiments/child-job.js:
 *
 *   in:  { url, file, rate, seconds, sampleMs }, then at any time { type: 'settings', rate }
 *   out: { type: 'progress', done, total, writtenBytes, waitingBytes, bound, rate } every sampleMs
 *        (`done`: bytes handed to the kernel; `waitingBytes`: written but still in the request's
 *        and socket's buffers, `writableLength`; `bound`: their highWaterMark)
 *        then { type: 'result', status, answer, stoppedBy, writtenBytes, sentBytes, ms }
 *
 * `stoppedBy`: 'answer' (the server answered), 'time' (the time box passed: the
 * connection is reset, which drops what the kernels still queue), 'error'.
 */
import fs from 'node:fs'
import http from 'node:http'
import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { performance } from 'node:perf_hooks'
import { serveChildJob } from '../../lib/experiments/child-job.js'
import { runKeyHeaders } from '../../lib/limits/run-keys.js'

/** Bytes read from the file per write: small enough that a paced send is smooth at 16 KiB/s. */
const READ_BYTES = 16 * 1024
/** How long an error on the connection waits for the answer that may be behind it. */
const ANSWER_GRACE_MS = 500

serveChildJob('experiments/backpressure/client.js', async function sendBody (job, progress) {
  checkJob(job)
  const settings = { rate: job.rate }
  const size = fs.statSync(job.file).size
  const pacer = createPacer(settings)
  function onSettings (message) {
    if (message?.type !== 'settings' || !Number.isSafeInteger(message.rate) || message.rate < 0) return
    settings.rate = message.rate
    pacer.restart()
  }
  process.on('message', onSettings)
  const started = performance.now()
  const req = http.request(job.url, {
    method: 'POST',
    agent: false,
    headers: { 'content-type': 'application/gzip', 'content-length': size, ...runKeyHeaders() }
  })
  function figures () {
    // what the pacer let through and pipeline() has not yet written sits in the pacer's own buffer
    const writtenBytes = pacer.passed - pacer.readableLength
    const waitingBytes = req.writableLength
    return { writtenBytes, waitingBytes, sentBytes: Math.max(0, writtenBytes - waitingBytes) }
  }
  const sampler = setInterval(function reportState () {
    const now = figures()
    const state = { writtenBytes: now.writtenBytes, waitingBytes: now.waitingBytes, bound: req.writableHighWaterMark, rate: settings.rate }
    progress(Math.min(now.sentBytes, size), size, state)
  }, job.sampleMs)
  let timeBox = null
  try {
    const outcome = await new Promise(function untilOver (resolve) {
      let errorTimer = null
      function settle (value) {
        clearTimeout(errorTimer)
        resolve(value)
      }
      req.on('response', function onResponse (res) {
        readAnswer(res).then(function answered (answer) {
          settle({ status: res.statusCode, answer, stoppedBy: 'answer' })
        })
      })
      req.on('error', function onError (err) {
        // an answer sent before the body ended (a 413) may be behind the reset it caused
        errorTimer ??= setTimeout(settle, ANSWER_GRACE_MS, { status: 0, answer: null, stoppedBy: 'error', error: err.code ?? err.message })
      })
      timeBox = setTimeout(function timeIsUp () {
        settle({ status: 0, answer: null, stoppedBy: 'time' })
      }, job.seconds * 1000)
      pipeline(fs.createReadStream(job.file, { highWaterMark: READ_BYTES }), pacer, req).catch(function endedEarly () {
        // the request's own 'error', or the answer, says what happened
      })
    })
    return { ...outcome, ...figures(), ms: performance.now() - started }
  } finally {
    clearTimeout(timeBox)
    clearInterval(sampler)
    process.off('message', onSettings)
    // a reset, not a close: what the kernels still queue for the server is dropped, not delivered
    if (req.socket && !req.socket.destroyed) req.socket.resetAndDestroy()
    req.destroy()
  }
})

/**
 * A pass-through that holds each chunk until the rate allows it (0: never holds).
 * `restart()` starts counting again at a new rate.
 * @param {{ rate: number }} settings read at each chunk
 * @returns {Transform & { passed: number, restart: () => void }}
 */
function createPacer (settings) {
  let since = performance.now()
  let counted = 0
  let timer = null
  const pacer = new Transform({
    transform: function pace (chunk, encoding, callback) {
      function pass () {
        timer = null
        pacer.passed += chunk.length
        callback(null, chunk)
      }
      if (settings.rate === 0) return pass()
      counted += chunk.length
      const waitMs = counted / settings.rate * 1000 - (performance.now() - since)
      if (waitMs <= 0) return pass()
      timer = setTimeout(pass, waitMs)
    },
    destroy: function stopPacing (err, callback) {
      clearTimeout(timer)
      callback(err)
    }
  })
  pacer.passed = 0
  pacer.restart = function restart () {
    since = performance.now()
    counted = 0
  }
  return pacer
}

/** The answer's body, as JSON where it is JSON. */
async function readAnswer (res) {
  const parts = []
  try {
    for await (const chunk of res) parts.push(chunk)
  } catch {
    // cut short: what came is what there is
  }
  const text = Buffer.concat(parts).toString('utf8')
  try {
    return JSON.parse(text)
  } catch {
    return text.slice(0, 1000)
  }
}

function checkJob (job) {
  if (job === null || typeof job !== 'object') throw new TypeError('job must be an object')
  if (typeof job.url !== 'string' || typeof job.file !== 'string') throw new TypeError('job.url and job.file must be strings')
  if (!Number.isSafeInteger(job.rate) || job.rate < 0) throw new TypeError(`job.rate must be bytes a second (0: fastest), got ${job.rate}`)
  if (!Number.isSafeInteger(job.seconds) || job.seconds < 1) throw new TypeError(`job.seconds must be 1 or more, got ${job.seconds}`)
  if (!Number.isSafeInteger(job.sampleMs) || job.sampleMs < 10) throw new TypeError(`job.sampleMs must be at least 10, got ${job.sampleMs}`)
}
