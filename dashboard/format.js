/**
 * How figures read on the page: memory in MiB (what `top` and the lab's
 * docs use), times as the server's wall clock.
 */

export const MiB = 1024 * 1024

/** Bytes as MiB with one decimal, e.g. "123.4 MiB"; a dash for no value. */
export function formatMiB (bytes, unit = true) {
  if (!Number.isFinite(bytes)) return '–'
  const text = (bytes / MiB).toFixed(1)
  return unit ? `${text} MiB` : text
}

/** Bytes in decimal units, as the lab writes body sizes ("26.2 MB", "10.0 GB"); a dash for no value. */
export function formatMB (bytes) {
  if (!Number.isFinite(bytes)) return '–'
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(1)} GB`
  return `${(bytes / 1e6).toFixed(bytes < 1e5 ? 3 : 1)} MB`
}

/** ms since the epoch as HH:MM:SS, local time. */
export function formatClock (time) {
  if (!Number.isFinite(time)) return ''
  const d = new Date(time)
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map(function twoDigits (n) {
    return String(n).padStart(2, '0')
  }).join(':')
}

/** Milliseconds with at most one decimal. */
export function formatMs (ms) {
  if (!Number.isFinite(ms)) return '–'
  return `${ms >= 100 ? Math.round(ms) : Math.round(ms * 10) / 10} ms`
}

/** A number with thousands separators. */
export function formatCount (n) {
  if (n === null || n === undefined || n === '') return '–'
  const value = typeof n === 'number' ? n : Number(n)
  if (!Number.isFinite(value)) return String(n)
  return value.toLocaleString('en-US')
}

/** A time stamp usable in a file name: 2026-11-22T10-15-00. */
export function fileStamp (time = Date.now()) {
  return new Date(time).toISOString().slice(0, 19).replaceAll(':', '-')
}

/** Bytes in binary units, KiB under a MiB and MiB above, e.g. "212.0 KiB", "301.4 MiB"; a dash for no value. */
export function formatBytes (bytes) {
  if (!Number.isFinite(bytes)) return '–'
  if (Math.abs(bytes) < MiB) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${(bytes / MiB).toFixed(1)} MiB`
}

/** Steps between clock ticks, in seconds: round ones a reader counts in. */
const CLOCK_STEPS = Object.freeze([1, 2, 5, 10, 15, 30, 60, 120, 300, 600])

/**
 * Ticks for a clock axis from `min` to `max` (ms): at whole multiples of one step, as many as fit
 * `width` px with labels of `labelPx` px, so no two labels collide or read the same.
 * @returns {number[]} tick values (ms)
 */
export function clockTicks (min, max, width, labelPx) {
  if (!Number.isFinite(min) || !Number.isFinite(max) || max < min || !(width > 0)) return []
  const fit = Math.max(1, Math.floor(width / labelPx))
  const seconds = (max - min) / 1000
  const fitting = CLOCK_STEPS.find(function fits (s) { return Math.floor(seconds / s) + 1 <= fit })
  const step = (fitting ?? Math.ceil(seconds / fit / 60) * 60) * 1000
  const ticks = []
  for (let t = Math.ceil(min / step) * step; t <= max; t += step) ticks.push(t)
  return ticks
}
