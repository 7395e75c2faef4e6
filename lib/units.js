/**
 * Byte sizes as people type them ("500MB", "1.5GiB") and as the lab prints them.
 */

const KiB = 1024
const MiB = 1024 * KiB
const GiB = 1024 * MiB

const MULTIPLIERS = Object.freeze({
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  kib: KiB,
  mib: MiB,
  gib: GiB
})

const BYTE_SIZE = /^(\d+(?:\.\d+)?)\s*([kmg]i?b|b)?$/i

/**
 * Parse a byte size: a plain integer ("1048576") or a number with a unit,
 * decimal (B, KB, MB, GB: powers of 1000) or binary (KiB, MiB, GiB: powers of 1024),
 * case-insensitive, decimals allowed with a unit ("1.5GB").
 * @param {string} text
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
 * Format a byte count with binary units and one decimal: "512 B", "1.5 MiB".
 * @param {number} bytes
 * @returns {string}
 */
export function formatBytes (bytes) {
  const abs = Math.abs(bytes)
  if (abs < KiB) return `${bytes} B`
  if (abs < MiB) return `${(bytes / KiB).toFixed(1)} KiB`
  if (abs < GiB) return `${(bytes / MiB).toFixed(1)} MiB`
  return `${(bytes / GiB).toFixed(1)} GiB`
}

/**
 * Format a byte count in MiB whatever its size, so figures line up in tables: "12.3 MiB".
 * @param {number} bytes
 * @returns {string}
 */
export function formatMiB (bytes) {
  return `${(bytes / MiB).toFixed(1)} MiB`
}
