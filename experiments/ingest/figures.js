/**
 * The ingest experiment's figures for the command-line tools that show runs:
 * the lesson screenshot (scripts/screenshots.js takes the `screenshot` object:
 * name, flags, params, viewport, timeoutMs, figures) and its caption lines,
 * read from the run's own result. Formatting only: nothing here measures.
 */
import { formatDecimalBytes, formatMiB, formatMs } from '../../lib/units.js'
import { count, errorList } from '../../lib/measure/figure-lines.js'

/** The lesson picture (docs/img/lesson-ingest.png), run from the dashboard's panel. */
export const screenshot = Object.freeze({
  name: 'ingest',
  flags: [],
  // 100 MB inflated: /bad holds over half a GiB per upload, /good a few MiB; two uploads per route
  // one after the other. "Both" runs /bad first, and /good then runs in a process that keeps what
  // /bad grew (it allocates too little on the main thread for a GC to hand it back), so a /good-only
  // run comes first: the chart shows /good flat at idle, then /bad's climb, then the table of both
  prelude: [{ route: 'good', bytes: '100MB', size: '', format: 'json', concurrency: 1, requests: 2 }],
  params: { route: 'both', bytes: '100MB', size: '', format: 'json', concurrency: 1, requests: 2 },
  timeoutMs: 10 * 60_000,
  figures: ingestFigures
})

/** The lines that caption the picture, from a run as GET /experiments/:id gives it. */
export function ingestFigures ({ params, result }) {
  const input = result.input
  const body = input.bytes !== null ? `${formatDecimalBytes(input.bytes)} of JSON` : `${count(input.size)} items`
  const lines = [`input: ${body} (${input.format}), ${formatDecimalBytes(input.compressedBytes)} gzipped; concurrency ${params.concurrency}, ${params.requests} upload(s) per route`]
  for (const r of Object.values(result.routes)) {
    lines.push(`/${r.route}: ${r.ok}/${r.requests} answered 200${errorList(r.errors)}; server peak above idle ${formatMiB(r.server?.peakAboveIdle)} ` +
      `(idle ${formatMiB(r.server?.idleRss)}, peak RSS ${formatMiB(r.server?.peakRss)}); ${r.mbPerSecond} MB/s; latency avg ${formatMs(r.latencyMs?.avg)}, p99 ${formatMs(r.latencyMs?.p99)}`)
  }
  const items = Object.values(result.routes)[0]?.summary?.items
  lines.push(`answers identical: ${result.summariesAgree}${Number.isFinite(items) ? ` (${count(items)} items each)` : ''}`)
  return lines
}
