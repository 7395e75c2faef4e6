/**
 * The ingest experiment: the same generated body sent to /bad and /good,
 * each measurement on a fresh server process, with the kernel's peak RSS of
 * that process read from outside (VmHWM after clear_refs).
 */
import zlib from 'node:zlib'
import { setTimeout as sleep } from 'node:timers/promises'
import { startLabProcess } from './lab-process.js'
import { readProcMemory, resetProcPeak } from './proc-memory.js'
import { uploadMany } from './upload.js'
import { ensureInput } from './inputs.js'

const WARM_BODY = zlib.gzipSync(JSON.stringify({ items: [{ id: 1, numbers: [1.5] }] }))

async function warmUp (url) {
  for (const route of ['bad', 'good']) {
    const res = await fetch(`${url}/${route}`, { method: 'POST', headers: { 'content-type': 'application/gzip' }, body: WARM_BODY })
    if (res.status !== 200) throw new Error(`warm-up POST /${route} answered ${res.status}: ${await res.text()}`)
  }
  await sleep(300)
}

function percentile (sorted, p) {
  if (sorted.length === 0) return null
  return sorted[Math.min(sorted.length - 1, Math.floor(p / 100 * sorted.length))]
}

/** Latency figures in ms. */
export function latencyStats (values) {
  const sorted = [...values].sort(function ascending (a, b) { return a - b })
  const sum = sorted.reduce(function add (a, b) { return a + b }, 0)
  return {
    min: sorted[0] ?? null,
    avg: sorted.length ? sum / sorted.length : null,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? null
  }
}

export function median (values) {
  const sorted = values.filter(function present (v) { return typeof v === 'number' }).sort(function ascending (a, b) { return a - b })
  if (sorted.length === 0) return null
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/**
 * One measurement: fresh server, warm-up, idle RSS, peak reset, load, peak.
 * @param {{ route: string, file: string, concurrency: number, requests: number, serverFlags: string[], url?: string }} cell
 */
export async function measureIngest (cell) {
  const external = Boolean(cell.url)
  const lab = external ? { url: cell.url, pid: null, stop: async function keep () {} } : await startLabProcess(cell.serverFlags)
  try {
    await warmUp(lab.url)
    const idle = lab.pid ? readProcMemory(lab.pid) : null
    const peakReset = lab.pid ? resetProcPeak(lab.pid) : false
    const started = performance.now()
    const results = await uploadMany(`${lab.url}/${cell.route}`, cell.file, cell)
    const wallMs = performance.now() - started
    const after = lab.pid ? readProcMemory(lab.pid) : null
    const ok = results.filter(function succeeded (r) { return r.status === 200 })
    const errors = {}
    for (const r of results) {
      if (r.status === 200) continue
      const type = r.body?.error?.type ?? r.error ?? `status ${r.status}`
      errors[type] = (errors[type] ?? 0) + 1
    }
    const summaries = new Set(ok.map(function key (r) { return JSON.stringify(r.body.summary) }))
    const inflated = ok.reduce(function add (sum, r) { return sum + r.body.summary.inflatedBytes }, 0)
    return {
      route: cell.route,
      concurrency: cell.concurrency,
      requests: cell.requests,
      ok: ok.length,
      errors,
      latencyMs: latencyStats(results.map(function ms (r) { return r.ms })),
      wallMs,
      mbPerSecond: inflated / 1e6 / (wallMs / 1000),
      idleRss: idle?.rss ?? null,
      peakRss: after && peakReset ? after.peak : (ok[0]?.body.memory?.peakRss ?? null),
      peakSource: after && peakReset ? 'VmHWM' : 'server maxRSS',
      peakAboveIdle: after && peakReset && idle ? after.peak - idle.rss : null,
      summary: ok[0]?.body.summary ?? null,
      summariesAgree: summaries.size <= 1
    }
  } finally {
    await lab.stop()
  }
}

/**
 * The sweep: sizes x concurrency x routes, `repeat` times each (medians reported).
 * @param {object} options normalised bench options
 * @param {(event: object) => void} report progress callback
 */
export async function runIngestBench (options, report) {
  const cells = []
  const total = options.sizes.length * options.concurrency.length * options.routes.length * options.repeat
  let done = 0
  for (const [index, bytes] of options.sizes.entries()) {
    const size = options.sizeLabels?.[index] ?? `${bytes} B`
    const input = await ensureInput({ bytes, format: options.format }, function log (line) { report({ type: 'log', line }) })
    const limit = String(Math.max(bytes * 1.05, 1024 * 1024) | 0)
    const serverFlags = ['--no-request-peak', '--limit-inflated', limit, '--limit-compressed', String(Math.max(input.compressedBytes * 2, 1 << 20)), ...options.serverFlags]
    for (const concurrency of options.concurrency) {
      for (const route of options.routes) {
        const runs = []
        for (let r = 0; r < options.repeat; r++) {
          report({ type: 'progress', done, total, label: `${route} ${size} x${concurrency} run ${r + 1}/${options.repeat}` })
          runs.push(await measureIngest({
            route,
            file: input.file,
            concurrency,
            requests: options.requests ?? concurrency,
            serverFlags,
            url: options.url
          }))
          done++
        }
        cells.push(summariseRuns({ route, size, bytes, format: options.format, compressedBytes: input.compressedBytes, concurrency }, runs))
        report({ type: 'cell', cell: cells[cells.length - 1] })
      }
    }
  }
  report({ type: 'progress', done, total, label: 'done' })
  return cells
}

function summariseRuns (key, runs) {
  function pick (get) { return median(runs.map(get)) }
  return {
    ...key,
    runs: runs.length,
    mbPerSecond: pick(function mbps (r) { return r.mbPerSecond }),
    peakRss: pick(function peak (r) { return r.peakRss }),
    peakAboveIdle: pick(function above (r) { return r.peakAboveIdle }),
    idleRss: pick(function idle (r) { return r.idleRss }),
    latencyAvgMs: pick(function avg (r) { return r.latencyMs.avg }),
    latencyMaxMs: pick(function max (r) { return r.latencyMs.max }),
    ok: runs.reduce(function add (s, r) { return s + r.ok }, 0),
    requests: runs.reduce(function add (s, r) { return s + r.requests }, 0),
    errors: runs.map(function errs (r) { return r.errors }),
    summary: runs.find(function withSummary (r) { return r.summary })?.summary ?? null,
    summariesAgree: runs.every(function agree (r) { return r.summariesAgree }),
    measurements: runs
  }
}
