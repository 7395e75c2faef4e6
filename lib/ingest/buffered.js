/**
 * POST /bad, wasteful on purpose: the whole compressed body, the whole inflated Buffer, one string of
 * it and every parsed record are alive at once, so memory grows with body size times concurrency. That
 * is the lesson. It is still bounded (the compressed limit, `maxOutputLength`), and admitted step by step
 * within the memory budget (lib/limits/admission.js): what cannot fit is refused before it is allocated.
 * With `unsafeBad` none of this applies: the zip bomb's demonstration needs the worker to die.
 */
import { createHash } from 'node:crypto'
import { isAscii } from 'node:buffer'
import { getHeapStatistics } from 'node:v8'
import { negotiateBody } from './negotiate.js'
import { admitWithinBudget } from './admit.js'
import { readWhole, requestBody } from './read.js'
import { compressedCounter } from './count.js'
import { inflateWhole } from './gzip-framing.js'
import { DecoderMemory, reservationSource } from './decoder-memory.js'
import { ParseCostMeter } from '../json/parse-cost.js'
import { detectFormat, DETECT_BYTES, FORMATS } from '../json/records.js'
import {
  createTally, tallyRecords, tallyNdjson, locateJsonError, toJsonError, finishTally, findTooDeep, recordsOf
} from '../parse/tally.js'
import { inflatedTooLarge, fromZlibError, tooDeep } from '../errors/index.js'
import { formatMiB } from '../util/units.js'

/** POST /bad: its place is a reservation in the memory budget; stages 3 to 7 in ingestBuffered. */
export const buffered = Object.freeze({
  name: 'bad',
  formats: FORMATS,
  negotiate: negotiateBody,
  admit: admitWithinBudget,
  holds: 'this body (compressed)',
  unguarded: function unsafeBad (opts) { return opts.unsafeBad },
  ingest: ingestBuffered
})

/** Each compressed chunk counted and, when no Content-Length was reserved, reserved twice (chunks, then their join). */
function countAndReserve (req, limit, reservation) {
  const compressed = compressedCounter(limit)
  const reserved = Number.isSafeInteger(Number(req.headers['content-length']))
  return function countChunk (chunk) {
    return (reserved ? null : reservation.tryGrow(2 * chunk.length, 'this body (compressed)')) ?? compressed.count(chunk)
  }
}

/** A gzip layer's trailer ISIZE (the last member's size mod 2^32), or null: a hint, never trusted. */
function declaredSize (data, codec) {
  return codec.name === 'gzip' && data.length >= 18 ? data.readUInt32LE(data.length - 4) : null
}

/**
 * Inflate layer by layer (gzip-framing.js inflateWhole): zlib joins its output chunks, twice the size at
 * the end. The reservation takes the trailer's word for the size; `maxOutputLength` makes sure a body
 * that lies (a zip bomb) cannot pass what the budget had free when it started.
 */
async function inflateWithinBudget (body, codecs, limit, unsafe, reservation, holding) {
  let cap = limit
  function reserveLayer (data, layer, codec) {
    cap = Math.min(limit, Math.floor(reservation.room() / 2))
    const hint = declaredSize(data, codec)
    if (hint !== null && hint > cap && hint <= limit) {
      // honest gzip says its size: refuse before inflating a byte
      reservation.grow(2 * hint, 'this body (inflated)')
    }
    reservation.grow(2 * Math.min(hint ?? cap, cap), 'this body (inflated)')
    return cap
  }
  function keepLayer (data, layer) {
    // what is held now: the layer's input and its one output Buffer (its decoder is gone)
    const want = (layer === 0 ? body.length : 0) + data.length
    const held = reservation.bytes
    if (want > held) reservation.grow(want - held, 'this body (inflated)')
    else reservation.shrink(held - want)
  }
  // each layer's decoder (its window) is reserved as the body is, before it is made
  const memory = new DecoderMemory(codecs, reservationSource(reservation), { streamed: false })
  try {
    // unsafe: no guard at all, as in the benchmark the lab reproduces (a zip bomb's demonstration)
    return await inflateWhole(body, codecs, unsafe ? { holding } : { capFor: reserveLayer, afterLayer: keepLayer, holding, memory })
  } catch (err) {
    if (err.code === 'ERR_BUFFER_TOO_LARGE') {
      // the budget, not the limit, stopped it: refuse for the budget (joining past the cap needs twice it)
      const free = formatMiB(cap, { digits: 0 })
      if (cap < limit) throw reservation.refuse(2 * (cap + 1), `this body, inflated past the ${free} the budget had free,`)
      throw inflatedTooLarge(limit, null)
    }
    throw fromZlibError(err, body.length, codecAt(codecs, err)) ?? err
  }
}

/** The codec of the layer that failed: zlib's error does not say, the decoder that threw does. */
function codecAt (codecs, err) {
  return err.codec ?? codecs[0]?.name ?? 'gzip'
}

/** /good's nesting limit kept here too, so both take the same documents (the first fault wins, as on /good). */
function checkDepth (inflated, maxDepth) {
  const deep = findTooDeep(inflated, 0, inflated.length, maxDepth)
  if (deep === -1) return
  const invalid = locateJsonError(inflated, 0, inflated.length, new Error('nesting'))
  if (invalid.offset >= 0 && invalid.offset < deep) throw toJsonError(invalid)
  throw tooDeep(maxDepth, deep)
}

/**
 * Parse everything at once and pick the records the format names. The holding is told of the string
 * (as parse-cost.js sizes it) and of what JSON.parse built: the growth of V8's used heap across the call.
 */
function parseWhole (inflated, format, reservation, maxDepth, holding) {
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
  holding.set('parse', projected.sourceString)
  let doc
  const heapBefore = usedHeap()
  try {
    doc = JSON.parse(text)
  } catch (err) {
    throw toJsonError(locateJsonError(inflated, 0, inflated.length, err))
  }
  holding.set('parse', projected.sourceString + Math.max(0, usedHeap() - heapBefore))
  return tallyRecords(tally, recordsOf(doc, format))
}

function usedHeap () {
  return getHeapStatistics().used_heap_size
}

/** Stages 3 to 7 of POST /bad: read the whole body, inflate it whole, and parse it as one string. */
async function ingestBuffered (req, plan, { reservation, holding }, { opts }) {
  const { limits } = opts
  const source = requestBody(req, { idleMs: limits.bodyIdleMs })
  const body = await readWhole(source, countAndReserve(req, limits.compressed, reservation), holding)
  reservation.shrink(reservation.bytes - body.length) // the chunks are garbage now: what stays is the one Buffer
  const inflated = await inflateWithinBudget(body, plan.codecs, limits.inflated, opts.unsafeBad, reservation, holding)
  const format = plan.format ?? detectFormat(inflated.subarray(0, DETECT_BYTES))
  const sha256 = createHash('sha256').update(inflated).digest('hex')
  const tally = parseWhole(inflated, format, reservation, limits.depth, holding)
  return { format, tally: finishTally(tally), inflatedBytes: inflated.length, compressedBytes: body.length, sha256 }
}
