/**
 * The buffered ingest behind POST /bad. Wasteful on purpose: the whole
 * compressed body, the whole inflated Buffer, one string of all of it and
 * every parsed record are alive at once, so memory grows with body size
 * times concurrency. That is the lesson. It is still bounded (a limit on
 * compressed bytes, `maxOutputLength` on inflated bytes) so the lab
 * survives it, and admitted stage by stage within the memory budget
 * (lib/limits/admission.js): the compressed body as it arrives, the inflated body
 * before zlib makes it, the string and what JSON.parse builds from it
 * (lib/json/parse-cost.js) before they exist. What cannot fit is refused before
 * it is allocated. With `unsafeBad` none of this applies: the zip bomb's
 * demonstration needs the worker to die.
 */
import { createHash } from 'node:crypto'
import { isAscii } from 'node:buffer'
import { pipeline } from 'node:stream'
import getRawBody from 'raw-body'
import { negotiateBody, makeSummary, requestBody, countingStream } from './common.js'
import { ParseCostMeter } from '../json/parse-cost.js'
import { gunzipWhole } from './gzip-framing.js'
import { detectFormat, DETECT_BYTES } from '../json/records.js'
import { createTally, tallyRecords, tallyNdjson, locateJsonError, toJsonError, finishTally, findTooDeep } from '../parse/tally.js'
import { compressedTooLarge, inflatedTooLarge, fromZlibError, shapeInvalid, tooDeep } from '../errors/index.js'
import { formatMiB } from '../util/units.js'

/** A Reservation that admits everything: /bad with `unsafeBad`, or a lab without a budget. */
const UNGUARDED = Object.freeze({
  grow: function admitAll () {},
  tryGrow: function admitAll () { return null },
  shrink: function keepNothing () {},
  release: function releaseNothing () {},
  room: function unlimited () { return Infinity }
})

/**
 * The whole compressed body. raw-body keeps every chunk and then one
 * Buffer.concat of them: twice the body at the end, reserved as it arrives.
 */
async function readWhole (req, limit, idleMs, reservation) {
  const body = requestBody(req, { idleMs })
  const length = Number(req.headers['content-length'])
  const known = Number.isSafeInteger(length) && length >= 0 && length <= limit
  try {
    let source = body
    if (known) reservation.grow(2 * length, 'this body (compressed)')
    else {
      // chunked: reserve as the chunks arrive, and stop at the first that does not fit
      source = countingStream(function reserveChunk (bytes, chunk) {
        return reservation.tryGrow(2 * chunk.length, 'this body (compressed)')
      })
      // an error on either end destroys both; raw-body sees it on `source`
      pipeline(body, source, function counted () {})
    }
    const whole = await getRawBody(source, { limit, length: known ? length : undefined })
    // the chunks are garbage now: what stays is the one Buffer
    reservation.shrink(reservation.bytes - whole.length)
    return whole
  } catch (err) {
    body.destroy() // discard the rest of the upload, for a while, so the reply gets through
    if (err.type === 'entity.too.large') throw compressedTooLarge(limit, err.received ?? err.length)
    throw err
  }
}

/** The gzip trailer's ISIZE: the last member's inflated size mod 2^32, or null. A hint, never trusted. */
function declaredSize (gzip) {
  return gzip.length >= 18 ? gzip.readUInt32LE(gzip.length - 4) : null
}

/**
 * Inflate layer by layer, framed by lib/ingest/gzip-framing.js. zlib.gunzip gathers its output chunks and joins
 * them: twice the inflated size at the end. The reservation takes the
 * trailer's word for the size; `maxOutputLength` makes sure a body that lies
 * (a zip bomb) cannot pass what the budget had free when it started.
 */
