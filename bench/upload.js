/**
 * The load generator's side of an upload: a file streamed from disk as a
 * request body (never read whole into memory), and the JSON answer.
 */
import fs from 'node:fs'
import http from 'node:http'
import { pipeline } from 'node:stream/promises'
import { performance } from 'node:perf_hooks'

/**
 * POST a file.
 * @param {string} url
 * @param {string} file
 * @param {object} [headers]
 * @returns {Promise<{ status: number, body: any, ms: number, error?: string }>}
 */
export function uploadFile (url, file, headers = { 'content-type': 'application/gzip' }) {
  const started = performance.now()
  const size = fs.statSync(file).size
  return new Promise(function sendFile (resolve) {
    const req = http.request(url, {
      method: 'POST',
      agent: false,
      headers: { ...headers, 'content-length': size }
    }, function onResponse (res) {
      const parts = []
      res.on('data', function keep (chunk) { parts.push(chunk) })
      res.on('end', function done () {
        const text = Buffer.concat(parts).toString('utf8')
        let body
        try {
          body = JSON.parse(text)
        } catch {
          body = text
        }
        resolve({ status: res.statusCode, body, ms: performance.now() - started })
      })
      res.on('error', function failed (err) {
        resolve({ status: 0, body: null, ms: performance.now() - started, error: err.code ?? err.message })
      })
    })
    req.on('error', function failed (err) {
      resolve({ status: 0, body: null, ms: performance.now() - started, error: err.code ?? err.message })
    })
    pipeline(fs.createReadStream(file), req).catch(function ignore () {
      // the request's own error listener reports it
    })
  })
}

/**
 * Send `requests` uploads with at most `concurrency` in flight.
 * @param {string} url
 * @param {string} file
 * @param {{ concurrency: number, requests: number, headers?: object,
 *   onResult?: (result: object, done: number) => void }} options
 *   `onResult` is called as each upload ends, with the count ended so far
 * @returns {Promise<Array<{ status: number, body: any, ms: number, error?: string }>>}
 */
export async function uploadMany (url, file, { concurrency, requests, headers, onResult }) {
  const results = []
  let next = 0
  async function worker () {
    while (next < requests) {
      next++
      const result = await uploadFile(url, file, headers)
      results.push(result)
      if (onResult) onResult(result, results.length)
    }
  }
  const workers = []
  for (let k = 0; k < Math.min(concurrency, requests); k++) workers.push(worker())
  await Promise.all(workers)
  return results
}
