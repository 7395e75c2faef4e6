/**
 * The upload experiment's figures for the command-line tools that show runs:
 * the lesson screenshot (scripts/screenshots.js takes the `screenshot` object:
 * name, flags, params, viewport, timeoutMs, figures) and its caption lines,
 * read from the run's own result. Formatting only: nothing here measures.
 */
import { formatDecimalBytes, formatMiB, formatMs } from '../../lib/units.js'
import { errorList, publishedFigures } from '../../lib/measure/figure-lines.js'

/** The lesson picture (docs/img/lesson-upload.png), run from the dashboard's panel. */
export const screenshot = Object.freeze({
  name: 'upload',
  flags: [],
  // the sweep 1, 10, 50 per route: streamed stays flat, buffered climbs a step per cell (50 x 15 MB held at once)
  params: { route: 'both', concurrency: 50, sweep: 'steps', bytes: '15MB' },
  timeoutMs: 10 * 60_000,
  figures: uploadFigures
})

/** The lines that caption the picture, from a run as GET /experiments/:id gives it. */
export function uploadFigures ({ result }) {
  const lines = [`file: ${formatDecimalBytes(result.input.bytes)}`]
  for (const c of result.cells) {
    lines.push(`${c.route} C=${c.concurrency}: ${c.ok}/${c.requests} ok${errorList(c.errors)}; server peak RSS ${formatMiB(c.server?.peakRss)}, ` +
      `above idle ${formatMiB(c.server?.peakAboveIdle)}; latency avg ${formatMs(c.latencyMs?.avg)}, max ${formatMs(c.latencyMs?.max)}; ${c.mbPerSecond} MB/s`)
  }
  return [...lines, ...publishedFigures(result.published)]
}
