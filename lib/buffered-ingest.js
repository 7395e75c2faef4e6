/**
 * The buffered ingest behind POST /bad. Wasteful on purpose: the whole
 * compressed body, the whole inflated Buffer, one string of all of it and
 * every parsed record are alive at once, so memory grows with body size
 * times concurrency. That is the lesson. It is still bounded (a limit on
 * compressed bytes, `maxOutputLength` on inflated bytes) so the lab
 * survives it.
 */
import zlib from 'node:zlib'
import { promisify } from 'node:util'
import { createHash } from 'node:crypto'
import getRawBody from 'raw-body'
import { negotiateBody, makeSummary, requestBody } from './ingest-common.js'
import { detectFormat, DETECT_BYTES } from './json-records.js'
import { createTally, tallyRecords, tallyNdjson, locateJsonError, toJsonError, finishTally } from './tally.js'
import { compressedTooLarge, inflatedTooLarge, fromZlibError, shapeInvalid } from './errors.js'

const gunzip = promisify(zlib.gunzip)

async function readWhole (req, limit, idleMs) {
  const body = requestBody(req, { idleMs })
  try {
    return await getRawBody(body, { limit, length: req.headers['content-length'] })
  } catch (err) {
    body.destroy() // discard the rest of the upload, for a while, so the reply gets through
    if (err.type === 'entity.too.large') throw compressedTooLarge(limit, err.received ?? err.length)
    throw err
  }
}

async function inflateWhole (body, layers, limit, unsafe) {
  let data = body
  // unsafe: no guard at all, as in the benchmark the lab reproduces (a zip bomb's demonstration)
  const guard = unsafe ? {} : { maxOutputLength: limit }
  for (let k = 0; k < layers; k++) {
    try {
      data = await gunzip(data, guard)
    } catch (err) {
      if (err.code === 'ERR_BUFFER_TOO_LARGE') throw inflatedTooLarge(limit, null)
      throw fromZlibError(err, body.length) ?? err
    }
  }
  return data
}

/** Parse everything at once and pick the records the format names. */
function parseWhole (inflated, format) {
  const tally = createTally()
  if (format === 'ndjson') {
    const error = tallyNdjson(inflated, tally)
    if (error) throw toJsonError(error)
    return tally
  }
  let text
  try {
    text = inflated.toString('utf8')
  } catch (err) {
    if (err.code === 'ERR_STRING_TOO_LONG') throw inflatedTooLarge(inflated.length, inflated.length)
    throw err
  }
  let doc
  try {
    doc = JSON.parse(text)
  } catch (err) {
    throw toJsonError(locateJsonError(inflated, 0, inflated.length, err))
  }
  let records
  if (format === 'array') records = Array.isArray(doc) ? doc : null
  else records = doc !== null && typeof doc === 'object' && !Array.isArray(doc) && Array.isArray(doc.items) ? doc.items : null
  if (records === null) throw shapeInvalid(format, 0)
  return tallyRecords(tally, records)
}

/**
 * Buffer, inflate, parse and summarise a request body.
 * @param {import('express').Request} req
 * @param {object} opts normalised app options
 * @returns {Promise<object>} the summary
 */
export async function ingestBuffered (req, opts) {
  const plan = negotiateBody(req, opts.limits)
  const body = await readWhole(req, opts.limits.compressed, opts.limits.bodyIdleMs)
  const inflated = await inflateWhole(body, plan.layers, opts.limits.inflated, opts.unsafeBad)
  const format = plan.format ?? detectFormat(inflated.subarray(0, DETECT_BYTES))
  const sha256 = createHash('sha256').update(inflated).digest('hex')
  const tally = parseWhole(inflated, format)
  return makeSummary({
    format,
    tally: finishTally(tally),
    inflatedBytes: inflated.length,
    compressedBytes: body.length,
    sha256
  })
}
