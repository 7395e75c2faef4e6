/**
 * Byte sizes as people type them ("500MB", "1.5GiB"), the byte units, rounding, and bytes and durations as the lab prints them:
 * the one set for the server, the command-line tools, the grader and the page (served as /lib/util/units.js), so it uses nothing
 * of Node.
 */

export const KiB = 1024
export const MiB = 1024 * KiB
export const GiB = 1024 * MiB
/** A decimal megabyte, as body sizes and rates are given ("100MB", MB/s). */
export const MB = 1e6

/** What a formatter writes for a figure that is missing (null, undefined, NaN). */
const NOT_A_FIGURE = 'n/a'

const MULTIPLIERS = Object.freeze({
  b: 1,
  kb: 1e3,
  mb: MB,
  gb: 1e9,
  kib: KiB,
  mib: MiB,
  gib: GiB
})

const BYTE_SIZE = /^(\d+(?:\.\d+)?)\s*([kmg]i?b|b)?$/i

/**
 * Parse a byte size: a plain integer ("1048576") or a number with a unit, decimal (B, KB, MB, GB: powers of 1000) or binary (KiB,
 * MiB, GiB: powers of 1024), case-insensitive, decimals allowed with a unit ("1.5GB").
 * @returns {number} a safe integer count of bytes
 * @throws {TypeError} when the text is not a byte size
 */
export function parseByteSize (text) {
  if (typeof text !== 'string') throw new TypeError(`byte size must be a string, got ${typeof text}`)
  const match = BYTE_SIZE.exec(text.trim())
  if (match === null) throw new TypeError(`"${text}" is not a byte size (try 1048576, 500MB or 1.5GiB)`)
  const [, number, unit = 'b'] = match
  const multiplier = MULTIPLIERS[unit.toLowerCase()]
  if (multiplier === 1 && number.includes('.')) {
    throw new TypeError(`"${text}" is not a whole number of bytes`)
  }
  const bytes = Math.round(Number(number) * multiplier)
  if (!Number.isSafeInteger(bytes)) throw new TypeError(`"${text}" is too large a byte size`)
  return bytes
}

/**
 * A number rounded to 1/scale (scale 10: tenths, 100: hundredths); null for anything that is not a finite number, so a missing
 * figure stays missing in JSON.
 */
export function round (value, scale = 1) {
  return typeof value === 'number' && Number.isFinite(value) ? Math.round(value * scale) / scale : null
}

/** Format a byte count with binary units and one decimal: "512 B", "1.5 MiB"; "n/a" for no count. */
export function formatBytes (bytes) {
  if (!Number.isFinite(bytes)) return NOT_A_FIGURE
  const abs = Math.abs(bytes)
  if (abs < KiB) return `${bytes} B`
  if (abs < MiB) return `${(bytes / KiB).toFixed(1)} KiB`
  if (abs < GiB) return `${(bytes / MiB).toFixed(1)} MiB`
  return `${(bytes / GiB).toFixed(1)} GiB`
}

/**
 * Format a byte count in MiB whatever its size, so figures line up in tables: "12.3 MiB"; "n/a" for no count.
 * @param {{ digits?: number, unit?: boolean }} [how] decimals (1), and whether to write " MiB" (a table's heading may say it)
 */
export function formatMiB (bytes, { digits = 1, unit = true } = {}) {
  if (!Number.isFinite(bytes)) return NOT_A_FIGURE
  const text = (bytes / MiB).toFixed(digits)
  return unit ? `${text} MiB` : text
}

/**
 * A memory size as a budget is given: a round size stays round ("512 MiB", "1 GiB"), any other has two decimals in GiB ("1.02
 * GiB") or one in MiB ("270.4 MiB").
 */
export function formatMemory (bytes) {
  if (!Number.isFinite(bytes)) return NOT_A_FIGURE
  if (bytes >= GiB) return bytes % GiB === 0 ? `${bytes / GiB} GiB` : `${(bytes / GiB).toFixed(2)} GiB`
  return bytes % MiB === 0 ? `${bytes / MiB} MiB` : `${(bytes / MiB).toFixed(1)} MiB`
}

/**
 * A byte count in decimal units with one decimal, as body sizes are given ("100MB", "10GB"): "26.2 MB", "10.0 GB", "512.0 KB";
 * "n/a" for no count.
 */
export function formatDecimalBytes (bytes) {
  if (!Number.isFinite(bytes)) return NOT_A_FIGURE
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(1)} GB`
  if (bytes >= 1e6) return `${(bytes / 1e6).toFixed(1)} MB`
  return `${(bytes / 1e3).toFixed(1)} KB`
}

/**
 * A body size in decimal MB, as the page's tables give it: three decimals under 0.1 MB, so a small bomb's gzip still reads
 * ("0.042 MB"), one from there ("26.2 MB"), GB from 1e9; "n/a" for no count.
 */
export function formatMB (bytes) {
  if (!Number.isFinite(bytes)) return NOT_A_FIGURE
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(1)} GB`
  return `${(bytes / MB).toFixed(bytes < 1e5 ? 3 : 1)} MB`
}

/**
 * A time taken, as people read it: whole ms under a second ("850 ms"), seconds with one decimal from there ("1.5 s", "125.3 s");
 * "n/a" for no time.
 */
export function formatDuration (ms) {
  if (!Number.isFinite(ms)) return NOT_A_FIGURE
  return Math.abs(ms) < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`
}

/**
 * A latency in ms whatever its size, so figures compare in a list: one decimal under 100 ms ("12.5 ms"), whole ms with thousands
 * separators from there ("1,234 ms"); "n/a" for no time.
 */
export function formatMs (ms) {
  if (!Number.isFinite(ms)) return NOT_A_FIGURE
  return `${ms >= 100 ? Math.round(ms).toLocaleString('en') : ms.toFixed(1)} ms`
}

/** A long time as a stopwatch shows it, for progress and ETAs: "0:05", "12:34", "1:02:03". */
export function formatStopwatch (ms) {
  if (!Number.isFinite(ms)) return NOT_A_FIGURE
  const total = Math.round(ms / 1000)
  const h = Math.floor(total / 3600)
  const m = Math.floor(total / 60) % 60
  const s = String(total % 60).padStart(2, '0')
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`
}
