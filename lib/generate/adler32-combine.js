// Adler-32 without the bytes, for a zlib-format (RFC 1950) bomb of repeated blocks; Node's zlib computes none,
// so the bytes a bomb does hold are summed here too.
// Adler-32 is two sums modulo 65521: a = 1 + the bytes, b = the sum of every a along the way.
// Appending B to A: a = aA + aB - 1, b = bA + bB + |B| * (aA - 1), all mod 65521 (zlib's adler32_combine).

import { repeatByDoubling } from './crc32-combine.js'

const BASE = 65521
/** Bytes summed before reducing: zlib's NMAX, the most that cannot overflow 2^53 here by far. */
const NMAX = 5552

/** The Adler-32 of `buffer`, continuing from `adler` (1 for a fresh checksum). */
export function adler32 (buffer, adler = 1) {
  let a = adler & 0xFFFF
  let b = (adler >>> 16) & 0xFFFF
  for (let at = 0; at < buffer.length; at += NMAX) {
    const end = Math.min(buffer.length, at + NMAX)
    for (let k = at; k < end; k++) {
      a += buffer[k]
      b += a
    }
    a %= BASE
    b %= BASE
  }
  return (b * 65536 + a) >>> 0
}

/**
 * The Adler-32 of A followed by B, from adler(A), adler(B) and B's length.
 * @param {number} lengthB bytes (any safe integer: a terabyte is fine)
 */
export function adler32Combine (adlerA, adlerB, lengthB) {
  const rem = lengthB % BASE
  const aA = adlerA & 0xFFFF
  const bA = (adlerA >>> 16) & 0xFFFF
  const aB = adlerB & 0xFFFF
  const bB = (adlerB >>> 16) & 0xFFFF
  const a = (aA + aB + BASE - 1) % BASE
  const b = ((rem * aA) % BASE + bA + bB + BASE - rem) % BASE
  return (b * 65536 + a) >>> 0
}

/** The Adler-32 of `times` copies of a block. */
export function adler32Repeat (adler, length, times) {
  return repeatByDoubling(adler32Combine, 1, adler, length, times)
}
