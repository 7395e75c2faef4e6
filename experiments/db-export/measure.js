/**
 * The db-export measurements, shared by the experiment (against the running lab) and the bench (a fresh server each).
 * A cell is one export, batch (rows / batch requests in turn) or stream (one request, a cursor read highWaterMark
 * rows at a time), timed by a client process that fetches and parses like a page, the server's and database's peaks around it.
 */
import path from 'node:path'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { runChildJob } from '../../lib/experiments/load.js'
import { runKeyHeaders } from '../../lib/limits/run-keys.js'
import { readProcMemory, resetProcPeak } from '../../lib/metrics/proc-memory.js'
import { median } from '../../lib/measure/stats.js'
import { startListeningProcess } from '../../lib/measure/lab-process.js'
import { MiB, round } from '../../lib/util/units.js'
import { markdownTable, mib, fixed } from '../../lib/measure/table.js'

const CLIENT = path.join(PROJECT_ROOT, 'experiments', 'db-export', 'client.js')
const LAB_SERVER = path.join(PROJECT_ROOT, 'experiments', 'db-export', 'lab-server.js')

const SOURCE = 'An article: Fastify, pg-query-stream and a React page, timed in the browser: docs/sources.md#db-export'

/** What the article found: shown beside the lab's own figures (`measured`: null where not run). */
const PUBLISHED = Object.freeze([
  Object.freeze({ key: 'crossover', label: 'Fewest batches from which the stream was faster', value: 10, unit: 'batches', source: SOURCE }),
  Object.freeze({ key: 'hwmRatio', label: 'Stream time with the larger highWaterMark, over the smaller\'s', value: 0.5, unit: 'x',
    source: SOURCE }),
  Object.freeze({ key: 'hwmHigh', label: 'Larger highWaterMark', value: 5_000_000, unit: 'rows', source: SOURCE }),
  Object.freeze({ key: 'rows', label: 'Items exported (each joined to its desk)', value: 10_000_000, unit: 'rows', source: SOURCE }),
  Object.freeze({ key: 'desks', label: 'Desks', value: 200_000, unit: 'desks', source: SOURCE })
])

/** Batch cells by requests, stream cells by highWaterMark. */
function byMode (cells) {
  return {
    batches: cells.filter(function isBatch (c) { return c.mode === 'batch' })
      .sort(function byRequests (a, b) { return a.requests - b.requests }),
    streams: cells.filter(function isStream (c) { return c.mode === 'stream' })
      .sort(function byHwm (a, b) { return a.highWaterMark - b.highWaterMark })
  }
}

/** The published figures with the measured ones beside them (`seed`: what the database holds). */
export function publishedBeside (cells, seed = null) {
  const { batches, streams } = byMode(cells)
  const fastestStream = streams.length ? Math.min(...streams.map(function ms (c) { return c.totalMs })) : null
  let crossover = null
  if (fastestStream !== null) {
    // the fewest batches from which on every batch export was slower than the stream
    for (let k = batches.length - 1; k >= 0 && batches[k].totalMs > fastestStream; k--) crossover = batches[k].requests
  }
  const measured = {
    crossover,
    hwmRatio: streams.length >= 2 ? Math.round(streams[streams.length - 1].totalMs / streams[0].totalMs * 100) / 100 : null,
    hwmHigh: streams.length >= 2 ? streams[streams.length - 1].highWaterMark : null,
    rows: cells[0]?.rows ?? null,
    desks: seed?.desks ?? null
  }
  return PUBLISHED.map(function beside (p) {
    const { key, ...figure } = p
    return { ...figure, measured: measured[key] }
  })
}

/** The cells of a sweep: every batch size, then every highWaterMark. */
export function planCells ({ modes, rows, batchSizes, highWaterMarks, sleep }) {
  const cells = []
  if (modes.includes('batch')) {
    for (const batch of batchSizes) cells.push({ mode: 'batch', rows, batch, sleep })
  }
  if (modes.includes('stream')) {
    for (const highWaterMark of highWaterMarks) cells.push({ mode: 'stream', rows, highWaterMark, sleep })
  }
  return cells
}