async function inflateWhole (body, layers, limit, unsafe, reservation) {
  let data = body
  for (let k = 0; k < layers; k++) {
    // unsafe: no guard at all, as in the benchmark the lab reproduces (a zip bomb's demonstration)
    let cap = limit
    if (!unsafe) {
      cap = Math.min(limit, Math.floor(reservation.room() / 2))
      const hint = declaredSize(data)
      if (hint !== null && hint > cap && hint <= limit) {
        // honest gzip says its size: refuse before inflating a byte
        reservation.grow(2 * hint, 'this body (inflated)')
      }
      reservation.grow(2 * Math.min(hint ?? cap, cap), 'this body (inflated)')
    }
    const held = reservation.bytes
    try {
      data = await gunzipWhole(data, unsafe ? {} : { maxOutputLength: cap })
    } catch (err) {
      if (err.code === 'ERR_BUFFER_TOO_LARGE') {
        // the budget, not the limit, stopped it: refuse for the budget, with what it had grown to
        if (cap < limit) reservation.grow(reservation.room() + 1, `this body, inflated past the ${formatMiB(cap, { digits: 0 })} the budget had free,`)
        throw inflatedTooLarge(limit, null)
      }
      throw fromZlibError(err, body.length) ?? err
    }
    if (!unsafe) {
      // what is held now: the layer's input and its one output Buffer
      const want = (k === 0 ? body.length : 0) + data.length
      if (want > held) reservation.grow(want - held, 'this body (inflated)')
      else reservation.shrink(held - want)
    }
  }
  return data
}

/**
 * The nesting limit /good keeps (`limits.depth`), kept here too, so both
 * routes take the same documents: the first bracket past it is refused
 * unless the JSON is invalid before it (the first fault wins, as on /good).
 */
function checkDepth (inflated, maxDepth) {
  const deep = findTooDeep(inflated, 0, inflated.length, maxDepth)
  if (deep === -1) return
  const invalid = locateJsonError(inflated, 0, inflated.length, new Error('nesting'))
  if (invalid.offset >= 0 && invalid.offset < deep) throw toJsonError(invalid)
  throw tooDeep(maxDepth, deep)
}

/** Parse everything at once and pick the records the format names. */
function parseWhole (inflated, format, reservation, maxDepth) {
  const tally = createTally()
  const meter = new ParseCostMeter()
  meter.write(inflated)
  if (format === 'ndjson') {
    // a line at a time: the longest line is what JSON.parse holds at once, the whole is bounded by it
    reservation.grow(meter.result().heap, 'parsing this body')
    const error = tallyNdjson(inflated, tally, maxDepth)
    if (error) throw error.tooDeep ? tooDeep(maxDepth, error.offset) : toJsonError(error)
    return tally
  }
  checkDepth(inflated, maxDepth)
  // the string first (at most two bytes a byte), then, knowing its length, what JSON.parse builds from it
  const stringBound = (isAscii(inflated) ? 1 : 2) * inflated.length
  reservation.grow(stringBound, 'this body as one string')
  let text
  try {
    text = inflated.toString('utf8')
  } catch (err) {
    if (err.code === 'ERR_STRING_TOO_LONG') throw inflatedTooLarge(inflated.length, inflated.length)
    throw err
  }
  const projected = meter.result({ chars: text.length })
  reservation.shrink(stringBound - projected.sourceString)
  reservation.grow(projected.values, 'parsing this body')
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
export async function ingestBuffered (req, opts, { admission } = {}) {
  const plan = negotiateBody(req, opts.limits)
  const guarded = !opts.unsafeBad && admission?.enabled === true
  const reservation = guarded ? admission.reserve(0, { route: 'bad', what: 'this body' }) : UNGUARDED
  try {
    const body = await readWhole(req, opts.limits.compressed, opts.limits.bodyIdleMs, reservation)
    const inflated = await inflateWhole(body, plan.layers, opts.limits.inflated, opts.unsafeBad, reservation)
    const format = plan.format ?? detectFormat(inflated.subarray(0, DETECT_BYTES))
    const sha256 = createHash('sha256').update(inflated).digest('hex')
    const tally = parseWhole(inflated, format, reservation, opts.limits.depth)
    return makeSummary({
      format,
      tally: finishTally(tally),
      inflatedBytes: inflated.length,
      compressedBytes: body.length,
      sha256
    })
  } finally {
    reservation.release()
  }
}
