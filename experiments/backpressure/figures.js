/**
 * The backpressure experiment's figures for the command-line tools that show
 * runs: the lesson screenshot (scripts/screenshots.js takes the `screenshot`
 * object: name, flags, params, viewport, timeoutMs, figures) and its caption
 * lines, read from the run's own result. Formatting only: nothing here measures.
 */
import { formatMiB } from '../../lib/util/units.js'

/** The lines that caption the picture, from a run as GET /experiments/:id gives it. */
function backpressureFigures ({ result }) {
  const c = result.cells[0]
  const lines = [
    result.caption,
    `stopped by ${c.stoppedBy} after ${c.seconds} s; server peak above idle ${formatMiB(c.server?.peakAboveIdle)}; ` +
      `held at most ${formatMiB(c.peakHeldBytes)}; unread in the kernels at most ${formatMiB(c.unreadPeakBytes)}; ` +
      `arriving ${c.arrivedInflatedMBps} MB/s (inflated), consumer ${c.consumerMBps} MB/s`
  ]
  for (const v of result.verdicts ?? []) lines.push(`verdict: ${v.verdict}: ${v.text}`)
  return lines
}

/** The lesson picture: case A of the bench (a slow consumer behind pipeline), run from the dashboard's panel after a warm-up run. */
export const screenshot = Object.freeze({
  name: 'backpressure',
  flags: Object.freeze([]),
  params: Object.freeze({ mode: 'pipeline', delayMs: 50, seconds: 30 }),
  // a fresh lab's first upload grows its code and heap once, as the bench's warm-up (docs/backpressure.md)
  prelude: Object.freeze([Object.freeze({ mode: 'pipeline', delayMs: 50, seconds: 10 })]),
  viewport: Object.freeze({ width: 1400, height: 1000 }),
  timeoutMs: 3 * 60_000,
  figures: backpressureFigures
})
