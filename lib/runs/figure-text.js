/**
 * A compared figure as text, in its unit: what `npm run runs -- compare` prints and what the dashboard's delta table shows (the
 * page imports this module, served by routes/dashboard.js), so the two say the same numbers the same way.
 */
import { formatMiB, formatMs } from '../util/units.js'

/** A figure in its unit (figures.js `unitOf`): bytes in MiB, ms, MB/s, req/s, else a count. */
export function formatFigure (unit, value) {
  if (!Number.isFinite(value)) return 'n/a'
  if (unit === 'bytes') return formatMiB(value)
  if (unit === 'ms') return formatMs(value)
  if (unit === 'MB/s' || unit === 'MiB/s') return `${value.toFixed(1)} ${unit}`
  if (unit === 'req/s') return `${value.toFixed(value < 10 ? 2 : 0)} req/s`
  return value.toLocaleString('en')
}

/** A difference with its sign: "+1.5 MiB", "−20 ms", "±0.0 MiB"; "n/a" for none. */
export function formatDifference (unit, value) {
  if (value === null || !Number.isFinite(value)) return 'n/a'
  return `${value > 0 ? '+' : value < 0 ? '−' : '±'}${formatFigure(unit, Math.abs(value))}`
}

/** A ratio as "1.25x"; "n/a" for none (a figure of 0 in A). */
export function formatRatio (ratio) {
  return ratio === null || !Number.isFinite(ratio) ? 'n/a' : `${ratio.toFixed(2)}x`
}

/** A figure with the range of its repeats: "12.3 MiB (11.9 to 12.8 MiB, 3 runs)"; "–" for none. */
export function formatWithRange (figure) {
  if (figure === null) return '–'
  const value = formatFigure(figure.unit, figure.value)
  if (figure.n <= 1) return value
  return `${value} (${formatFigure(figure.unit, figure.min)} to ${formatFigure(figure.unit, figure.max)}, ${figure.n} runs)`
}

/** What the repeats say of a difference: '' without repeats. */
export function formatSpread (spread) {
  return spread === null ? '' : spread === 'inside' ? 'inside the spread' : 'OUTSIDE the spread'
}
