/**
 * `npm run bench -- zip-bomb --variant ratio --route both --bytes 10GB` (or `--codec br`): the experiment on a fresh
 * lab (experiments/README.md#bench), /bad guarded so that the run ends with both routes' figures.
 */
import { experimentBench } from '../../lib/measure/experiment-bench.js'
import { markdownTable } from '../../lib/measure/table.js'
import { formatBytes, formatDecimalBytes, formatMiB, formatMs } from '../../lib/util/units.js'
import * as experiment from './index.js'
import { bombInWords } from './result.js'

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
  const heads = ['route', 'status', 'error', 'outcome', 'time to answer', 'inflated bytes reached', 'server peak above idle', 'peak RSS']
  return `A ${bomb.variant} bomb: ${bombInWords(bomb)}${Number.isFinite(bomb.ratio) ? ` (${bomb.ratio}:1)` : ''}${made}; ${guard}.\n\n` +
    `${markdownTable(heads, rows)}\n`
}