export function requestsOf (cell) {
  return cell.mode === 'batch' ? Math.max(1, Math.ceil(cell.rows / cell.batch)) : 1
}

/** A window on another process (idle RSS now, its kernel peak reset); the function returned reads the peak, as `ctx.measure()`. */
export function procWindow (pid) {
  const idle = readProcMemory(pid)
  const peakReset = idle !== null && resetProcPeak(pid)
  return function closeProcWindow () {
    const now = readProcMemory(pid)
    return {
      idleRss: idle?.rss ?? null,
      peakRss: now?.peak ?? null,
      peakAboveIdle: peakReset && now ? Math.max(0, now.peak - idle.rss) : null,
      peakSource: now ? 'VmHWM' : null,
      peakReset
    }
  }
}

/** Start the database and everything a first request pays for, outside any measurement; GET /db/status's answer. */
export async function warmUpDatabase (baseUrl, signal) {
  for (const route of ['/db/batch?limit=1', '/db/stream?limit=1']) {
    // an export is a write to the guard: beyond loopback it needs the run's key
    const res = await fetch(`${baseUrl}${route}`, { headers: runKeyHeaders(), signal })
    const text = await res.text()
    if (res.status !== 200) {
      let message = text
      try {
        message = JSON.parse(text).error.message
      } catch {
        // not the lab's JSON error: keep the text
      }
      throw new Error(`warm-up GET ${route} answered ${res.status}: ${message}`)
    }
  }
  return (await fetch(`${baseUrl}/db/status`, { signal })).json()
}

/** One cell: the client in its own process, the server's (and database's) memory around it; throws unless every row came in order. */
export async function measureCell ({ baseUrl, cell, measureServer, dbPid = null, signal, onSpawn }) {
  const closeDatabase = dbPid ? procWindow(dbPid) : null
  const closeServer = measureServer()
  const { timing } = await runChildJob(CLIENT, { baseUrl, ...cell }, { signal, onSpawn })
  const server = closeServer()
  const database = closeDatabase ? closeDatabase() : null
  if (timing.received !== cell.rows || !timing.inOrder) {
    const order = timing.inOrder ? '' : ', out of order'
    throw new Error(`${describeCell(cell)}: the client got ${timing.received} of ${cell.rows} rows${order}`)
  }
  return {
    ...cell,
    requests: timing.requests,
    totalMs: timing.totalMs,
    firstRowMs: timing.firstRowMs,
    firstByteMs: timing.firstByteMs,
    bytes: timing.bytes,
    server,
    database
  }
}

/** e.g. "batch 10000 x20" or "stream hwm 500". */
export function describeCell (cell) {
  return cell.mode === 'batch' ? `batch ${cell.batch} x${requestsOf(cell)}` : `stream hwm ${cell.highWaterMark}`
}

/** Every cell `repeat` times, round by round; `measure(cell, round, done)` takes one measurement. The cells' medians. */
export async function measureRounds (cells, repeat, measure) {
  const measured = cells.map(function none () { return [] })
  for (let r = 0; r < repeat; r++) {
    for (const [index, cell] of cells.entries()) {
      measured[index].push(await measure(cell, r, r * cells.length + index))
    }
  }
  return measured.map(summariseRuns)
}

/** Medians of repeated measurements of one cell. */
export function summariseRuns (runs) {
  function pick (get) { return median(runs.map(get)) }
  const first = runs[0]
  return {
    mode: first.mode,
    rows: first.rows,
    batch: first.batch ?? null,
    highWaterMark: first.highWaterMark ?? null,
    sleep: first.sleep,
    requests: first.requests,
    runs: runs.length,
    totalMs: round(pick(function total (r) { return r.totalMs }), 10),
    firstRowMs: round(pick(function firstRow (r) { return r.firstRowMs }), 10),
    bytes: first.bytes,
    serverPeakAboveIdle: pick(function serverPeak (r) { return r.server?.peakAboveIdle }),
    serverPeakRss: pick(function serverRss (r) { return r.server?.peakRss }),
    databasePeakAboveIdle: pick(function dbPeak (r) { return r.database?.peakAboveIdle }),
    databasePeakRss: pick(function dbRss (r) { return r.database?.peakRss }),
    measurements: runs
  }
}

