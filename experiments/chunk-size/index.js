/** The read-chunk-size experiment: this server's GET /files/chunk under keep-alive load from another process, per read size and mode. */
import path from 'node:path'
import { CHUNK_MODES, HWM_STEPS, ensureChunkFile } from './server.js'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { runChildJob } from '../../lib/experiments/load.js'
import { choiceEntry, deepFreeze, integerEntry, normalizeBySchema } from '../../lib/experiments/params.js'
import { KiB, MiB, round } from '../../lib/util/units.js'
import { linesBy, publishedWith } from '../results.js'
import { loadInWindow } from '../window.js'

export const name = 'chunk-size'
export const title = 'Read chunk size, Buffer vs string'
export const description = 'Serves one 1 MiB file from GET /files/chunk with fs.createReadStream at read sizes ' +
  '(highWaterMark) from 1 KiB to 1 MiB, as Buffers or decoded to strings, under concurrent keep-alive load from a ' +
  'separate process, and reports MiB/s and the server\'s peak memory for each setting.'

const GET_PROCESS = path.join(PROJECT_ROOT, 'experiments', 'chunk-size', 'get-process.js')
const SOURCE = 'A fork of a static file server serving a 1 MiB file under ab -c 100 -n 1000: docs/sources.md#chunk-size'
const RELATED = 'A related post on read sizes: docs/sources.md#chunk-size'

/** The published figures, with where each is matched in `cells`. */
export const PUBLISHED = deepFreeze([
  { label: '64 KiB reads into Buffers (the best setting)', value: 160, unit: 'MiB/s', source: SOURCE, figure: 'buffer64' },
  { label: '64 KiB reads as strings', value: 100, unit: 'MiB/s', source: SOURCE, figure: 'string64' },
  { label: 'Buffers vs strings', value: 1.6, unit: 'x', source: SOURCE, figure: 'bufferOverString' },
  { label: 'Best read size', value: 64, unit: 'KiB', source: SOURCE, figure: 'bestHwm' },
  { label: '4 KiB reads against whole-file reads (+: faster)', value: 44, unit: '%', source: RELATED, figure: 'smallOverWhole' }
])

const HWM_LABELS = Object.freeze({
  1024: '1 KiB', 4096: '4 KiB', 16384: '16 KiB', 65536: '64 KiB', 262144: '256 KiB', [MiB]: '1 MiB (whole file)'
})

export const params = deepFreeze([
  choiceEntry('hwm', {
    values: ['all', ...HWM_STEPS.map(String)],
    valueLabels: { all: 'All: 1 KiB to 1 MiB', ...HWM_LABELS },
    label: 'Read size (highWaterMark)',
    help: 'Bytes per read of the 1 MiB file. 1 MiB reads it whole in one go. "All" sweeps every size to draw MiB/s against read size.'
  }),
  choiceEntry('mode', {
    values: ['both', ...CHUNK_MODES],
    valueLabels: { both: 'Both: Buffer and string', buffer: 'Buffer chunks', string: 'Strings (encoding: utf8)' },
    label: 'Chunks as',
    help: 'Buffers go from the file to the socket as they are; strings are decoded from UTF-8 on read and encoded again on write.'
  }),
  integerEntry('concurrency', {
    default: 100,
    max: 500,
    label: 'Connections',
    help: 'Keep-alive connections downloading at once (the benchmark used ab -c 100).'
  }),
  integerEntry('requests', {
    default: 500,
    max: 100_000,
    label: 'Downloads per setting',
    help: 'How many times the 1 MiB file is downloaded for each read size and mode (the benchmark used 1000).'
  })
])

/** @throws {LabError} 400 parameter.invalid naming the field */
export function normalizeParams (raw) {
  return Object.freeze(normalizeBySchema(params, raw))
}

