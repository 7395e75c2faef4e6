/**
 * `npm run bench -- zip-bomb`: the experiment on a fresh lab process, started
 * through POST /experiments (lib/measure/experiment-bench.js). Its flags are
 * the experiment's parameters (lib/experiments/schema-options.js).
 *
 *   npm run bench -- zip-bomb --variant ratio --route both --bytes 10GB
 *   npm run bench -- zip-bomb --codec br
 *
 * The lab runs with /bad guarded (its inflate limit), so the run ends with both
 * routes' figures; `npm run demo:bomb` shows the unguarded /bad being killed.
 * Command-line side only: the server never loads this file.
 */
import { experimentBench } from '../../lib/measure/experiment-bench.js'
import { markdownTable } from '../../lib/measure/table.js'
import { formatBytes, formatDecimalBytes, formatMiB, formatMs } from '../../lib/util/units.js'
import * as experiment from './index.js'

export const { name, summary, usage, options, normalize, run } = experimentBench(experiment, {
  summary: 'a zip bomb into /good and /bad: answer, time to refuse, bytes inflated, peak memory',
  table: zipBombTable
})

/** The table: a row per route, the bomb above it. */
function zipBombTable (result) {
  const { bomb } = result
  const rows = Object.values(result.routes).map(function row (r) {
    return [`/${r.route}`, r.status, r.errorType ?? '', r.outcome, r.ms === null ? 'n/a' : `${r.ms} ms`,
      r.inflatedBytesReached === null ? 'not reported' : formatDecimalBytes(r.inflatedBytesReached),
      formatMiB(r.server?.peakAboveIdle), formatMiB(r.server?.peakRss)]
  })
  const guard = result.unsafeBad ? '/bad unguarded (--unsafe-bad)' : `/bad guarded at ${formatBytes(result.limits.inflated)} inflated`
  const made = Number.isFinite(bomb.madeMs) ? `, made by zlib's compressor in ${formatMs(bomb.madeMs)}` : ''
  return `A ${bomb.variant} bomb: ${formatDecimalBytes(bomb.inflatedBytes)} of JSON in ${formatDecimalBytes(bomb.compressedBytes)} of ${bomb.codec ?? 'gzip'}` +
    `${Number.isFinite(bomb.ratio) ? ` (${bomb.ratio}:1)` : ''}${made}; ${guard}.\n\n` +
    `${markdownTable(['route', 'status', 'error', 'outcome', 'time to answer', 'inflated bytes reached', 'server peak above idle', 'peak RSS'], rows)}\n`
}
