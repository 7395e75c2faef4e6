/** Downloads made in the page from what it holds (CSV, JSON, PNG): nothing goes back to the server. */
import { fileStamp } from './format.js'
import { MiB } from '../lib/util/units.js'
import { INGEST_STAGES } from '../lib/ingest/stage-names.js'

/** The CSV columns, in bytes (what the server sent) and ms. */
const MEMORY_KEYS = Object.freeze(['rss', 'heapTotal', 'heapUsed', 'external', 'arrayBuffers', 'peakRss'])
const LOOP_KEYS = Object.freeze(['loopP99', 'loopMax'])
const HEAP_PREFIX = 'heap_' // the store's heap-space series: `heap_<V8 space name>`, as many as the server named

/** The kept samples as CSV: a row per sample, bytes; a column per heap space, then `held_<route>_<stage>` sums. */
export function samplesToCsv (store) {
  const heapKeys = store.keys.filter(isHeapKey)
  const heldColumns = heldColumnsOf(store)
  const heldNames = heldColumns.map(function name (c) { return c.name })
  const lines = [['time', 'isoTime', ...MEMORY_KEYS, 'eventLoopP99Ms', 'eventLoopMaxMs', ...heapKeys, ...heldNames].join(',')]
  for (const row of store.rows()) {
    const cells = [row.time, new Date(row.time).toISOString()]
    // the store holds MiB; MiB is a power of two, so this gives back the exact bytes
    for (const key of MEMORY_KEYS) cells.push(toBytes(row.values.get(key)) ?? '')
    for (const key of LOOP_KEYS) cells.push(row.values.get(key) ?? '')
    for (const key of heapKeys) cells.push(toBytes(row.values.get(key)) ?? '')
    const sums = heldSums(row.note)
    for (const c of heldColumns) cells.push(sums.get(c.name) ?? 0)
    lines.push(cells.join(','))
  }
  return lines.join('\n') + '\n'
}

function isHeapKey (key) { return key.startsWith(HEAP_PREFIX) }

function toBytes (mib) { return mib === null || mib === undefined ? null : Math.round(mib * MiB) }

/** A CSV column name part: what a route or stage is called, with nothing that would break a header. */
function columnPart (name) { return String(name).replace(/[^A-Za-z0-9-]/g, '_') }

/** `held_<route>_<stage>` per route and stage that held bytes in a kept sample, by route then stage order. */
function heldColumnsOf (store) {
  const byRoute = new Map()
  for (const note of store.notes()) {
    for (const r of note ?? []) {
      if (!byRoute.has(r.route)) byRoute.set(r.route, new Set())
      for (const stage of Object.keys(r.held)) byRoute.get(r.route).add(stage)
    }
  }
  const columns = []
  for (const [route, stages] of byRoute) {
    const ordered = [...stages].sort(function byStageOrder (a, b) { return stageRank(a) - stageRank(b) })
    for (const stage of ordered) columns.push({ name: `held_${columnPart(route)}_${columnPart(stage)}` })
  }
  return columns
}

function stageRank (stage) {
  const i = INGEST_STAGES.indexOf(stage)
  return i === -1 ? INGEST_STAGES.length : i
}

/** A sample's held bytes summed by route and stage, keyed by column name. */
function heldSums (note) {
  const sums = new Map()
  for (const r of note ?? []) {
    for (const [stage, bytes] of Object.entries(r.held)) {
      const name = `held_${columnPart(r.route)}_${columnPart(stage)}`
      sums.set(name, (sums.get(name) ?? 0) + bytes)
    }
  }
  return sums
}

/** The kept samples and marks as JSON. `meta`: what the page knows about the session (interval, window) */
export function samplesToJson (store, marks, meta) {
  const samples = []
  const heapKeys = store.keys.filter(isHeapKey)
  for (const row of store.rows()) {
    const sample = { time: row.time }
    for (const key of MEMORY_KEYS) sample[key] = toBytes(row.values.get(key))
    sample.eventLoop = { p99: row.values.get('loopP99'), max: row.values.get('loopMax') }
    const spaces = {}
    for (const key of heapKeys) {
      const bytes = toBytes(row.values.get(key))
      if (bytes !== null) spaces[key.slice(HEAP_PREFIX.length)] = bytes
    }
    sample.heapSpaces = spaces
    sample.requests = row.note ?? []
    samples.push(sample)
  }
  return JSON.stringify({
    exportedAt: new Date().toISOString(),
    ...meta,
    units: { memory: 'bytes', eventLoop: 'ms' },
    samples,
    requests: marks.requests,
    peakResets: marks.peakResets,
    crashes: marks.crashes
  }, null, 1)
}

export function downloadText (name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }))
  clickDownload(name, url)
  // the download has taken the bytes by then; the URL would otherwise pin them for the page's life
  setTimeout(function revokeDownloadUrl () { URL.revokeObjectURL(url) }, 10_000)
}

/** Save charts as one PNG, laid out in rows as given (each chart at its size on the page). `rows`: Chart.js charts, row by row. */
export function downloadChartsPng (rows, name) {
  const gap = 8
  let width = 0
  let height = 0
  for (const row of rows) {
    width = Math.max(width, row.reduce(function rowWidth (w, chart) { return w + chart.canvas.width }, 0) + gap * (row.length - 1))
    height += Math.max(...row.map(function chartHeight (chart) { return chart.canvas.height })) + gap
  }
  const canvas = document.createElement('canvas')
  canvas.width = width
  canvas.height = height - gap
  const ctx = canvas.getContext('2d')
  // each chart paints its own white; the gaps between them need it too
  ctx.fillStyle = '#ffffff'
  ctx.fillRect(0, 0, canvas.width, canvas.height)
  let y = 0
  for (const row of rows) {
    let x = 0
    for (const chart of row) {
      ctx.drawImage(chart.canvas, x, y)
      x += chart.canvas.width + gap
    }
    y += Math.max(...row.map(function chartHeight (chart) { return chart.canvas.height })) + gap
  }
  clickDownload(name, canvas.toDataURL('image/png'))
}

/** A file name: streamlab-samples-2026-11-22T10-15-00.csv */
export function exportName (what, extension) { return `streamlab-${what}-${fileStamp()}.${extension}` }

function clickDownload (name, href) {
  const link = document.createElement('a')
  link.href = href
  link.download = name
  link.hidden = true
  document.body.append(link)
  link.click()
  link.remove()
}
