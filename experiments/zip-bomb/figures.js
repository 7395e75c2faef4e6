/**
 * The zip-bomb experiment's figures for the command-line tools that show runs:
 * the lesson screenshot (scripts/screenshots.js takes the `screenshot` object:
 * name, flags, params, viewport, timeoutMs, figures) and its caption lines,
 * read from the run's own result. Formatting only: nothing here measures.
 */
import { formatBytes, formatDecimalBytes, formatMiB, formatMs } from '../../lib/units.js'
import { count } from '../../lib/measure/figure-lines.js'

/** The lesson picture (docs/img/lesson-zip-bomb.png), run from the dashboard's panel. */
export const screenshot = Object.freeze({
  name: 'zip-bomb',
  flags: [],
  // guarded /bad: it pays its whole inflate limit and answers 413, so the run ends with both
  // routes' figures in the table (an --unsafe-bad kill loses the run with the worker)
  params: { variant: 'ratio', route: 'both', bytes: '10GB' },
  timeoutMs: 5 * 60_000,
  figures: zipBombFigures
})

/** The lines that caption the picture, from a run as GET /experiments/:id gives it. */
export function zipBombFigures ({ result }) {
  const b = result.bomb
  const lines = [`bomb: ${b.variant}, ${formatDecimalBytes(b.inflatedBytes)} of JSON in ${formatDecimalBytes(b.compressedBytes)} of gzip (${count(b.ratio)}:1); ` +
    `/bad ${result.unsafeBad ? 'unguarded (--unsafe-bad)' : `guarded at ${formatBytes(result.limits.inflated)} inflated`}`]
  for (const r of Object.values(result.routes)) {
    lines.push(`/${r.route}: ${r.status} ${r.errorType ?? ''} (${r.outcome}) in ${formatMs(r.ms)}; inflated bytes reached ` +
      `${r.inflatedBytesReached === null ? 'not reported' : formatDecimalBytes(r.inflatedBytesReached)}; server peak above idle ${formatMiB(r.server?.peakAboveIdle)} (peak RSS ${formatMiB(r.server?.peakRss)})`)
  }
  return lines
}
