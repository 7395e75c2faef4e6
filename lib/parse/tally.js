/**
 * The figures that prove every record was parsed, the same whatever the order or batch size, so /bad
 * (one JSON.parse) and /good (batches on threads) answer byte for byte alike: items; idSum, the exact
 * sum of each record's integer `id`; numbers, how many numbers appear; numbersChecksum, the sum mod
 * 2^64 of their IEEE-754 bits (exact and order-independent, unlike a floating-point sum).
 */
import { findJsonError } from '../json/validate.js'
import { jsonInvalid, shapeInvalid } from '../errors/index.js'

const TWO_32 = 2 ** 32
const ID_FOLD = 2 ** 52

const f64 = new Float64Array(1)
const u32 = new Uint32Array(f64.buffer)

/** A fresh, empty tally (plain data: it crosses worker boundaries). */
export function createTally () {
  return { items: 0, idSmall: 0, idBig: '0', numbers: 0, lo: 0, hi: 0 }
}

function foldIds (tally) {
  tally.idBig = (BigInt(tally.idBig) + BigInt(tally.idSmall)).toString()
  tally.idSmall = 0
}

function normalise (tally) {
  const carry = Math.floor(tally.lo / TWO_32)
  tally.lo -= carry * TWO_32
  tally.hi = (tally.hi + carry) % TWO_32
}

/** Add one record to a tally, walking the value iteratively so deep nesting cannot overflow the stack. */
export function tallyRecord (tally, record) {
  tally.items++
  if (record !== null && typeof record === 'object' && !Array.isArray(record)) {
    const id = record.id
    if (Number.isSafeInteger(id)) {
      if (Math.abs(id) >= ID_FOLD) {
        // too large to add to the running sum without rounding: straight to the exact one
        tally.idBig = (BigInt(tally.idBig) + BigInt(id)).toString()
      } else {
        // both under 2^52: their sum is under 2^53, exact
        tally.idSmall += id
        if (Math.abs(tally.idSmall) >= ID_FOLD) foldIds(tally)
      }
    }
  }
  const stack = [record]
  let lo = tally.lo
  let hi = tally.hi
  let numbers = tally.numbers
  while (stack.length > 0) {
    const value = stack.pop()
    if (typeof value === 'number') {
      f64[0] = value
      lo += u32[0]
      hi += u32[1]
      numbers++
      // each add is under 2^32: folded at 2^52, neither sum ever passes 2^53, however many numbers a record holds
      if (lo >= ID_FOLD || hi >= ID_FOLD) {
        tally.lo = lo
        tally.hi = hi
        normalise(tally)
        lo = tally.lo
        hi = tally.hi
      }
    } else if (Array.isArray(value)) {
      for (let k = 0; k < value.length; k++) stack.push(value[k])
    } else if (value !== null && typeof value === 'object') {
      for (const key in value) stack.push(value[key])
    }
  }
  tally.lo = lo
  tally.hi = hi
  tally.numbers = numbers
  normalise(tally)
}

/** Add every record of an array. */
export function tallyRecords (tally, records) {
  for (let k = 0; k < records.length; k++) tallyRecord(tally, records[k])
  return tally
}

/** A parsed document's records where the format says (the array, or an object's `items`), or null. */
export function findRecords (doc, format) {
  if (format === 'array') return Array.isArray(doc) ? doc : null
  return doc !== null && typeof doc === 'object' && !Array.isArray(doc) && Array.isArray(doc.items) ? doc.items : null
}

/** As findRecords, for a route that answers: 422 when the document is not what the format asks. */
export function recordsOf (doc, format) {
  const records = findRecords(doc, format)
  if (records === null) throw shapeInvalid(format, 0)
  return records
}

/** Merge tally `b` into `a` (order does not matter). */
export function mergeTally (a, b) {
  a.items += b.items
  a.idBig = (BigInt(a.idBig) + BigInt(b.idBig) + BigInt(a.idSmall) + BigInt(b.idSmall)).toString()
  a.idSmall = 0
  a.numbers += b.numbers
  // each side below 2^32 first, so the sums stay exact
  normalise(a)
  const lo = b.lo % TWO_32
  const hi = (b.hi + Math.floor(b.lo / TWO_32)) % TWO_32
  a.lo += lo
  a.hi += hi
  normalise(a)
  return a
}

/** The public figures of a tally. */
export function finishTally (tally) {
  const t = mergeTally(createTally(), tally)
  const checksum = (BigInt(t.hi) << 32n) | BigInt(t.lo)
  return {
    items: t.items,
    idSum: t.idBig,
    numbers: t.numbers,
    numbersChecksum: checksum.toString(16).padStart(16, '0')
  }
}

const BLANK_LINE = /^[ \t\r]*$/

/** Whether an NDJSON line holds nothing but white space: skipped, not a record. */
export function isBlankLine (line) {
  return BLANK_LINE.test(line)
}

/** Offset of the first bracket in bytes [start, end) nested past `limit` (strings skipped), or -1. */
export function findTooDeep (buf, start, end, limit) {
  let depth = 0
  for (let i = start; i < end; i++) {
    const c = buf[i]
    if (c === 0x22) {
      for (i++; i < end && buf[i] !== 0x22; i++) if (buf[i] === 0x5c) i++
    } else if (c === 0x7b || c === 0x5b) {
      depth++
      if (depth > limit) return i
    } else if (c === 0x7d || c === 0x5d) depth--
  }
  return -1
}

/**
 * Tally NDJSON bytes line by line (lines of only whitespace skipped): whole on /bad; on /good's threads,
 * a batch without SIMD or with a line parse-batch.js's tallyLines could not vouch for. Returns the
 * first error (`{ offset, reason, tooDeep? }`, within buf) or null.
 */
export function tallyNdjson (buf, tally, maxDepth = Infinity) {
  let start = 0
  const n = buf.length
  while (start < n) {
    let end = buf.indexOf(0x0a, start)
    if (end === -1) end = n
    if (end - start > maxDepth) {
      const deep = findTooDeep(buf, start, end, maxDepth)
      if (deep !== -1) return { offset: deep, reason: `nests deeper than ${maxDepth}`, tooDeep: true }
    }
    const line = buf.toString('utf8', start, end)
    if (!isBlankLine(line)) {
      let record
      try {
        record = JSON.parse(line)
      } catch (err) {
        return locateJsonError(buf, start, end, err)
      }
      tallyRecord(tally, record)
    }
    start = end + 1
  }
  return null
}

/** After JSON.parse failed on bytes [start, end), the offset (within the buffer) and reason to report. */
export function locateJsonError (buf, start, end, err) {
  const found = findJsonError(buf, start, end)
  if (found) return { offset: start + found.offset, reason: found.reason }
  // The validator and V8 disagree: report V8's words without an offset.
  return { offset: -1, reason: err.message }
}

/** A 422 LabError from a located JSON error. */
export function toJsonError (located) {
  return jsonInvalid(located.reason, located.offset)
}
