/**
 * The database export experiment's measurements, shared by the engine module
 * (`experiments/db-export/index.js`, against the running lab) and the bench
 * (`npm run bench -- db-export`, a fresh server per measurement).
 *
 * One cell is one export: batch (rows / batch requests, one after another)
 * or stream (one request, a cursor read highWaterMark rows at a time),
 * timed by a client process that fetches and parses like a page does, with
 * the server's peak RSS, and the embedded database process's, measured around it.
 */
import { spawn } from 'node:child_process'
import path from 'node:path'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { runChildJob } from '../../lib/experiments/load.js'
import { runKeyHeaders } from '../../lib/limits/run-keys.js'
import { readProcMemory, resetProcPeak } from '../../lib/metrics/proc-memory.js'
import { median } from '../../lib/measure/stats.js'
import { MiB, round } from '../../lib/util/units.js'
import { markdownTable, mib, fixed } from '../../lib/measure/table.js'

const CLIENT = path.join(PROJECT_ROOT, 'experiments', 'db-export', 'client.js')
const LAB_SERVER = path.join(PROJECT_ROOT, 'experiments', 'db-export', 'lab-server.js')
const LISTENING = /streamlab listening on (http:\/\/\S+)/

const SOURCE = 'An article: Fastify, pg-query-stream and a React page, timed in the browser: docs/sources.md#db-export'

/** What the article found: shown beside the lab's own figures (`measured`: null where not run). */
const PUBLISHED = Object.freeze([
  Object.freeze({ key: 'crossover', label: 'Fewest batches from which the stream was faster', value: 10, unit: 'batches', source: SOURCE }),
  Object.freeze({ key: 'hwmRatio', label: 'Stream time with the larger highWaterMark, over the smaller\'s', value: 0.5, unit: 'x', source: SOURCE }),
  Object.freeze({ key: 'hwmHigh', label: 'Larger highWaterMark', value: 5_000_000, unit: 'rows', source: SOURCE }),
  Object.freeze({ key: 'rows', label: 'Items exported (each joined to its desk)', value: 10_000_000, unit: 'rows', source: SOURCE }),
  Object.freeze({ key: 'desks', label: 'Desks', value: 200_000, unit: 'desks', source: SOURCE })
])

/**
 * The published figures with the measured ones beside them.
 * @param {object[]} cells summarised cells (summariseRuns)
 * @param {{ desks?: number }|null} [seed] what the database holds
 * @returns {Array<{ label: string, value: number, unit: string, source: string, measured: number|null }>}
 */
