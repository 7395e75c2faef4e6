// Errors about a request's body: sizes, media type and encoding, framing, JSON, records, slow bodies.
import { LabError, createError } from './lab-error.js'
import { MiB } from '../util/units.js'

export function compressedTooLarge (limit, received) {
  return createError(413, 'entity.too.large',
    `request body is larger than the ${limit}-byte limit on compressed bytes`,
    { limit, received })
}

export function inflatedTooLarge (limit, received) {
  return createError(413, 'inflated.too.large',
    `inflated body passed the ${limit}-byte limit`,
    { limit, received })
}

export function unsupportedMediaType (contentType, allowed) {
  return createError(415, 'media.unsupported',
    `unsupported media type "${contentType || '(none)'}": send gzip, or JSON/NDJSON with Content-Encoding: gzip`,
    { contentType: contentType || null, allowed })
}

/**
 * 415 encoding.unsupported: a Content-Encoding the route does not decode, or one this Node does not
 * (`since`: the Node version that does, zstd's 22.15).
 */
export function unsupportedEncoding (encoding, { decoded = ['gzip', 'deflate', 'br'], since = null } = {}) {
  const why = since === null
    ? `the lab decodes ${decoded.join(', ')} (or identity for a gzip media type)`
    : `this Node (${process.version}) cannot decode it: Node ${since} and later can (the lab decodes ${decoded.join(', ')} here)`
  const figures = { encoding, allowed: decoded, since }
  return createError(415, 'encoding.unsupported', `unsupported Content-Encoding "${encoding}": ${why}`, figures)
}

export function gzipInvalid (cause, compressedBytes) {
  return createError(400, 'gzip.invalid',
    `body is not valid gzip: ${cause}`,
    { cause, compressedBytes })
}

/** 400 encoding.invalid: a deflate, br or zstd layer zlib could not decode. */
export function encodingInvalid (codec, cause, compressedBytes) {
  return createError(400, 'encoding.invalid', `body is not valid ${codec}: ${cause}`, { codec, cause, compressedBytes })
}

/** 400 encoding.truncated: a deflate, br or zstd layer that ended before its end. */
export function encodingTruncated (codec, compressedBytes) {
  return createError(400, 'encoding.truncated', `${codec} stream ended before its end (truncated upload?)`, { codec, compressedBytes })
}

/**
 * 400 encoding.trailing.data: a byte after the end of a deflate or br layer's stream, or after a zstd
 * layer's frame that starts no frame (lib/ingest/gzip-framing.js).
 */
export function encodingTrailingData (codec, offset, value) {
  const rule = codec === 'zstd'
    ? 'after the end of a frame: a zstd layer is frames back to back and nothing after them'
    : `after the end of its stream: a ${codec} layer is one stream and nothing after it`
  return createError(400, 'encoding.trailing.data',
    `byte ${offset} of the ${codec} layer is 0x${value.toString(16).padStart(2, '0')} ${rule}`,
    { codec, offset, value })
}

/** 413 encoding.frames.too.many: a zstd layer with more frames than the lab decodes (lib/ingest/zstd-frame.js). */
export function tooManyFrames (codec, limit, offset) {
  return createError(413, 'encoding.frames.too.many',
    `the ${codec} layer starts frame ${limit + 1} at byte ${offset}: ` +
    `a layer may hold at most ${limit} frames (zlib decodes each in a write of its own)`,
    { codec, limit, offset })
}

/** A byte other than zero after a body's gzip members ended in padding (lib/ingest/gzip-framing.js). */
export function gzipTrailingData (offset, value) {
  return createError(400, 'gzip.trailing.data',
    `byte ${offset} of the gzip body is 0x${value.toString(16).padStart(2, '0')} after zero padding: ` +
    'a gzip body is members back to back, then only zero bytes',
    { offset, value })
}

export function gzipTruncated (compressedBytes) {
  return createError(400, 'gzip.truncated',
    'gzip stream ended before its end marker (truncated upload?)',
    { compressedBytes })
}

export function jsonInvalid (reason, offset) {
  return createError(422, 'json.invalid',
    `body is not valid JSON: ${reason}${offset >= 0 ? ` (at byte ${offset})` : ''}`,
    { reason, offset })
}

/** 413 encoding.too.many: more encoding layers (a gzip media type plus each `Content-Encoding`) than `limits.layers`. */
export function tooManyLayers (limit, received) {
  return createError(413, 'encoding.too.many', `more than ${limit} encoding layers`, { limit, received })
}

export function requestAborted (received) {
  return createError(400, 'request.aborted', 'client closed the connection before the body ended', { received })
}

