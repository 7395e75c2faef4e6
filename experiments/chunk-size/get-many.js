/** The load generator's side of a download: many GETs over keep-alive connections (as `ab -k` would), each answer counted, never kept. */
import http from 'node:http'
import { performance } from 'node:perf_hooks'
import { latencyStats } from '../../lib/measure/stats.js'

/** GET `url` `requests` times, `concurrency` in flight; an answer that is not a 200 of `expectBytes` bytes is an error. */
export async function getMany (url, { concurrency, requests, expectBytes, onResult }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency })
  const latencies = []
  const errors = {}
  let next = 0
  let done = 0
  let ok = 0
  let bytes = 0
  async function worker () {
    while (next < requests) {
      next++
      const result = await getOnce(url, agent)
      done++
      bytes += result.bytes
      latencies.push(result.ms)
      const error = result.error ?? (result.status !== 200
        ? `status ${result.status}`
        : (expectBytes !== undefined && result.bytes !== expectBytes ? 'body.length.wrong' : null))
      if (error === null) ok++
      else errors[error] = (errors[error] ?? 0) + 1
      if (onResult) onResult(result, done)
    }
  }
  const started = performance.now()
  try {
    const workers = []
    for (let k = 0; k < Math.min(concurrency, requests); k++) workers.push(worker())
    await Promise.all(workers)
  } finally {
    agent.destroy()
  }
  return { requests, ok, errors, bytes, wallMs: performance.now() - started, latencyMs: latencyStats(latencies) }
}

function getOnce (url, agent) {
  const started = performance.now()
  return new Promise(function fetchOnce (resolve) {
    let bytes = 0
    const req = http.get(url, { agent }, function onResponse (res) {
      res.on('data', function count (chunk) { bytes += chunk.length })
      res.on('end', function ended () {
        resolve({ status: res.statusCode, bytes, ms: performance.now() - started })
      })
      res.on('error', function failed (err) {
        resolve({ status: res.statusCode, bytes, ms: performance.now() - started, error: err.code ?? err.message })
      })
    })
    req.on('error', function failed (err) {
      resolve({ status: 0, bytes, ms: performance.now() - started, error: err.code ?? err.message })
    })
  })
}
