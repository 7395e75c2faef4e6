// Pieces of the lines that caption a run's picture and end a demo step, read from the run's own result.
import { formatMiB } from '../util/units.js'

/** "published vs measured: <label>: <value> <unit> vs <measured>", a line per published figure. */
export function publishedFigures (published) {
  return (published ?? []).map(function beside (p) {
    const unit = p.unit ? ` ${p.unit}` : ''
    const measured = p.measured === null || p.measured === undefined ? 'not run' : `${p.measured}${unit}`
    return `published vs measured: ${p.label}: ${p.value}${unit} vs ${measured}`
  })
}

/** The engine's figure for the whole run (the result's `server`). */
export function serverFigure (server) {
  if (!server) return 'n/a'
  return `server peak RSS ${formatMiB(server.peakRss)}, above idle ${formatMiB(server.peakAboveIdle)} (idle ${formatMiB(server.idleRss)})`
}

/** " (type x2, other x1)", or nothing when there was no error. */
export function errorList (errors) {
  const entries = Object.entries(errors ?? {})
  return entries.length === 0 ? '' : ` (${entries.map(function errorCount ([type, n]) { return `${type} x${n}` }).join(', ')})`
}

/** 1000000 -> "1,000,000"; not a number -> "n/a". */
export function count (n) {
  return Number.isFinite(n) ? n.toLocaleString('en') : 'n/a'
}

/** a as a multiple of b: "3.2x", "12x"; "n/a" when either is missing. */
export function times (a, b) {
  return Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(a / b >= 10 ? 0 : 1)}x` : 'n/a'
}

/** Above idle where the kernel's peak could be reset (Linux), else the peak itself: { bytes, text }. */
export function peakOf (server) {
  if (Number.isFinite(server?.peakAboveIdle)) return { bytes: server.peakAboveIdle, text: `+${formatMiB(server.peakAboveIdle)}` }
  return { bytes: server?.peakRss ?? null, text: `${formatMiB(server?.peakRss)} (peak RSS)` }
}
