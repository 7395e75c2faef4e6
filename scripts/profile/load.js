#!/usr/bin/env node
/**
 * The load for `npm run profile`: one generated gzip body, again and again to one route, by
 * autocannon's API (its CLI reads a body file as UTF-8 text, corrupting gzip). A module for the
 * fallback profilers; a script for clinic's --on-port.
 */
import fs from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { DEFAULTS } from '../../lib/config/options.js'
import { isUploadName, uploadDir } from '../../experiments/upload/server.js'
import { formatDuration } from '../../lib/util/units.js'
import { isMain, runScript } from '../cli.js'

/** The routes a profile can load: the ingest pair, and the upload pair (bodies saved, then deleted). */
export const ROUTES = Object.freeze({
  bad: Object.freeze({ path: '/bad', upload: false, what: 'buffers the whole body: every chunk kept and joined, zlib.gunzip, JSON.parse' }),
  good: Object.freeze({ path: '/good', upload: false, what: 'streams it: gunzip, record scanner, JSON.parse in worker threads' }),
  'upload-buffer': Object.freeze({ path: '/upload-buffer', upload: true, what: 'collects the upload, Buffer.concat, one write to disk' }),
  'upload-stream': Object.freeze({ path: '/upload-stream', upload: true, what: 'pipes the upload to a file' })
})

/** Delete the file an upload route's answer names (`{ file }` in `<dataDir>/uploads/`): whether one was. */
export async function deleteUploadAnswered (text, dataDir = DEFAULTS.dataDir) {
  let file
  try {
    file = JSON.parse(text).file
  } catch {
    return false
  }
  // only a name the server could have chosen: an answer never picks what gets deleted
  if (!isUploadName(file)) return false
  try {
    await fs.promises.unlink(path.join(uploadDir(dataDir), file))
    return true
  } catch {
    return false
  }
}

/** Seconds autocannon waits for one answer: a 10 MB /bad under 10 connections on 2 cores takes seconds. */
const REQUEST_TIMEOUT_S = 120

/**
 * Send `body` to the route until `duration` seconds pass or `amount` (> 0 wins) answers arrived; an
 * upload route's files are deleted as their answers arrive; `onMidway` is called once, half-way.
 */
export async function runLoad (options) {
  const { url, route, body, connections = 10, duration = 20, amount = 0, dataDir = DEFAULTS.dataDir, onProgress, onMidway } = options
  const spec = ROUTES[route]
  if (!spec) throw new TypeError(`unknown route "${route}": try ${Object.keys(ROUTES).join(', ')}`)
  if (!Buffer.isBuffer(body)) throw new TypeError('body must be a Buffer')
  const request = { method: 'POST', path: spec.path }
  if (spec.upload) {
    // each answer names the file it saved: delete it at once, or a 20 s load fills the disk
    request.onResponse = function deleteUpload (status, text) {
      deleteUploadAnswered(text, dataDir)
    }
  }
  const instance = autocannon({
    url: new URL(spec.path, url).href,
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream' },
    body,
    requests: [request],
    connections,
    // autocannon refuses amount: 0, and an amount makes it ignore the duration
    ...(amount > 0 ? { amount } : { duration }),
    timeout: REQUEST_TIMEOUT_S
  })
  const started = Date.now()
  let answered = 0
  let non2xx = 0
  let midwayCalled = false
  function midway () {
    if (midwayCalled || !onMidway) return
    midwayCalled = true
    onMidway()
  }
  instance.on('response', function countResponse (client, statusCode) {
    answered++
    if (statusCode < 200 || statusCode > 299) non2xx++
    if (amount > 0 && answered >= amount / 2) midway()
  })
  const midwayTimer = amount > 0 ? null : setTimeout(midway, duration * 500)
  const ticker = setInterval(function progress () {
    onProgress?.({ answered, non2xx, elapsedS: (Date.now() - started) / 1000 })
  }, 2000)
  try {
    const result = await instance
    const statusCodes = {}
    for (const [code, { count }] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = count
    return {
      requests: result.requests.total,
      ok: result['2xx'],
      non2xx: result.non2xx,
      statusCodes,
      errors: result.errors,
      timeouts: result.timeouts,
      latencyMs: { average: result.latency.average, p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
      requestsPerSecond: result.requests.average,
      durationS: result.duration,
      bodyBytes: body.length
    }
  } finally {
    clearTimeout(midwayTimer)
    clearInterval(ticker)
  }
}

/** One line that says how the load went, with a warning when answers were not 2xx or failed. */
export function describeLoad (load) {
  const codes = Object.entries(load.statusCodes).map(function shown ([code, count]) { return `${count} x ${code}` }).join(', ')
  const trouble = load.non2xx > 0 || load.errors > 0
    ? ` WARNING: ${load.non2xx} non-2xx answers, ${load.errors} errors (${load.timeouts} timeouts): not a healthy load`
    : ''
  const { average, p99 } = load.latencyMs
  const took = formatDuration(load.durationS * 1000)
  return `load: ${load.ok} answers 2xx of ${load.requests} requests (${codes || 'no answers'}) in ${took}, ` +
    `${load.requestsPerSecond.toFixed(1)} req/s, latency avg ${Math.round(average)} ms, p99 ${Math.round(p99)} ms${trouble}`
}

const USAGE = `Usage: node scripts/profile/load.js --port <n> --route <${Object.keys(ROUTES).join('|')}> --body <file.gz> [options]

The load \`npm run profile\` hands clinic (--on-port). Options:
  --host <h>          default 127.0.0.1
  --connections <n>   default 10
  --duration <s>      default 20
  --amount <n>        a number of requests instead of a duration
  --result <file>     write the outcome as JSON there
  --data-dir <dir>    the server's data directory: upload routes' files are deleted from its uploads/`

/** A progress line every few seconds: the time, the answers, those not 2xx. */
export function progressLogger (log) {
  return function onProgress (p) {
    log(`  ${formatDuration(p.elapsedS * 1000)}: ${p.answered} answers${p.non2xx ? `, ${p.non2xx} non-2xx` : ''}`)
  }
}

function readOptions (argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string' },
      route: { type: 'string' },
      body: { type: 'string' },
      connections: { type: 'string', default: '10' },
      duration: { type: 'string', default: '20' },
      amount: { type: 'string', default: '0' },
      result: { type: 'string' },
      'data-dir': { type: 'string', default: DEFAULTS.dataDir },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help) return null
  const port = Number(values.port)
  if (!(Number.isInteger(port) && port > 0 && ROUTES[values.route] && values.body)) throw new TypeError('--port, --route and --body needed')
  return { ...values, port }
}

async function main (values) {
  const body = await fs.promises.readFile(values.body)
  const load = await runLoad({
    url: `http://${values.host}:${values.port}`,
    route: values.route,
    body,
    connections: Number(values.connections),
    duration: Number(values.duration),
    amount: Number(values.amount),
    dataDir: values['data-dir'],
    onProgress: progressLogger(function print (line) { process.stderr.write(`${line}\n`) })
  })
  process.stderr.write(describeLoad(load) + '\n')
  if (values.result) await fs.promises.writeFile(values.result, JSON.stringify(load, null, 2) + '\n')
  return 0
}

if (isMain(import.meta.url)) runScript('profile-load', { usage: USAGE, readOptions, run: main })
