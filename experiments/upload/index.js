/**
 * The upload-to-disk experiment: C uploads at once to this server's POST /upload-stream and /upload-buffer
 * from a load process, with peak RSS and latency per cell. Streamed cells first: experiments/README.md#upload.
 */
import path from 'node:path'
import { ensureBinaryInput } from '../../lib/measure/binary-input.js'
import { latencyStats } from '../../lib/measure/stats.js'
import { uploadFile } from '../../lib/experiments/upload-client.js'
import { WARM_UP_HEADER } from '../../lib/util/lab-events.js'
import { badParameter } from '../../lib/errors/index.js'
import { isUploadName, listUploads, normalizeWithinUploadLimit, removeUploads } from './server.js'
import { runLoad } from '../../lib/experiments/load.js'
import { choiceEntry, deepFreeze, integerEntry, sizeEntry, sweepEntry, sweepLevels } from '../../lib/experiments/params.js'
import { MiB, round } from '../../lib/util/units.js'
import { errorsByType, linesBy } from '../results.js'
import { loadInWindow } from '../window.js'

export const name = 'upload'
export const title = 'Buffered vs streamed upload to disk'
export const description = 'Sends C uploads of the same file at once to POST /upload-buffer (keeps every ' +
  'chunk, Buffer.concat, one writeFile at the end) and POST /upload-stream (pipeline from the request to a ' +
  'file), for C = 1, 10, 50, 100, 200, from a separate load process, and reports each cell\'s latency and the ' +
  'server\'s peak memory. Buffered memory grows with C; streamed memory stays flat. The files are deleted after each cell.'

const CONCURRENCY_STEPS = Object.freeze([1, 10, 50, 100, 200])

const ROUTES = Object.freeze(['both', 'buffer', 'stream'])
const MAX_CONCURRENCY = 200
const MAX_BYTES = 256 * 1024 * 1024
/** Buffered cells hold C bodies at once: past this the lab would be the experiment's casualty. */
const MAX_BUFFERED_TOTAL = 4 * 1024 * 1024 * 1024
const HEADERS = Object.freeze({ 'content-type': 'application/octet-stream' })
const WARM_BYTES = 1024
const SOURCE = 'An article on buffered vs streamed uploads to disk (plain node:http, a ~15 MB file, C parallel uploads): ' +
  'docs/sources.md#upload'

function atTwoHundred (label, value, unit, route, figure) {
  const what = figure === 'peakRssMB' ? 'server peak RSS' : 'average latency'
  return { label: `${label}, 200 uploads: ${what}`, value, unit, source: SOURCE, route, concurrency: 200, figure }
}

/** The article's figures at C=200, with where each is matched in `cells`. */
export const PUBLISHED = deepFreeze([
  atTwoHundred('Buffered', 2890, 'MB', 'buffer', 'peakRssMB'),
  atTwoHundred('Buffered', 13.1, 's', 'buffer', 'avgSeconds'),
  atTwoHundred('Streamed', 276, 'MB', 'stream', 'peakRssMB'),
  atTwoHundred('Streamed', 4.0, 's', 'stream', 'avgSeconds')
])

export const params = deepFreeze([
  choiceEntry('route', {
    values: ROUTES,
    valueLabels: { both: 'Both: streamed, then buffered', buffer: '/upload-buffer (buffered)', stream: '/upload-stream (streamed)' },
    label: 'Route',
    help: '/upload-buffer keeps the whole body in memory before writing it; /upload-stream writes each chunk as it arrives. ' +
      '"Both" runs the streamed cells first, then the buffered ones.'
  }),
  integerEntry('concurrency', {
    // the default's buffered uploads stay under the lab's smallest default memory budget (docs/limits.md); twice as many pass it
    default: 25,
    max: MAX_CONCURRENCY,
    label: 'Concurrent uploads (highest)',
    help: 'Uploads sent at once in the last cell. With the sweep on, the article\'s steps below it (1, 10, 50, 100) run first.'
  }),
  sweepEntry({
    steps: 'Sweep: 1, 10, 50, 100, 200 up to the highest',
    single: 'Only the highest',
    label: 'Concurrency sweep',
    help: 'The article drew peak memory and latency against concurrency: sweep to draw the same lines.'
  }),
  sizeEntry('bytes', {
    default: '15MB',
    max: MAX_BYTES,
    label: 'Upload size',
    help: 'Size of the uploaded file (random bytes, made once in the data directory). The article used about 15 MB.'
  })
])

/** @throws {LabError} 400 parameter.invalid naming the field (`upload.limit` caps `bytes`) */
export function normalizeParams (raw, options) {
  const p = normalizeWithinUploadLimit(params, raw, options)
  if (p.route !== 'stream' && p.bytes * p.concurrency > MAX_BUFFERED_TOTAL) {
    const most = Math.floor(MAX_BUFFERED_TOTAL / p.concurrency)
    throw badParameter('params.bytes', p.bytes,
      `at most ${most} bytes at concurrency ${p.concurrency}: buffered, the server holds all uploads at once (${MAX_BUFFERED_TOTAL} bytes)`)
  }
  return Object.freeze(p)
}

