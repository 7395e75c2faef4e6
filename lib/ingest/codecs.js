/**
 * The content codings the ingest routes decode (RFC 9110, 8.4.1): gzip, deflate (the zlib format, as
 * HTTP means it and body-parser reads it), br, and zstd where this Node's zlib has it. Stage 4
 * (gzip-framing.js) decodes each layer, whole or streamed, under the same limits.
 */
import zlib from 'node:zlib'
import { ZstdFrames, ZSTD_WINDOW_LOG_MAX } from './zstd-frame.js'

export { ZSTD_WINDOW_LOG_MAX }

/**
 * @typedef {object} Codec `Stream` and `decodeSync` are null where this Node cannot decode it; `options`:
 * the decoder's own, under the caller's; `padding`: zero bytes may follow the end (gzip's rule); `Frames`:
 * for a codec whose stream decodes one frame a write (Node's zstd drops the rest of a write after a
 * frame), what cuts them apart; `since`: the Node version that decodes it, where not every Node does.
 */

const NO_OPTIONS = Object.freeze({})

/** A codec every Node the lab runs on decodes, with its decoder's defaults. */
function inflater (name, Stream, decodeSync, padding) {
  return Object.freeze({ name, Stream, decodeSync, options: NO_OPTIONS, padding, Frames: null, since: null })
}

/** @type {Readonly<Record<string, Codec>>} */
export const CODECS = Object.freeze({
  gzip: inflater('gzip', zlib.Gunzip, zlib.gunzipSync, true),
  deflate: inflater('deflate', zlib.Inflate, zlib.inflateSync, false),
  br: inflater('br', zlib.BrotliDecompress, zlib.brotliDecompressSync, false),
  zstd: Object.freeze({
    name: 'zstd',
    Stream: zlib.ZstdDecompress ?? null,
    decodeSync: zlib.zstdDecompressSync ?? null,
    options: zlib.constants.ZSTD_d_windowLogMax === undefined
      ? NO_OPTIONS
      : Object.freeze({ params: Object.freeze({ [zlib.constants.ZSTD_d_windowLogMax]: ZSTD_WINDOW_LOG_MAX }) }),
    padding: false,
    Frames: ZstdFrames,
    since: '22.15.0'
  })
})

// Content-Encoding tokens, lower-cased (`x-gzip` is gzip, RFC 9110 8.4.1.3). A Map: a token is a client's
// word, and on a plain object `constructor` or `__proto__` would name Object.prototype's.
const TOKENS = new Map([['gzip', 'gzip'], ['x-gzip', 'gzip'], ['deflate', 'deflate'], ['br', 'br'], ['zstd', 'zstd']])

/** The codec a Content-Encoding token names, or null for one the lab does not know. */
export function codecNamed (token) {
  return codecByName(TOKENS.get(token.trim().toLowerCase()))
}

/** The codec of that name (`gzip`, `deflate`, `br`, `zstd`), or null for any other word. */
export function codecByName (name) {
  return typeof name === 'string' && Object.hasOwn(CODECS, name) ? CODECS[name] : null
}

/** Whether this Node decodes `codec`. */
export function decodes (codec) {
  return codec.Stream !== null
}

/** The codecs this Node decodes, by name. */
export function decodedHere () {
  return Object.values(CODECS).filter(decodes).map(function nameOf (codec) { return codec.name })
}
