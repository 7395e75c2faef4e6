#!/usr/bin/env node
/**
 * A soak: /good and /bad uploads, /generate downloads, uploads aborted at random points and /metrics
 * clients that come and go, against a fresh lab, watching its RSS. The baseline is the median RSS of
 * the minute after the first (of the second sixth of a shorter run), once heaps and pools have grown;
 * drift is the median of the last such window against it (medians: one sample may catch a GC's
 * passing peak). Fails (exit 1) on any unexpected error or a drift of 10 % or more.
 */
import http from 'node:http'
import zlib from 'node:zlib'
import { parseArgs } from 'node:util'
import { startLabProcess } from '../lib/measure/lab-process.js'
import { readProcMemory } from '../lib/metrics/proc-memory.js'
import { prng, randomRecords, serialise } from '../lib/measure/mutate.js'
import { formatMiB } from '../lib/util/units.js'
import { runScript } from './cli.js'

const USAGE = `Usage: npm run soak -- [--minutes N] [--concurrency N]
  --minutes N       how long the mixed load runs (default 10)
  --concurrency N   requests in flight (default 4)`
const GZIP = { 'content-type': 'application/gzip' }

function request (port, { method = 'GET', path, headers = {}, body = null, abortAfter = null }) {
  return new Promise(function exchange (resolve) {
    const sent = body ? { ...headers, 'content-length': body.length } : headers
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: sent, agent: false }, function onResponse (res) {
      res.on('data', function discard () {})
      res.on('end', function done () { resolve({ status: res.statusCode }) })
      res.on('error', function failed (err) { resolve({ status: 0, error: err.code }) })
    })
    req.on('error', function failed (err) { resolve({ status: 0, error: err.code ?? err.message }) })
    if (abortAfter !== null) {
      req.write(body.subarray(0, abortAfter), function written () {
        setTimeout(function hangUp () { req.destroy(); resolve({ status: 'aborted' }) }, 10)
      })
      return
    }
    req.end(body)
  })
}

function metricsClient (port, ms) {
  return new Promise(function watch (resolve) {
    const req = http.get({ host: '127.0.0.1', port, path: '/metrics?interval=100', agent: false }, function onStream (res) {
      let events = 0
      res.on('data', function count (chunk) { events += chunk.toString().split('\n\n').length - 1 })
      setTimeout(function leave () { req.destroy(); resolve({ status: res.statusCode, events }) }, ms)
    })
    req.on('error', function ignore () { resolve({ status: 0 }) })
  })
}

function readOptions (argv) {
  const minutesAndClients = { minutes: { type: 'string', default: '10' }, concurrency: { type: 'string', default: '4' } }
  const { values } = parseArgs({ args: argv, options: { ...minutesAndClients, help: { type: 'boolean', short: 'h' } } })
  if (values.help) return null
  const minutes = Number(values.minutes)
  const concurrency = Number(values.concurrency)
  if (!(minutes > 0) || !Number.isInteger(concurrency) || concurrency < 1) {
    throw new TypeError('--minutes takes a positive number, --concurrency a positive integer')
  }
  return { minutes, concurrency }
}

async function main ({ minutes, concurrency }) {
  const rand = prng(42)
  const bodies = Array.from({ length: 8 }, function makeBody () {
    const records = []
    for (let k = 0; k < 300; k++) records.push(...randomRecords(rand))
    return zlib.gzipSync(serialise(rand, records, ['json', 'array', 'ndjson'][Math.floor(rand() * 3)]))
  })
  const lab = await startLabProcess([])
  const port = Number(new URL(lab.url).port)
  const until = Date.now() + minutes * 60_000
  const window = Math.min(60_000, minutes * 10_000)
  const baselineFrom = Date.now() + window
  const counts = { requests: 0, aborted: 0, unexpected: 0, metricsClients: 0 }
  const unexpected = {}
  const samples = []

  const sampler = setInterval(function sampleRss () {
    const memory = readProcMemory(lab.pid)
    if (!memory) return
    samples.push({ time: Date.now(), rss: memory.rss })
    const traffic = `${counts.requests} requests, ${counts.aborted} aborted, ${counts.unexpected} unexpected`
    process.stderr.write(`${new Date().toISOString()} rss ${formatMiB(memory.rss)}, ${traffic}\n`)
  }, 5000)

  async function worker () {
    while (Date.now() < until) {
      const body = bodies[Math.floor(rand() * bodies.length)]
      const pick = rand()
      let res
      let expectAbort = false
      if (pick < 0.35) res = await request(port, { method: 'POST', path: '/good', headers: GZIP, body })
      else if (pick < 0.6) res = await request(port, { method: 'POST', path: '/bad', headers: GZIP, body })
      else if (pick < 0.8) res = await request(port, { path: `/generate?size=${100 + Math.floor(rand() * 2000)}` })
      else {
        expectAbort = true
        const path = rand() < 0.5 ? '/good' : '/bad'
        res = await request(port, { method: 'POST', path, headers: GZIP, body, abortAfter: Math.floor(rand() * body.length) })
      }
      counts.requests++
      if (res.status === 'aborted') counts.aborted++
      else if (res.status !== 200 && !expectAbort) {
        counts.unexpected++
        const key = String(res.error ?? res.status)
        unexpected[key] = (unexpected[key] ?? 0) + 1
      }
    }
  }
  async function watcher () {
    while (Date.now() < until) {
      const res = await metricsClient(port, 5000 + Math.floor(rand() * 20000))
      counts.metricsClients++
      if (res.status !== 200) {
        counts.unexpected++
        unexpected[`metrics ${res.status}`] = (unexpected[`metrics ${res.status}`] ?? 0) + 1
      }
    }
  }
  const started = Date.now()
  await Promise.all([
    ...Array.from({ length: concurrency }, worker),
    ...Array.from({ length: 3 }, watcher)
  ])
  clearInterval(sampler)
  await lab.stop()
  function medianRss (from, to) {
    const inWindow = samples.filter(function inWindow (s) { return s.time >= from && s.time < to })
    const values = inWindow.map(function rss (s) { return s.rss }).sort(function ascending (a, b) { return a - b })
    return values.length ? values[values.length >> 1] : null
  }
  const baseline = medianRss(baselineFrom, baselineFrom + window)
  const final = medianRss(until - window, Infinity)
  const drift = baseline && final ? (final - baseline) / baseline : null
  const max = Math.max(...samples.map(function rss (s) { return s.rss }))
  const took = ((Date.now() - started) / 60_000).toFixed(1)
  console.log(`soak: ${took} min, ${counts.requests} requests (${counts.aborted} aborted on purpose), ` +
    `${counts.metricsClients} /metrics clients`)
  const drifted = drift === null ? 'n/a' : (drift * 100).toFixed(1) + ' %'
  console.log(`RSS: median ${formatMiB(baseline)} after warm-up, median ${formatMiB(final)} at the end, ` +
    `max ${formatMiB(max)}, drift ${drifted}`)
  console.log(`unexpected errors: ${counts.unexpected}${counts.unexpected ? ' ' + JSON.stringify(unexpected) : ''}`)
  return counts.unexpected === 0 && drift !== null && drift < 0.1 ? 0 : 1
}

runScript('soak', { usage: USAGE, readOptions, run: main })