export function publishedBeside (cells, seed = null) {
  const batches = cells.filter(function isBatch (c) { return c.mode === 'batch' }).sort(function byRequests (a, b) { return a.requests - b.requests })
  const streams = cells.filter(function isStream (c) { return c.mode === 'stream' }).sort(function byHwm (a, b) { return a.highWaterMark - b.highWaterMark })
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

/**
 * The cells of a sweep: every batch size, then every highWaterMark.
 * @param {{ modes: string[], rows: number, batchSizes: number[], highWaterMarks: number[], sleep: number }} plan
 * @returns {Array<{ mode: 'batch'|'stream', rows: number, batch?: number, highWaterMark?: number, sleep: number }>}
 */
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

/** Requests a cell makes. */
export function requestsOf (cell) {
  return cell.mode === 'batch' ? Math.max(1, Math.ceil(cell.rows / cell.batch)) : 1
}

/**
 * A measurement window on another process: idle RSS now and its kernel peak
 * reset; the returned function reads the peak. The same figures as the
 * engine's `ctx.measure()`.
 * @param {number} pid
 * @returns {() => { idleRss: number|null, peakRss: number|null, peakAboveIdle: number|null, peakSource: string|null, peakReset: boolean }}
 */
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

/**
 * Start the database and everything a first request pays for, outside any measurement.
 * @param {string} baseUrl
 * @param {AbortSignal} [signal]
 * @returns {Promise<object>} GET /db/status afterwards
 */
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

/**
 * Measure one cell: the client in its own process, the server's memory
 * (and the embedded database's) around it.
 * @param {{ baseUrl: string, cell: object, measureServer: () => () => object, dbPid?: number|null,
 *   signal?: AbortSignal, onSpawn?: Function }} settings
 * @returns {Promise<object>} the cell with requests, times in ms, bytes, and memory figures
 * @throws {Error} when the client did not get every row, in order
 */
export async function measureCell ({ baseUrl, cell, measureServer, dbPid = null, signal, onSpawn }) {
  const closeDatabase = dbPid ? procWindow(dbPid) : null
  const closeServer = measureServer()
  const { timing } = await runChildJob(CLIENT, { baseUrl, ...cell }, { signal, onSpawn })
  const server = closeServer()
  const database = closeDatabase ? closeDatabase() : null
  if (timing.received !== cell.rows || !timing.inOrder) {
    throw new Error(`${describeCell(cell)}: the client got ${timing.received} of ${cell.rows} rows${timing.inOrder ? '' : ', out of order'}`)
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

/**
 * Medians of repeated measurements of one cell.
 * @param {object[]} runs measureCell results of the same cell
 */
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
  const table = markdownTable(['mode', 'batch', 'hwm', 'requests', 'total ms', 'first row ms', 'server peak above idle MiB', 'db process peak above idle MiB'], rows)
  const notes = []
  const streams = cells.filter(function isStream (c) { return c.mode === 'stream' })
  const batches = cells.filter(function isBatch (c) { return c.mode === 'batch' }).sort(function byRequests (a, b) { return a.requests - b.requests })
  const bestStream = streams.reduce(function faster (best, c) { return best === null || c.totalMs < best.totalMs ? c : best }, null)
  if (bestStream && batches.length) {
    const beaten = batches.filter(function slower (b) { return b.totalMs > bestStream.totalMs })
    notes.push(beaten.length
      ? `- the stream (hwm ${bestStream.highWaterMark}, ${fixed(bestStream.totalMs, 0)} ms) beat batches of ${beaten.map(function count (b) { return `${b.requests} request${b.requests === 1 ? '' : 's'}` }).join(', ')}`
      : `- every batch size beat the stream (best: hwm ${bestStream.highWaterMark}, ${fixed(bestStream.totalMs, 0)} ms)`)
  }
  if (streams.length >= 2) {
    const sorted = [...streams].sort(function byHwm (a, b) { return a.highWaterMark - b.highWaterMark })
    const low = sorted[0]
    const high = sorted[sorted.length - 1]
    notes.push(`- stream hwm ${high.highWaterMark} took ${fixed(high.totalMs / low.totalMs, 2)}x the time of hwm ${low.highWaterMark} (the article: 0.5x)`)
  }
  return `${table}\n\n${notes.join('\n')}\n`
}

/**
 * Charts of a sweep (ChartSpec, lib/experiments/result-contract.js): time against the number of
 * batch requests, with each stream as a level line to cross; the stream
 * against its highWaterMark; the server's memory.
 * @returns {import('../../lib/experiments/result-contract.js').ChartSpec[]}
 */
export function exportCharts (cells) {
  const batches = cells.filter(function isBatch (c) { return c.mode === 'batch' }).sort(function byRequests (a, b) { return a.requests - b.requests })
  const streams = cells.filter(function isStream (c) { return c.mode === 'stream' }).sort(function byHwm (a, b) { return a.highWaterMark - b.highWaterMark })
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
  if (cells.some(function hasDatabase (c) { return c.databasePeakAboveIdle !== null && c.databasePeakAboveIdle !== undefined })) {
    charts.push(versusRequests('Embedded database process peak RSS above idle', 'MiB', function dbPeak (c) { return toMiB(c.databasePeakAboveIdle) }))
  }
  return charts
}

/**
 * A lab server process with these app options (its own entry point,
 * `experiments/db-export/lab-server.js`, so the database options need no server.js flags).
 * @param {object} appOptions JSON-serialisable createApp options
 * @returns {Promise<{ pid: number, url: string, stop: () => Promise<void> }>}
 */
export function startDbLab (appOptions) {
  const child = spawn(process.execPath, [LAB_SERVER, JSON.stringify(appOptions)], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  return new Promise(function waitForListening (resolve, reject) {
    function onOutput (chunk) {
      output += chunk
      const match = LISTENING.exec(output)
      if (!match) return
      cleanup()
      resolve({ pid: child.pid, url: match[1], stop: function stopLab () { return stopChild(child) } })
    }
    function onExit (code, signal) {
      cleanup()
      reject(new Error(`lab server exited (${signal ?? code}) before listening:\n${output}`))
    }
    function cleanup () {
      child.stdout.off('data', onOutput)
      child.stderr.off('data', onOutput)
      child.off('exit', onExit)
      // still read, so that a chatty server never blocks on a full pipe
      child.stdout.resume()
      child.stderr.resume()
    }
    child.stdout.setEncoding('utf8')
    child.stderr.setEncoding('utf8')
    child.stdout.on('data', onOutput)
    child.stderr.on('data', onOutput)
    child.on('exit', onExit)
  })
}

function stopChild (child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise(function waitForExit (resolve) {
    const timer = setTimeout(function forceKill () { child.kill('SIGKILL') }, 15_000)
    child.once('exit', function exited () {
      clearTimeout(timer)
      resolve()
    })
    child.kill('SIGTERM')
  })
}