/** The file, a warm-up download per mode, then per setting a measurement window and the downloads in their own process. */
export async function run (ctx) {
  const { params: p, signal, baseUrl, options } = ctx
  const modes = p.mode === 'both' ? [...CHUNK_MODES] : [p.mode]
  const hwms = p.hwm === 'all' ? [...HWM_STEPS] : [Number(p.hwm)]
  const total = modes.length * hwms.length * p.requests
  ctx.progress({ done: 0, total, stage: 'input' })
  const file = await ensureChunkFile(options.dataDir)
  for (const mode of modes) await warmUp(baseUrl, mode, file.bytes)
  const cells = []
  let done = 0
  for (const hwm of hwms) {
    for (const mode of modes) {
      signal.throwIfAborted()
      const job = { url: chunkUrl(baseUrl, hwm, mode), concurrency: p.concurrency, requests: p.requests, expectBytes: file.bytes }
      function getAll (hooks) { return runChildJob(GET_PROCESS, job, hooks) }
      const cell = `${mode} · read size ${hwm}`
      function relay (progress) { ctx.progress({ done: done + progress.done, total, hwm, mode, stage: 'load', cell }) }
      const { load, server } = await loadInWindow(ctx, p.requests, getAll, relay)
      done += p.requests
      cells.push(summariseChunkCell({ hwm, mode, concurrency: p.concurrency, load, server }))
    }
  }
  return { file: { bytes: file.bytes }, cells, charts: chunkSizeCharts(cells), published: publishedBeside(cells) }
}

export function chunkUrl (baseUrl, hwm, mode) {
  return `${baseUrl}/files/chunk?hwm=${hwm}&mode=${mode}`
}

async function warmUp (baseUrl, mode, bytes) {
  const res = await fetch(chunkUrl(baseUrl, 65536, mode))
  const body = await res.arrayBuffer()
  if (res.status !== 200 || body.byteLength !== bytes) throw new Error(`warm-up GET /files/chunk: ${res.status}, ${body.byteLength} bytes`)
}

/** One setting's figures from get-many.js's load. */
export function summariseChunkCell ({ hwm, mode, concurrency, load, server }) {
  return {
    hwm,
    mode,
    concurrency,
    requests: load.requests,
    ok: load.ok,
    errors: load.errors,
    bytes: load.bytes,
    wallMs: round(load.wallMs, 10),
    mibPerSecond: round(load.bytes / MiB / (load.wallMs / 1000), 10),
    latencyMs: Object.fromEntries(['min', 'avg', 'p99', 'max'].map(function rounded (k) { return [k, round(load.latencyMs[k], 10)] })),
    server
  }
}

/** MiB/s against read size, one line per mode; and the server's peak above idle. */
export function chunkSizeCharts (cells) {
  function mibPerSecond (c) { return c.mibPerSecond }
  function series (y) {
    return linesBy(cells, 'mode', [['buffer', 'Buffer chunks'], ['string', 'strings (utf8)']], function kib (c) { return c.hwm / KiB }, y)
  }
  return [
    { title: 'Throughput vs read size (highWaterMark)', x: 'highWaterMark (KiB)', y: 'MiB/s', logX: true, series: series(mibPerSecond) },
    {
      title: 'Server peak RSS above idle vs read size',
      x: 'highWaterMark (KiB)',
      y: 'MiB',
      logX: true,
      series: series(function peak (c) { return c.server.peakAboveIdle === null ? null : round(c.server.peakAboveIdle / MiB, 10) })
    }
  ]
}

/** The published figures, each with the measured one beside it (null when the cells to compute it were not run). */
export function publishedBeside (cells) {
  function speed (mode, hwm) {
    return cells.find(function same (c) { return c.mode === mode && c.hwm === hwm })?.mibPerSecond ?? null
  }
  const buffers = cells.filter(function isBuffer (c) { return c.mode === 'buffer' })
  const best = buffers.length > 1
    ? buffers.reduce(function faster (a, b) { return b.mibPerSecond > a.mibPerSecond ? b : a })
    : null
  return publishedWith(PUBLISHED, {
    buffer64: speed('buffer', 64 * KiB),
    string64: speed('string', 64 * KiB),
    bufferOverString: ratio(speed('buffer', 64 * KiB), speed('string', 64 * KiB)),
    bestHwm: best ? best.hwm / KiB : null,
    smallOverWhole: percentFaster(speed('buffer', 4 * KiB), speed('buffer', 1024 * KiB))
  })
}

function ratio (a, b) {
  return a === null || b === null || b === 0 ? null : round(a / b, 100)
}

function percentFaster (a, b) {
  return a === null || b === null || b === 0 ? null : round((a / b - 1) * 100, 1)
}