/** A zlib error as a LabError: gzip's own types for a gzip layer, `encoding.*` naming the codec for the others. */
export function fromZlibError (err, compressedBytes, codec = 'gzip') {
  if (err instanceof LabError) return err
  const gzip = codec === 'gzip'
  if (err.code === 'Z_BUF_ERROR') return gzip ? gzipTruncated(compressedBytes) : encodingTruncated(codec, compressedBytes)
  // brotli's and zstd's own error codes (ERR__ERROR_FORMAT_..., ZSTD_error_...) say the same as zlib's Z_DATA_ERROR
  const corrupt = err.code === 'Z_DATA_ERROR' || err.code === 'Z_STREAM_ERROR' || err.code === 'Z_NEED_DICT' ||
    /^ERR__ERROR_|^ZSTD_error_/.test(err.code ?? '')
  if (err.code === 'ZSTD_error_frameParameter_windowTooLarge') {
    const why = `a frame's window is over 8 MiB, the most RFC 9659 lets the zstd content coding use (zstd: ${err.message})`
    return encodingInvalid(codec, why, compressedBytes)
  }
  if (corrupt) return gzip ? gzipInvalid(err.message, compressedBytes) : encodingInvalid(codec, err.message, compressedBytes)
  return null
}

export function recordTooLarge (limit, received, offset) {
  return createError(413, 'record.too.large',
    `a single JSON value passed the ${limit}-byte limit`,
    { limit, received, offset })
}

export function shapeInvalid (format, offset) {
  if (format === 'array') {
    return createError(422, 'json.shape.invalid',
      'format "array" needs a top-level JSON array (or send ?format=json or ?format=ndjson)', { format, offset })
  }
  return createError(422, 'json.items.missing',
    'format "json" needs a top-level object with an "items" array (or send ?format=array or ?format=ndjson)', { format, offset })
}

export function ratioTooLarge (limit, received, inflatedBytes, compressedBytes) {
  return createError(413, 'ratio.too.large',
    `inflated body grew more than ${limit} times its compressed size (a zip bomb?)`,
    { limit, received: Math.round(received), inflatedBytes, compressedBytes })
}

export function tooDeep (limit, offset) {
  return createError(422, 'json.too.deep',
    `JSON nests deeper than ${limit} arrays and objects`,
    { limit, offset })
}

/** 413 record.too.dense: JSON.parse of one record (or batch) is projected past what a parse thread may hold. */
export function recordTooDense (limit, projected, bytes, offset) {
  const cost = projected === null ? 'ran its parse thread out of heap' : `would take about ${Math.ceil(projected / MiB)} MiB to parse`
  return createError(413, 'record.too.dense',
    `one record of ${bytes} bytes ${cost}, more than the ` +
    `${Math.round(limit / MiB)} MiB a parse thread may hold (many tiny values cost far more than their text): ` +
    'split it into smaller records',
    { limit, projected, bytes, offset })
}

export function bodyTimeout (ms, received) {
  return createError(408, 'request.timeout', `no body bytes for ${ms} ms: the upload stalled`, { timeoutMs: ms, received })
}

/** 408 request.too.slow: a body under `limits.minBodyRate` over the last `windowMs` the server was reading. */
export function bodyTooSlow (limit, rate, received, elapsedMs, windowMs) {
  return createError(408, 'request.too.slow',
    `the body arrived at ${Math.round(rate)} bytes/s over the last ${windowMs} ms, under the ${limit} bytes/s minimum`,
    { limit, rate: Math.round(rate), windowMs, received, elapsedMs })
}

/** 413 entity.too.large: an upload passed `upload.limit` (experiments/upload/server.js). */
export function uploadTooLarge (limit, received) {
  return createError(413, 'entity.too.large', `upload is larger than the ${limit}-byte limit`, { limit, received })
}

/** What POST /express-json reads: express.json's own media type, gzip by `Content-Encoding`. */
const EXPRESS_JSON_MEDIA = Object.freeze(['application/json'])

/**
 * 415 media.unsupported on POST /express-json: `express.json` reads `application/json` only (its
 * `type`). A gzip file sent as such is what /bad and /good take; NDJSON is not one JSON document.
 */
export function expressJsonMediaUnsupported (contentType) {
  const media = String(contentType || '').split(';')[0].trim().toLowerCase()
  const why = media === 'application/x-ndjson'
    ? 'express.json parses one JSON document, not NDJSON: send NDJSON to /bad or /good'
    : 'send the JSON as Content-Type: application/json, gzipped with Content-Encoding: gzip (a gzip file as it is goes to /bad or /good)'
  return createError(415, 'media.unsupported',
    `POST /express-json reads what express.json reads, not "${contentType || '(none)'}": ${why}`,
    { contentType: contentType || null, allowed: EXPRESS_JSON_MEDIA })
}

/** 415 encoding.unsupported on POST /express-json: one gzip layer or none, named as body-parser reads the header. */
export function expressJsonEncodingUnsupported (encoding, allowed = ['gzip', 'deflate', 'br', 'identity']) {
  return createError(415, 'encoding.unsupported',
    `unsupported Content-Encoding "${encoding}" on POST /express-json: ` +
    `send one of ${allowed.join(', ')} (one layer), as express.json reads them`,
    { encoding, allowed })
}

/** 415 charset.unsupported: a JSON body in a charset other than UTF-8 (POST /express-json; body-parser's type). */
export function charsetUnsupported (charset) {
  return createError(415, 'charset.unsupported',
    `unsupported charset "${charset}": the lab reads JSON as UTF-8`,
    { charset, allowed: ['utf-8'] })
}
