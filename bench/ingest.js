/**
 * The ingest experiment: the same generated body sent to /bad, /good and
 * /express-json (as its route takes it), each measurement on a fresh server process, with the kernel's peak RSS of
 * that process read from outside (VmHWM after clear_refs).
 */
import zlib from 'node:zlib'
import { setTimeout as sleep } from 'node:timers/promises'
import { measureOnFreshServer } from './fresh-server.js'
import { latencyStats, median } from './stats.js'
import { uploadMany } from './upload.js'
import { ensureInput } from './inputs.js'
import { INGEST_ROUTES, INGEST_ROUTE_NAMES } from '../lib/ingest-routes.js'

const WARM_BODY = zlib.gzipSync(JSON.stringify({ items: [{ id: 1, numbers: [1.5] }] }))

async function warmUp (url) {
  for (const route of INGEST_ROUTE_NAMES) {
    const res = await fetch(`${url}/${route}`, { method: 'POST', headers: INGEST_ROUTES[route].headers, body: WARM_BODY })
    if (res.status !== 200) throw new Error(`warm-up POST /${route} answered ${res.status}: ${await res.text()}`)
  }
  await sleep(300)
}

// shared with the other benches; re-exported where they were first defined
export { latencyStats, median }

/**
 * One measurement: fresh server, warm-up, idle RSS, peak reset, load, peak.
 * @param {{ route: string, file: string, concurrency: number, requests: number, serverFlags: string[], url?: string }} cell
 */
export async function measureIngest (cell) {
  const measured = await measureOnFreshServer({
    serverFlags: cell.serverFlags,
    url: cell.url,
    warmUp,
    load: function uploadAll (url) { return uploadMany(`${url}/${cell.route}`, cell.file, { ...cell, headers: INGEST_ROUTES[cell.route].headers }) }
  })
  const results = measured.outcome
  const ok = results.filter(function succeeded (r) { return r.status === 200 })
  const errors = {}
  for (const r of results) {
    if (r.status === 200) continue
    const type = r.body?.error?.type ?? r.error ?? `status ${r.status}`
    errors[type] = (errors[type] ?? 0) + 1
  }
  const summaries = new Set(ok.map(function key (r) { return JSON.stringify(r.body.summary) }))
  const inflated = ok.reduce(function add (sum, r) { return sum + r.body.summary.inflatedBytes }, 0)
  const fromKernel = measured.peakRss !== null
  return {
    route: cell.route,
    concurrency: cell.concurrency,
    requests: cell.requests,
    ok: ok.length,
    errors,
    latencyMs: latencyStats(results.map(function ms (r) { return r.ms })),
    wallMs: measured.wallMs,
    mbPerSecond: inflated / 1e6 / (measured.wallMs / 1000),
    idleRss: measured.idleRss,
    // a server we did not start: its own answers carry its (never reset) peak
    peakRss: fromKernel ? measured.peakRss : (ok[0]?.body.memory?.peakRss ?? null),
    peakSource: fromKernel ? 'VmHWM' : 'server maxRSS',
    peakAboveIdle: measured.peakAboveIdle,
    summary: ok[0]?.body.summary ?? null,
    summariesAgree: summaries.size <= 1
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
    const limit = String(Math.floor(Math.max(bytes * 1.05, 1024 * 1024)))
    // /bad at 500 MB peaks near 2.4 GiB: measured, not killed by the supervisor's 1 GiB budget
    const serverFlags = ['--no-request-peak', '--memory-limit=0', '--limit-inflated', limit, '--limit-compressed', String(Math.max(input.compressedBytes * 2, 1 << 20)), ...options.serverFlags]
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
