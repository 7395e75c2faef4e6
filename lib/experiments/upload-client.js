// The load generator's side of an upload: a file streamed from disk as a request body, and the JSON answer;
// within a run every upload carries the run's key (lib/limits/run-keys.js).
import fs from 'node:fs'
import http from 'node:http'
import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { performance } from 'node:perf_hooks'
import { runKeyHeaders } from '../limits/run-keys.js'

/** POST a file. */
export function uploadFile (url, file, headers = { 'content-type': 'application/gzip' }) {
  const started = performance.now()
  const size = fs.statSync(file).size
  return new Promise(function sendFile (resolve) {
    const req = http.request(url, {
      method: 'POST',
      agent: false,
      headers: { ...headers, ...runKeyHeaders(), 'content-length': size }
    }, function onResponse (res) {
      readAnswer(res, function answered (result) { resolve({ ...result, ms: performance.now() - started }) })
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
 * POST a body made as it is sent (`streams` as for `pipeline`), chunked and never whole in memory. A dead
 * connection (the server killed) resolves with status 0 and `error`.
 */
export function uploadStreams (url, streams, headers = { 'content-type': 'application/gzip' }) {
  const started = performance.now()
  let sentBytes = 0
  const counter = new Transform({
    transform: function countSent (chunk, encoding, callback) {
      sentBytes += chunk.length
      callback(null, chunk)
    }
  })
  return new Promise(function sendStreams (resolve) {
    let settled = false
    function settle (result) {
      if (settled) return
      settled = true
      resolve({ ...result, ms: performance.now() - started, sentBytes })
    }
    const req = http.request(url, { method: 'POST', agent: false, headers: { ...headers, ...runKeyHeaders() } }, function onResponse (res) {
      readAnswer(res, settle)
    })
    req.on('error', function failed (err) {
      settle({ status: 0, body: null, error: err.code ?? err.message })
    })
    pipeline(...streams, counter, req).catch(function ignore () {
      // an answer before the whole body was sent (a 413) ends the upload early: the answer is what counts
    })
  })
}

/** Send `requests` uploads, at most `concurrency` in flight; `onResult(result, done)` as each ends. */
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

/** The whole answer, its body parsed as JSON where it is JSON: `{ status, body }`, or status 0 and `error`. */
function readAnswer (res, done) {
  const parts = []
  res.on('data', function keep (chunk) { parts.push(chunk) })
  res.on('end', function ended () {
    const text = Buffer.concat(parts).toString('utf8')
    let body
    try {
      body = JSON.parse(text)
    } catch {
      body = text
    }
    done({ status: res.statusCode, body })
  })
  res.on('error', function failed (err) {
    done({ status: 0, body: null, error: err.code ?? err.message })
  })
}