/** The table: one line per cell, and what the lesson is about. */
export function exportTable (cells) {
  const rows = cells.map(function row (c) {
    return [c.mode, c.mode === 'batch' ? c.batch : '', c.mode === 'stream' ? c.highWaterMark : '', c.requests,
      fixed(c.totalMs, 0), fixed(c.firstRowMs, 0), mib(c.serverPeakAboveIdle), mib(c.databasePeakAboveIdle)]
  })
  const heads = ['mode', 'batch', 'hwm', 'requests', 'total ms', 'first row ms', 'server peak above idle MiB',
    'db process peak above idle MiB']
  const table = markdownTable(heads, rows)
  const notes = []
  const { batches, streams } = byMode(cells)
  const bestStream = streams.reduce(function faster (best, c) { return best === null || c.totalMs < best.totalMs ? c : best }, null)
  if (bestStream && batches.length) {
    const beaten = batches.filter(function slower (b) { return b.totalMs > bestStream.totalMs })
    const best = `hwm ${bestStream.highWaterMark}, ${fixed(bestStream.totalMs, 0)} ms`
    const counts = beaten.map(function count (b) { return `${b.requests} request${b.requests === 1 ? '' : 's'}` }).join(', ')
    notes.push(beaten.length ? `- the stream (${best}) beat batches of ${counts}` : `- every batch size beat the stream (best: ${best})`)
  }
  if (streams.length >= 2) {
    const low = streams[0]
    const high = streams.at(-1)
    const article = PUBLISHED.find(function ratio (p) { return p.key === 'hwmRatio' }).value
    notes.push(`- stream hwm ${high.highWaterMark} took ${fixed(high.totalMs / low.totalMs, 2)}x the time of hwm ${low.highWaterMark} ` +
      `(the article: ${article}x)`)
  }
  return `${table}\n\n${notes.join('\n')}\n`
}

/** Time and memory against batch requests, each stream a level line to cross; the stream against its highWaterMark. */
export function exportCharts (cells) {
  const { batches, streams } = byMode(cells)
  const xs = batches.length ? [...new Set(batches.map(function requests (c) { return c.requests }))] : [1]
  function levelSeries (label, value) {
    return { label, points: xs.map(function level (x) { return { x, y: value } }) }
  }
  function versusRequests (title, y, get) {
    const series = []
    if (batches.length) series.push({ label: 'batch', points: batches.map(function point (c) { return { x: c.requests, y: get(c) } }) })
    for (const s of streams) series.push(levelSeries(`stream, highWaterMark ${s.highWaterMark}`, get(s)))
    return { title, x: 'batch requests (rows / batch size)', y, logX: true, series }
  }
  function toMiB (bytes) { return bytes === null || bytes === undefined ? null : bytes / MiB }
  const charts = [
    versusRequests('Total time (fetch and parse) vs number of batches', 'ms', function total (c) { return c.totalMs }),
    versusRequests('Server peak RSS above idle vs number of batches', 'MiB', function peak (c) { return toMiB(c.serverPeakAboveIdle) })
  ]
  if (streams.length) {
    charts.push({
      title: 'Stream time vs highWaterMark',
      x: 'highWaterMark (rows per cursor read)',
      y: 'ms',
      logX: true,
      series: [
        { label: 'total', points: streams.map(function point (c) { return { x: c.highWaterMark, y: c.totalMs } }) },
        { label: 'first row', points: streams.map(function point (c) { return { x: c.highWaterMark, y: c.firstRowMs } }) }
      ]
    })
  }
  if (cells.some(function hasDatabase (c) { return c.databasePeakAboveIdle != null })) {
    const title = 'Embedded database process peak RSS above idle'
    charts.push(versusRequests(title, 'MiB', function dbPeak (c) { return toMiB(c.databasePeakAboveIdle) }))
  }
  return charts
}

/** A lab server process with these app options: lab-server.js, so the database options need no server.js flags. */
export async function startDbLab (appOptions) {
  const lab = await startListeningProcess([LAB_SERVER, JSON.stringify(appOptions)], { graceMs: 15_000 })
  return { pid: lab.child.pid, url: lab.url, stop: lab.stop }
}
