/**
 * The content codings the ingest routes decode (RFC 9110, 8.4.1): gzip,
 * deflate (the zlib format, as HTTP means it and body-parser reads it), br,
 * and zstd where this Node's zlib has it (22.15 and later). Each layer of a
 * body is one of them; stage 4 (lib/ingest/gzip-framing.js) decodes them
 * one after another, whole or streamed, under the same limits.
 */
import zlib from 'node:zlib'
import { ZstdFrames, ZSTD_WINDOW_LOG_MAX } from './zstd-frame.js'

export { ZSTD_WINDOW_LOG_MAX }

/**
 * @typedef {{ name: 'gzip'|'deflate'|'br'|'zstd', Stream: (new (options?: object) => import('node:stream').Transform)|null,
 *   decodeSync: ((buffer: Buffer, options: object) => { buffer: Buffer, engine: { bytesWritten: number } })|null,
 *   options: object, padding: boolean, Frames: (new (onFrameEnd?: (end: number) => void) => import('./zstd-frame.js').ZstdFrames)|null, since: string|null }} Codec
 *   `Stream` and `decodeSync` are null where this Node cannot decode it; `options`: the decoder's
 *   own, under the caller's; `padding`: zero bytes may follow
 *   the end (gzip's rule); `Frames`: where a layer is frames that the codec's stream decodes only one
 *   write at a time (Node's zstd stream drops the rest of a write after a frame), what cuts them apart;
 *   `since`: the Node version that decodes it, where that is not every Node the lab runs on
 */

const NO_OPTIONS = Object.freeze({})

/** @type {Readonly<Record<string, Codec>>} */
export const CODECS = Object.freeze({
  gzip: Object.freeze({ name: 'gzip', Stream: zlib.Gunzip, decodeSync: zlib.gunzipSync, options: NO_OPTIONS, padding: true, Frames: null, since: null }),
  deflate: Object.freeze({ name: 'deflate', Stream: zlib.Inflate, decodeSync: zlib.inflateSync, options: NO_OPTIONS, padding: false, Frames: null, since: null }),
  br: Object.freeze({ name: 'br', Stream: zlib.BrotliDecompress, decodeSync: zlib.brotliDecompressSync, options: NO_OPTIONS, padding: false, Frames: null, since: null }),
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

/**
 * Content-Encoding tokens, lower-cased, and the codec each names (`x-gzip` is gzip, RFC 9110 8.4.1.3).
 * A Map: a token is a client's word, and on a plain object `constructor` or `__proto__` would name
 * Object.prototype's.
 */
const TOKENS = new Map([['gzip', 'gzip'], ['x-gzip', 'gzip'], ['deflate', 'deflate'], ['br', 'br'], ['zstd', 'zstd']])

/**
 * The codec a Content-Encoding token names, or null for one the lab does not know.
 * @param {string} token
 * @returns {Codec|null}
 */
export function codecNamed (token) {
  return codecByName(TOKENS.get(token.trim().toLowerCase()))
}

/**
 * The codec of that name (`gzip`, `deflate`, `br`, `zstd`), or null for any other word.
 * @param {string|undefined} name
 * @returns {Codec|null}
 */
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
