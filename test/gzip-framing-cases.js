/**
 * The cases of the one gzip framing rule (lib/ingest/gzip-framing.js,
 * docs/errors.md "What ends a gzip body"), each with its verdict, for the
 * specs that hold the rule in process and over HTTP.
 */
import zlib from 'node:zlib'

const HEAD = '{"items":[{"id":1,"s":"caf\\u00e9"}'
const TAIL = ',{"id":2,"n":[1.5,2]}]}'
const WHOLE = HEAD + TAIL
export const ONE = zlib.gzipSync(WHOLE)
export const FIRST = zlib.gzipSync(HEAD)
export const SECOND = zlib.gzipSync(TAIL)

/** Bytes from Buffers, byte arrays and latin1 strings, in order. */
export function bytes (...parts) {
  return Buffer.concat(parts.map(function toBuffer (p) { return typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p) }))
}

/** A copy of `buf` with the byte at `at` (from the end when negative) set to `value`. */
function withByte (buf, at, value) {
  const copy = Buffer.from(buf)
  copy[at < 0 ? copy.length + at : at] = value
  return copy
}

/**
 * [name, body, verdict]: a verdict is the inflated text, or the error type
 * (and the offset, for trailing data).
 */
export const CASES = Object.freeze([
  ['one member', ONE, { text: WHOLE }],
  ['two members', bytes(FIRST, SECOND), { text: WHOLE }],
  ['two members, then zero padding', bytes(FIRST, SECOND, [0, 0, 0, 0]), { text: WHOLE }],
  ['one member, one zero byte', bytes(ONE, [0]), { text: WHOLE }],
  ['one member, 512 zero bytes (a padded block)', bytes(ONE, Buffer.alloc(512)), { text: WHOLE }],
  ['a member, a zero byte, then a second member', bytes(FIRST, [0], SECOND), { type: 'gzip.trailing.data', offset: FIRST.length + 1 }],
  ['a member, four zero bytes, then garbage', bytes(ONE, [0, 0, 0, 0], 'xyz'), { type: 'gzip.trailing.data', offset: ONE.length + 4 }],
  ['a member, zeros, then one 0x01 at the very end', bytes(ONE, Buffer.alloc(9), [1]), { type: 'gzip.trailing.data', offset: ONE.length + 9 }],
  ['a member, then garbage', bytes(ONE, 'garbage'), { type: 'gzip.invalid' }],
  ['a member, then a lone 0x1f', bytes(ONE, [0x1f]), { type: 'gzip.truncated' }],
  ['a member, then a gzip header only', bytes(ONE, FIRST.subarray(0, 10)), { type: 'gzip.truncated' }],
  ['a member, then a corrupt second member', bytes(FIRST, withByte(SECOND, -8, SECOND[SECOND.length - 8] ^ 0xff)), { type: 'gzip.invalid' }],
  ['a truncated member', ONE.subarray(0, ONE.length - 5), { type: 'gzip.truncated' }],
  ['a CRC mismatch', withByte(ONE, -8, ONE[ONE.length - 8] ^ 0xff), { type: 'gzip.invalid' }],
  ['an ISIZE mismatch', withByte(ONE, -1, ONE[ONE.length - 1] ^ 0x01), { type: 'gzip.invalid' }],
  ['zero bytes only', Buffer.alloc(20), { type: 'gzip.invalid' }],
  ['an empty body', Buffer.alloc(0), { type: 'gzip.truncated' }]
])

/** The body as two reads split at `at` (one read when `at` is an end). */
export function splitAt (body, at) {
  return [body.subarray(0, at), body.subarray(at)].filter(function nonEmpty (p) { return p.length > 0 })
}

/** Every way to cut `body` at `cuts` places (empty reads left out). */
export function * splits (body, cuts, from = 0) {
  if (cuts === 0) {
    if (from < body.length) yield [body.subarray(from)]
    else yield []
    return
  }
  for (let at = from; at <= body.length; at++) {
    for (const rest of splits(body, cuts - 1, at)) {
      yield at > from ? [body.subarray(from, at), ...rest] : rest
    }
  }
}
