/**
 * Stage 1, negotiate (lib/ingest/README.md): the headers and the query,
 * before a byte of the body is read. Which bodies a route accepts, how many
 * gzip layers to peel, which JSON format to expect, and a Content-Length
 * already past the compressed limit: 415, 400 and 413 with nothing read.
 * /bad, /good and the textbook route read gzip bodies (`negotiateBody`);
 * /express-json reads what express.json reads (`negotiateJson`).
 */
import { FORMATS } from '../json/records.js'
import {
  badParameter, charsetUnsupported, compressedTooLarge, expressJsonEncodingUnsupported, expressJsonMediaUnsupported,
  inflatedTooLarge, unsupportedEncoding, unsupportedMediaType, tooManyLayers
} from '../errors/index.js'

const GZIP_TYPES = ['application/octet-stream', 'application/gzip', 'application/x-gzip']
const JSON_TYPES = ['application/json', 'application/x-ndjson']
const ACCEPTED_TYPES = Object.freeze([...GZIP_TYPES, ...JSON_TYPES])

/**
 * The headers and query of a gzip body: its layers and format, and its
 * Content-Length against the compressed limit.
 * @param {{ formats: readonly string[], formatHint?: string }} [route] the formats the route reads:
 *   another one, asked for or named by the media type, is 400 with `formatHint`
 * @returns {{ layers: number, format: 'json'|'array'|'ndjson'|null }} format null = detect
 * @throws {LabError} 415 for media types and encodings, 400 for a bad ?format=, 413 for a Content-Length past the limit
 */
export function negotiateBody (req, limits, route = { formats: FORMATS }) {
  const mediaType = String(req.headers['content-type'] || '').split(';')[0].trim().toLowerCase()
  let layers
  if (GZIP_TYPES.includes(mediaType)) layers = 1
  else if (JSON_TYPES.includes(mediaType)) layers = 0
  else throw unsupportedMediaType(req.headers['content-type'], ACCEPTED_TYPES)

  const encoding = String(req.headers['content-encoding'] || '')
  for (const token of encoding.split(',')) {
    const name = token.trim().toLowerCase()
    if (name === '' || name === 'identity') continue
    if (name === 'gzip' || name === 'x-gzip') layers++
    else throw unsupportedEncoding(token.trim())
  }
  if (layers === 0) throw unsupportedMediaType(req.headers['content-type'] + ' without Content-Encoding: gzip', ACCEPTED_TYPES)
  if (layers > limits.layers) {
    throw tooManyLayers(limits.layers, layers)
  }

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
  return { layers, format }
}

/** 413 before reading a byte when Content-Length already says too much. */
function checkContentLength (req, limit) {
  const length = Number(req.headers['content-length'])
  if (Number.isFinite(length) && length > limit) throw compressedTooLarge(limit, length)
}

/** The formats one JSON document can have: NDJSON is many, and JSON.parse refuses it. */
export const EXPRESS_JSON_FORMATS = Object.freeze(['json', 'array'])
const EXPRESS_JSON_FORMAT_HINT = 'json | array (express.json parses one JSON document: NDJSON goes to /bad or /good)'

/**
 * The headers and query, before a byte is read: what express.json would
 * skip or refuse is refused here with the lab's words.
 * @returns {{ gzip: boolean, format: 'json'|'array'|null }} format null = detect, as /bad does
 * @throws {LabError} 415, 400, 413
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
  // body-parser reads the header as it is, lower-cased: "gzip" inflates, "identity" (or none) does not
  const encoding = String(req.headers['content-encoding'] ?? 'identity').toLowerCase()
  if (encoding !== 'gzip' && encoding !== 'identity') throw expressJsonEncodingUnsupported(req.headers['content-encoding'])
  const gzip = encoding === 'gzip'

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
  if (!gzip && Number.isFinite(length) && length > limits.inflated) throw inflatedTooLarge(limits.inflated, length)
  return { gzip, format }
}
