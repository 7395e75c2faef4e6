/**
 * Stage 1, negotiate (lib/ingest/README.md): headers and query, before a byte of the body is read.
 * Which bodies a route accepts, which encoding layers to peel (codecs.js), which JSON format to
 * expect, a Content-Length past the compressed limit: 415, 400 and 413 with nothing read. /bad,
 * /good and the textbook route read encoded bodies (`negotiateBody`); /express-json what express.json
 * reads (`negotiateJson`).
 */
import { FORMATS } from '../json/records.js'
import { CODECS, codecByName, codecNamed, decodedHere, decodes } from './codecs.js'
import {
  badParameter, charsetUnsupported, compressedTooLarge, expressJsonEncodingUnsupported, expressJsonMediaUnsupported,
  inflatedTooLarge, unsupportedEncoding, unsupportedMediaType, tooManyLayers
} from '../errors/index.js'

const GZIP_TYPES = ['application/octet-stream', 'application/gzip', 'application/x-gzip']
const JSON_TYPES = ['application/json', 'application/x-ndjson']
const ACCEPTED_TYPES = Object.freeze([...GZIP_TYPES, ...JSON_TYPES])

/**
 * An encoded body's layers and format. A gzip media type is a gzip layer of its own, under the
 * `Content-Encoding` names in the order applied (RFC 9110, 8.4): the codecs come back in decoding order.
 * A format the route does not read (asked for, or named by the media type) is 400 with `route.formatHint`;
 * `format` null: detect.
 */
export function negotiateBody (req, limits, route = { formats: FORMATS }) {
  const mediaType = String(req.headers['content-type'] || '').split(';')[0].trim().toLowerCase()
  const applied = []
  if (GZIP_TYPES.includes(mediaType)) applied.push(CODECS.gzip)
  else if (!JSON_TYPES.includes(mediaType)) throw unsupportedMediaType(req.headers['content-type'], ACCEPTED_TYPES)

  const encoding = String(req.headers['content-encoding'] || '')
  for (const token of encoding.split(',')) {
    const name = token.trim().toLowerCase()
    if (name === '' || name === 'identity') continue
    applied.push(decodableCodec(token))
    // counted as they come: a header of a thousand names is refused at the limit, not parsed to its end
    if (applied.length > limits.layers) throw tooManyLayers(limits.layers, applied.length)
  }
  if (applied.length === 0) throw unsupportedMediaType(`${req.headers['content-type']} without a Content-Encoding`, ACCEPTED_TYPES)

  let format = null
  const asked = req.query?.format
  if (asked !== undefined) {
    if (typeof asked !== 'string' || !FORMATS.includes(asked)) throw badParameter('format', asked, FORMATS.join(' | '))
    format = asked
  } else if (mediaType === 'application/x-ndjson') {
    format = 'ndjson'
  }
  if (format !== null && !route.formats.includes(format)) throw badParameter('format', format, route.formatHint)
  checkContentLength(req, limits.compressed)
  return { codecs: applied.reverse(), format }
}

/** The codec a Content-Encoding token names; 415 for one unknown, or (zstd) past this Node. */
function decodableCodec (token) {
  const codec = codecNamed(token)
  if (codec === null) throw unsupportedEncoding(token.trim(), { decoded: decodedHere() })
  if (!decodes(codec)) throw unsupportedEncoding(token.trim(), { decoded: decodedHere(), since: codec.since })
  return codec
}

/** 413 before reading a byte when Content-Length already says too much. */
function checkContentLength (req, limit) {
  const length = Number(req.headers['content-length'])
  if (Number.isFinite(length) && length > limit) throw compressedTooLarge(limit, length)
}

/** The codings body-parser 2.4 inflates (`x-gzip` is not one: it reads the header as it is). */
const EXPRESS_JSON_CODINGS = Object.freeze(['gzip', 'deflate', 'br', 'zstd'])

/** The formats one JSON document can have: NDJSON is many, and JSON.parse refuses it. */
export const EXPRESS_JSON_FORMATS = Object.freeze(['json', 'array'])
const EXPRESS_JSON_FORMAT_HINT = 'json | array (express.json parses one JSON document: NDJSON goes to /bad or /good)'

/**
 * What express.json would skip or refuse, refused here in the lab's words. body-parser 2 reads one
 * coding: gzip, deflate, br, and zstd where zlib has it. `encoding` null: identity; `format` null: detect.
 */
export function negotiateJson (req, limits) {
  const contentType = req.headers['content-type']
  const [media, ...parameters] = String(contentType || '').split(';')
  if (media.trim().toLowerCase() !== 'application/json') throw expressJsonMediaUnsupported(contentType)
  for (const parameter of parameters) {
    const [name, value = ''] = parameter.split('=')
    if (name.trim().toLowerCase() !== 'charset') continue
    const charset = value.trim().replace(/^"(.*)"$/, '$1').toLowerCase()
    if (charset !== 'utf-8' && charset !== 'utf8') throw charsetUnsupported(charset)
  }
  // body-parser reads the header as it is, lower-cased: one coding it knows decodes, "identity" (or none) does not
  const name = String(req.headers['content-encoding'] ?? 'identity').toLowerCase()
  const allowed = [...EXPRESS_JSON_CODINGS.filter(function decodedByThisNode (c) { return decodes(codecByName(c)) }), 'identity']
  if (!allowed.includes(name)) {
    const codec = codecByName(name)
    if (codec !== null && !decodes(codec)) throw unsupportedEncoding(name, { decoded: allowed, since: codec.since })
    throw expressJsonEncodingUnsupported(req.headers['content-encoding'], allowed)
  }
  const encoding = name === 'identity' ? null : name

  let format = null
  const asked = req.query?.format
  if (asked !== undefined) {
    if (typeof asked !== 'string' || !EXPRESS_JSON_FORMATS.includes(asked)) {
      throw badParameter('format', asked, EXPRESS_JSON_FORMAT_HINT)
    }
    format = asked
  }

  checkContentLength(req, limits.compressed)
  const length = Number(req.headers['content-length'])
  // an identity body is its inflated bytes: raw-body refuses it on Content-Length alone, and so does the lab
  if (encoding === null && Number.isFinite(length) && length > limits.inflated) throw inflatedTooLarge(limits.inflated, length)
  return { encoding, format }
}
