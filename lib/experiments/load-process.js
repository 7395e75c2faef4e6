// The upload load generator in a process of its own (its memory is never the server's), forked by load.js;
// it speaks child-job.js's protocol. Its messages: README.md.
import { performance } from 'node:perf_hooks'
import { serveChildJob } from './child-job.js'
import { createBomb } from '../generate/bombs.js'
import { uploadMany, uploadStreams } from './upload-client.js'

const PROGRESS_INTERVAL_MS = 100

serveChildJob('lib/experiments/load-process.js', async function runJob (job, progress) {
  if (job?.bomb !== undefined) return sendBombs(job, progress)
  checkJob(job)
  const { url, file, concurrency, requests, headers } = job
  const fields = job.fields ?? ['summary']
  let lastProgress = 0
  function reportProgress (result, done) {
    const now = performance.now()
    if (done < requests && now - lastProgress < PROGRESS_INTERVAL_MS) return
    lastProgress = now
    progress(done, requests)
  }
  const begun = performance.now()
  const results = await uploadMany(url, file, { concurrency, requests, headers, onResult: reportProgress })
  const wallMs = performance.now() - begun
  return {
    results: results.map(function slim (result) { return slimResult(result, fields) }),
    wallMs
  }
})

/** Bombs one after the other: each is what the server's memory meets alone. */
async function sendBombs (job, progress) {
  if (typeof job.url !== 'string' || !/^https?:\/\//.test(job.url)) throw new TypeError(`job.url must be an http URL, got ${job.url}`)
  const requests = job.requests ?? 1
  if (!Number.isSafeInteger(requests) || requests < 1) throw new TypeError(`job.requests must be a positive integer, got ${requests}`)
  const results = []
  const begun = performance.now()
  for (let k = 0; k < requests; k++) {
    const bomb = createBomb(job.bomb, job.bombCacheDir === undefined ? undefined : { cacheDir: job.bombCacheDir })
    const result = await uploadStreams(job.url, bomb.streams, bomb.uploadHeaders)
    results.push({ ...slimResult(result, job.fields ?? ['summary']), sentBytes: result.sentBytes })
    progress(k + 1, requests)
  }
  return { results, wallMs: performance.now() - begun }
}

/** Only what the report needs crosses into the server's process: answers can be many. */
function slimResult (result, fields) {
  if (result.status === 200) {
    const kept = { status: 200, ms: result.ms }
    for (const field of fields) kept[field] = result.body?.[field] ?? null
    return kept
  }
  const error = result.body?.error
  const slim = {
    status: result.status,
    ms: result.ms,
    errorType: error?.type ?? result.error ?? `status ${result.status}`
  }
  // the figures of a refusal: how far the server let the body get
  for (const figure of ['limit', 'received', 'inflatedBytes', 'compressedBytes', 'offset']) {
    if (Number.isFinite(error?.[figure])) slim[figure] = error[figure]
  }
  return slim
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
  if (job.fields !== undefined && (!Array.isArray(job.fields) || !job.fields.every(function isName (f) { return typeof f === 'string' }))) {
    throw new TypeError('job.fields must be an array of answer member names')
  }
}
