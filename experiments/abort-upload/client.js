/**
 * The client that aborts, a child job (in its own process: its sockets are never the server's): in { url, uploads,
 * bytes, abortAfter, inFlight, settleMs }, out { results: [{ sent, status, aborted, ms }], wallMs }. Each upload
 * announces `bytes`, writes `abortAfter`, waits until they left for the kernel and `settleMs` more, then destroys
 * its socket (a FIN: the server reads every byte sent first). `status` 0: never answered, else the early refusal.
 */
import http from 'node:http'
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { serveChildJob } from '../../lib/experiments/child-job.js'
import { runKeyHeaders } from '../../lib/limits/run-keys.js'

const CHUNK_BYTES = 64 * 1024
const PROGRESS_INTERVAL_MS = 100

serveChildJob('experiments/abort-upload/client.js', async function abortUploads (job, progress) {
  checkJob(job)
  const chunk = randomBytes(CHUNK_BYTES)
  const results = new Array(job.uploads)
  let next = 0
  let done = 0
  let lastProgress = 0
  const begun = performance.now()
  async function worker () {
    while (next < job.uploads) {
      const k = next++
      results[k] = await abortOne(job, chunk)
      done++
      const now = performance.now()
      if (done === job.uploads || now - lastProgress >= PROGRESS_INTERVAL_MS) {
        lastProgress = now
        progress(done, job.uploads)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(job.inFlight, job.uploads) }, worker))
  return { results, wallMs: performance.now() - begun }
})

function abortOne ({ url, bytes, abortAfter, settleMs }, chunk) {
  const started = performance.now()
  return new Promise(function uploadAndAbort (resolve) {
    // a socket of its own (no agent): destroying it must end this upload only
    const req = http.request(url, {
      method: 'POST',
      agent: false,
      // the run's key lets the upload in where the lab asks other machines for its token
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(bytes), ...runKeyHeaders() }
    })
    let sent = 0
    let status = 0
    let aborted = false
    req.on('response', function earlyAnswer (res) {
      // the server answered before the abort: a refusal (or the whole body, at 100 %)
      status = res.statusCode
      res.resume()
    })
    req.on('error', function expectedError () {
      // our own destroy() ends the request with an error: that is the point
    })
    req.on('close', function uploadOver () {
      resolve({ sent, status, aborted, ms: Math.round((performance.now() - started) * 10) / 10 })
    })
    req.flushHeaders()
    writePart().then(function hangUp () {
      if (status === 0) aborted = true
      req.destroy()
    }, function writeFailed () {
      req.destroy()
    })

    async function writePart () {
      while (sent < abortAfter && !req.destroyed) {
        const piece = chunk.subarray(0, Math.min(chunk.length, abortAfter - sent))
        sent += piece.length
        // the write's callback: these bytes have left for the kernel
        await new Promise(function written (done) { req.write(piece, done) })
      }
      await sleep(settleMs)
    }
  })
}

function checkJob (job) {
  if (typeof job?.url !== 'string' || !/^http:\/\//.test(job.url)) throw new TypeError(`job.url must be an http URL, got ${job?.url}`)
  for (const key of ['uploads', 'bytes', 'abortAfter', 'inFlight', 'settleMs']) {
    if (!Number.isSafeInteger(job[key]) || job[key] < 0) throw new TypeError(`job.${key} must be an integer >= 0, got ${job[key]}`)
  }
  if (job.abortAfter >= job.bytes && job.bytes > 0) throw new TypeError('job.abortAfter must be under job.bytes: it aborts mid-body')
}
