// /good's throughput on one body, uploaded in turn with and without something the lab pays for (off, on,
// on, off ...) on one server, so a drift in the machine falls on both (docs/metrics.md).
import fs from 'node:fs'
import http from 'node:http'
import { postBody } from './post-body.js'
import { median } from './stats.js'

/** Upload the input to /good once: how long it took and the bytes it inflated. */
export async function uploadOnce (url, input) {
  const headers = { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': input.compressedBytes }
  const { status, text, ms } = await postBody(`${url}/good`, [fs.createReadStream(input.file)], headers)
  if (status !== 200) throw new Error(`POST /good answered ${status}: ${text.slice(0, 200)}`)
  return { ms, inflatedBytes: JSON.parse(text).summary.inflatedBytes }
}

/**
 * A /metrics stream that reads everything and counts what it got, until closed.
 * @param {string} url the stream's whole URL, query included
 */
export function openMetricsStream (url) {
  return new Promise(function connect (resolve, reject) {
    const counts = { bytes: 0, samples: 0 }
    const req = http.get(url, { headers: { accept: 'text/event-stream' } }, function onResponse (res) {
      if (res.statusCode !== 200) {
        res.resume()
        reject(new Error(`GET ${url} answered ${res.statusCode}`))
        return
      }
      res.setEncoding('utf8')
      res.on('data', function count (chunk) {
        counts.bytes += chunk.length
        counts.samples += chunk.split('event: sample\n').length - 1
      })
      res.on('error', function ignoreAfterClose () {})
      resolve({ counts, close: function closeStream () { req.destroy() } })
    })
    req.on('error', reject)
  })
}

/**
 * The uploads after one not counted (it warms the threads and the JIT), in turn off and on: `during(on)` sets
 * the lab up for an upload and resolves to what undoes it, or null.
 */
export async function uploadsInTurn (url, input, { uploads, during }) {
  await uploadOnce(url, input)
  const done = []
  for (let k = 0; k < uploads; k++) {
    const on = [1, 2].includes(k % 4)
    const undo = await during(on)
    try {
      done.push({ on, ...await uploadOnce(url, input) })
    } finally {
      undo?.()
    }
  }
  return done
}

/** Inflated bytes a second of one upload. */
export function rateOf (upload) {
  return upload.inflatedBytes / (upload.ms / 1000)
}

function ratesOf (uploads, on) {
  return uploads.filter(function same (u) { return u.on === on }).map(rateOf)
}

/**
 * Medians of the inflated bytes a second, off and on, over every server, and their ratio per server.
 * @param {Array<Array<{ on: boolean, ms: number, inflatedBytes: number }>>} servers each server's uploads
 */
export function throughputInTurn (servers) {
  const all = servers.flat()
  const off = median(ratesOf(all, false))
  const on = median(ratesOf(all, true))
  const ratios = servers.map(function perServer (uploads) { return median(ratesOf(uploads, true)) / median(ratesOf(uploads, false)) })
  return { off, on, ratio: on / off, ratios }
}
