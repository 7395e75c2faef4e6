/**
 * The load generator in a process of its own, so that its memory (sockets,
 * answers, file streams) is never counted as the server's. Started by
 * `lib/experiments/load.js` with `child_process.fork`; it speaks over IPC:
 *
 *   in:  { url, file, concurrency, requests, headers }
 *   out: { type: 'progress', done, total } (at most ~10/s, and once at the end)
 *        then { type: 'result', results: [{ status, ms, summary?, errorType? }], wallMs }
 *        or { type: 'error', message }
 *
 * and exits. It also exits the moment its parent goes away (the IPC channel
 * closes), so a crashed server never leaves it loading nobody.
 */
import { performance } from 'node:perf_hooks'
import { uploadMany } from './upload.js'

const PROGRESS_INTERVAL_MS = 100

if (typeof process.send !== 'function') {
  process.stderr.write('bench/load-process.js is started by the experiment engine (child_process.fork), not by hand\n')
  process.exitCode = 2
} else {
  process.on('message', onJob)
  // also fired by our own disconnect in finish(): exit() keeps the exitCode set there
  process.once('disconnect', function parentGone () {
    process.exit()
  })
}

let started = false

function onJob (job) {
  // one job per process: a second message is a parent's bug, not more work
  if (started) return
  started = true
  process.off('message', onJob)
  runJob(job).then(function sendResult (message) {
    finish(message, 0)
  }, function sendError (err) {
    finish({ type: 'error', message: err.message }, 1)
  })
}

async function runJob (job) {
  checkJob(job)
  const { url, file, concurrency, requests, headers } = job
  let lastProgress = 0
  function reportProgress (result, done) {
    const now = performance.now()
    if (done < requests && now - lastProgress < PROGRESS_INTERVAL_MS) return
    lastProgress = now
    process.send({ type: 'progress', done, total: requests })
  }
  const begun = performance.now()
  const results = await uploadMany(url, file, { concurrency, requests, headers, onResult: reportProgress })
  const wallMs = performance.now() - begun
  return { type: 'result', results: results.map(slim), wallMs }
}

/** Only what the report needs crosses into the server's process: answers can be many. */
function slim (result) {
  if (result.status === 200) return { status: 200, ms: result.ms, summary: result.body?.summary ?? null }
  return {
    status: result.status,
    ms: result.ms,
    errorType: result.body?.error?.type ?? result.error ?? `status ${result.status}`
  }
}

function checkJob (job) {
  if (job === null || typeof job !== 'object') throw new TypeError('job must be an object')
  if (typeof job.url !== 'string' || !/^https?:\/\//.test(job.url)) throw new TypeError(`job.url must be an http URL, got ${job.url}`)
  if (typeof job.file !== 'string' || job.file === '') throw new TypeError('job.file must be a path')
  for (const name of ['concurrency', 'requests']) {
    if (!Number.isSafeInteger(job[name]) || job[name] < 1) throw new TypeError(`job.${name} must be a positive integer, got ${job[name]}`)
  }
  if (job.headers !== undefined && (job.headers === null || typeof job.headers !== 'object')) {
    throw new TypeError('job.headers must be an object')
  }
}

function finish (message, code) {
  process.exitCode = code
  // disconnect only once the message is out, or the parent never sees it
  process.send(message, function sent () {
    process.disconnect()
  })
}
