/**
 * Pieces of the lines that caption a run's picture and end a demo step
 * (experiments/<name>/figures.js), read from the run's own result
 * (lib/result-contract.js). Formatting only.
 */
import { formatMiB } from '../units.js'

/** "published vs measured: <label>: <value> <unit> vs <measured>", a line per published figure. */
export function publishedFigures (published) {
  return (published ?? []).map(function beside (p) {
    const unit = p.unit ? ` ${p.unit}` : ''
    return `published vs measured: ${p.label}: ${p.value}${unit} vs ${p.measured === null || p.measured === undefined ? 'not run' : `${p.measured}${unit}`}`
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
