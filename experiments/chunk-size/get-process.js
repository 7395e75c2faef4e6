/** The download load in its own process (never the server's): a child job, in { url, concurrency, requests, expectBytes? }. */
import { performance } from 'node:perf_hooks'
import { serveChildJob } from '../../lib/experiments/child-job.js'
import { getMany } from './get-many.js'

const PROGRESS_INTERVAL_MS = 100

serveChildJob('experiments/chunk-size/get-process.js', async function runJob (job, progress) {
  if (job === null || typeof job !== 'object') throw new TypeError('job must be an object')
  if (typeof job.url !== 'string' || !/^http:\/\//.test(job.url)) throw new TypeError(`job.url must be an http URL, got ${job.url}`)
  for (const name of ['concurrency', 'requests']) {
    if (!Number.isSafeInteger(job[name]) || job[name] < 1) throw new TypeError(`job.${name} must be a positive integer, got ${job[name]}`)
  }
  let lastProgress = 0
  return getMany(job.url, {
    concurrency: job.concurrency,
    requests: job.requests,
    expectBytes: job.expectBytes,
    onResult: function reportProgress (result, done) {
      const now = performance.now()
      if (done < job.requests && now - lastProgress < PROGRESS_INTERVAL_MS) return
      lastProgress = now
      progress(done, job.requests)
    }
  })
})