/** The input file, a warm-up upload per route, then per cell a window and the load in its own process; each cell's files are deleted. */
export async function run (ctx) {
  const { params: p, signal, baseUrl, options } = ctx
  const routes = p.route === 'both' ? ['stream', 'buffer'] : [p.route]
  const levels = sweepLevels(p.sweep, CONCURRENCY_STEPS, p.concurrency)
  const perRoute = levels.reduce(function add (sum, c) { return sum + c }, 0)
  const total = routes.length * perRoute
  const dir = path.join(options.dataDir, 'bench')
  ctx.progress({ done: 0, total, stage: 'input' })
  const input = await ensureBinaryInput({ bytes: p.bytes, dir, signal })
  const warm = await ensureBinaryInput({ bytes: WARM_BYTES, dir, signal })
  for (const route of routes) {
    // the first upload of each route pays for code that is not the experiment's
    const answer = await uploadFile(`${baseUrl}/upload-${route}`, warm.file, { ...HEADERS, [WARM_UP_HEADER]: '1' })
    if (answer.status !== 200) throw new Error(`warm-up upload to /upload-${route} answered ${answer.status}`)
    await removeUploads(options.dataDir, [answer.body.file])
  }
  const cells = []
  let done = 0
  for (const route of routes) {
    for (const concurrency of levels) {
      signal.throwIfAborted()
      const before = new Set(await listUploads(options.dataDir))
      const job = { url: `${baseUrl}/upload-${route}`, file: input.file, concurrency, requests: concurrency, headers: HEADERS }
      function uploadAll (hooks) { return runLoad({ ...job, fields: ['file', 'bytes'] }, hooks) }
      function relay (progress) { ctx.progress({ done: done + progress.done, total, route, concurrency, stage: 'load' }) }
      let load, server
      try {
        ({ load, server } = await loadInWindow(ctx, concurrency, uploadAll, relay))
      } catch (err) {
        // the load process died with the names of finished uploads: remove what this cell made
        await removeNewUploads(options.dataDir, before)
        throw err
      }
      await removeUploads(options.dataDir, uploadedNames(load.results))
      done += concurrency
      cells.push(summariseUploadCell({ route, concurrency, bytes: p.bytes, results: load.results, wallMs: load.wallMs, server }))
    }
  }
  return {
    input: { file: path.basename(input.file), bytes: p.bytes },
    cells,
    charts: uploadCharts(cells),
    published: publishedBeside(cells)
  }
}

/** The names of the files that the answered uploads made. */
export function uploadedNames (results) {
  return results.filter(function made (r) { return r.status === 200 && typeof r.file === 'string' })
    .map(function fileName (r) { return r.file })
}

async function removeNewUploads (dataDir, before) {
  const now = await listUploads(dataDir)
  // finished uploads only: a part belongs to an upload still in flight, which removes its own when it fails
  await removeUploads(dataDir, now.filter(function isNewUpload (n) { return !before.has(n) && isUploadName(n) }))
}

/** One cell's figures; `server` holds the window's memory figures in bytes. */
export function summariseUploadCell ({ route, concurrency, bytes, results, wallMs, server }) {
  const ok = results.filter(function succeeded (r) { return r.status === 200 })
  const errors = errorsByType(results)
  const written = ok.reduce(function add (sum, r) { return sum + (r.bytes ?? 0) }, 0)
  const latency = latencyStats(results.map(function ms (r) { return r.ms }))
  return {
    route,
    concurrency,
    requests: results.length,
    ok: ok.length,
    errors,
    bytes,
    allBytesWritten: ok.every(function whole (r) { return r.bytes === bytes }),
    latencyMs: { min: round(latency.min, 10), avg: round(latency.avg, 10), max: round(latency.max, 10) },
    wallMs: round(wallMs, 10),
    mbPerSecond: round(written / 1e6 / (wallMs / 1000), 100),
    server
  }
}

/** The article's two charts: server peak RSS and average latency against concurrency. */
export function uploadCharts (cells) {
  function series (y) {
    const routes = [['buffer', 'buffered (/upload-buffer)'], ['stream', 'streamed (/upload-stream)']]
    return linesBy(cells, 'route', routes, function concurrency (c) { return c.concurrency }, y)
  }
  return [
    {
      title: 'Server peak RSS vs concurrent uploads',
      x: 'concurrent uploads',
      y: 'MiB',
      series: series(function peakMiB (c) { return round(c.server.peakRss / MiB, 10) })
    },
    {
      title: 'Average upload latency vs concurrent uploads',
      x: 'concurrent uploads',
      y: 's',
      series: series(function avgSeconds (c) { return round(c.latencyMs.avg / 1000, 1000) })
    }
  ]
}

/** The published figures, each with the measured one beside it (null when that cell was not run). */
export function publishedBeside (cells) {
  return PUBLISHED.map(function withMeasured (pub) {
    const cell = cells.find(function same (c) { return c.route === pub.route && c.concurrency === pub.concurrency })
    let measured = null
    if (cell && pub.figure === 'peakRssMB') measured = round(cell.server.peakRss / 1e6, 1)
    if (cell && pub.figure === 'avgSeconds') measured = round(cell.latencyMs.avg / 1000, 100)
    return { label: pub.label, value: pub.value, unit: pub.unit, source: pub.source, measured }
  })
}

