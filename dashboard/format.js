/** How figures read on the page: bytes as lib/util/units.js writes them, a dash for no value, the server's clock. */
import { formatBytes as bytesText, formatMB as mbText, formatMiB as mibText } from '../lib/util/units.js'

const NO_VALUE = '–' // what the page shows for a figure it does not have

/** Bytes as MiB with one decimal, e.g. "123.4 MiB". */
export function formatMiB (bytes) {
  return Number.isFinite(bytes) ? mibText(bytes) : NO_VALUE
}

/** A figure already in MiB, as a chart's axis and tooltip write it: "123.4 MiB". */
export function formatMiBValue (mib) {
  return Number.isFinite(mib) ? `${mib.toFixed(1)} MiB` : NO_VALUE
}

/** Bytes in binary units, e.g. "512 B", "212.0 KiB", "301.4 MiB". */
export function formatBytes (bytes) {
  return Number.isFinite(bytes) ? bytesText(bytes) : NO_VALUE
}

/** Bytes in decimal units, as the lab writes body sizes ("0.042 MB", "26.2 MB", "10.0 GB"). */
export function formatMB (bytes) {
  return Number.isFinite(bytes) ? mbText(bytes) : NO_VALUE
}

/** ms since the epoch as HH:MM:SS, local time. */
export function formatClock (time) {
  if (!Number.isFinite(time)) return ''
  const d = new Date(time)
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map(function twoDigits (n) {
    return String(n).padStart(2, '0')
  }).join(':')
}

export function formatMs (ms) {
  if (!Number.isFinite(ms)) return NO_VALUE
  return `${ms >= 100 ? Math.round(ms) : Math.round(ms * 10) / 10} ms`
}

export function formatCount (n) {
  if (n === null || n === undefined || n === '') return NO_VALUE
  const value = typeof n === 'number' ? n : Number(n)
  if (!Number.isFinite(value)) return String(n)
  return value.toLocaleString('en-US')
}

/** A time stamp usable in a file name: 2026-11-22T10-15-00. */
export function fileStamp (time = Date.now()) {
  return new Date(time).toISOString().slice(0, 19).replaceAll(':', '-')
}

/** Steps between clock ticks, in seconds: round ones a reader counts in. */
const CLOCK_STEPS = Object.freeze([1, 2, 5, 10, 15, 30, 60, 120, 300, 600])

/** Clock ticks from `min` to `max` (ms) at whole steps, as many as fit `width` px with `labelPx` px labels. */
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
