/**
 * What a parse thread runs (parse-thread.js), and the main thread for what is too small to send:
 * JSON.parse on one batch of whole records (`parseBatch`) or a small body's document (`parseDocument`),
 * then the tally. Plain data in and out: it crosses threads.
 */
import { createTally, findRecords, isBlankLine, tallyRecord, tallyRecords, tallyNdjson, locateJsonError } from './tally.js'
import { projectParseCost, ParseCostMeter } from '../json/parse-cost.js'
import { decodeUtf8 } from '../json/utf8.js'
import { OPEN_BRACKET, CLOSE_BRACKET } from '../json/bytes.js'

/**
 * `maxCost`: the most heap JSON.parse may be projected to take (parse-cost.js), past which the batch is
 * not parsed; `costBound`: the record scanner's upper bound of that projection, which within maxCost
 * spares making it; `simd`: the text decoded in WebAssembly (utf8.js). Error offsets are relative to
 * the batch's first value. A batch of values is `[` + values + `]`: its first and last bytes are
 * written so, as a batch cut in place needs, and put back once parsed.
 */
export function parseBatch ({ kind, bytes, maxDepth = Infinity, maxCost = Infinity, costBound = Infinity, simd = false }) {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (kind === 'lines') return tooDense(buf, maxCost, costBound) ?? parseLines(buf, maxDepth, simd)
  // a batch cut in place (records.js, `inPlace`) gets its brackets here, and its own bytes back after
  const last = buf.length - 1
  const first = buf[0]
  const end = buf[last]
  buf[0] = OPEN_BRACKET
  buf[last] = CLOSE_BRACKET
  try {
    const refused = tooDense(buf, maxCost, costBound)
    if (refused !== null) return refused
    let values
    try {
      values = JSON.parse(simd ? decodeUtf8(buf) : buf.toString('utf8'))
    } catch (err) {
      const located = locateJsonError(buf, 0, buf.length, err)
      // the batch is `[` + values + `]`: shift back past the added bracket
      return { tally: null, error: { offset: located.offset < 0 ? -1 : located.offset - 1, reason: located.reason } }
    }
    if (kind !== 'records') return { tally: null, error: null }
    return { tally: tallyRecords(createTally(), values), error: null }
  } finally {
    buf[0] = first
    buf[last] = end
  }
}

/** The answer for a batch JSON.parse would take more than `maxCost` for, or null: it cannot be stopped half-way. */
function tooDense (buf, maxCost, costBound) {
  if (maxCost === Infinity || costBound <= maxCost) return null
  const projected = projectParseCost(buf).heap
  return projected > maxCost ? { tally: null, error: null, tooDense: { projected } } : null
}

/** A batch of NDJSON lines: decoded at once where it can (tallyLines), else line by line on the bytes, for the offset. */
function parseLines (buf, maxDepth, simd) {
  const tally = createTally()
  if (simd && tallyLines(buf, tally, maxDepth)) return { tally, error: null }
  const byLine = createTally()
  const error = tallyNdjson(buf, byLine, maxDepth)
  return { tally: byLine, error }
}

/**
 * NDJSON's lines tallied from the batch's text, decoded at once (utf8.js) where tallyNdjson decodes
 * each line apart, blank lines skipped as there. False, with the tally half made, at a line it cannot
 * vouch for: one JSON.parse refuses or one nesting past `maxDepth`; tallyNdjson then
 * reads the batch again and names the fault. A newline is never inside a multi-byte character, so
 * each line's text is the one tallyNdjson decodes.
 */
function tallyLines (buf, tally, maxDepth) {
  const text = decodeUtf8(buf)
  const n = text.length
  let start = 0
  while (start < n) {
    let end = text.indexOf('\n', start)
    if (end === -1) end = n
    if (end > start) {
      const line = text.slice(start, end)
      let record
      try {
        record = JSON.parse(line)
      } catch {
        // a line of spaces is no record, and no reason to read the whole batch again
        if (isBlankLine(line)) {
          start = end + 1
          continue
        }
        return false
      }
      // a line nests past the limit only with more brackets than the limit: none in a shorter line
      if (end - start > maxDepth && record !== null && typeof record === 'object' && nestsDeeper(record, maxDepth)) return false
      tallyRecord(tally, record)
    }
    start = end + 1
  }
  return true
}

/** Whether a parsed value nests deeper than `limit` (itself at depth 1), iteratively: no stack to overflow. */
function nestsDeeper (value, limit) {
  const stack = [value]
  const depths = [1]
  while (stack.length > 0) {
    const v = stack.pop()
    const depth = depths.pop()
    if (depth > limit) return true
    if (Array.isArray(v)) {
      for (let k = 0; k < v.length; k++) {
        const x = v[k]
        if (x !== null && typeof x === 'object') { stack.push(x); depths.push(depth + 1) }
      }
    } else {
      for (const key in v) {
        const x = v[key]
        if (x !== null && typeof x === 'object') { stack.push(x); depths.push(depth + 1) }
      }
    }
  }
  return false
}

/**
 * A small body's document (`json` or `array`) parsed at once as /bad parses it, cheaper than finding
 * its records first. It answers only what the scanner and parseBatch would answer alike: the tally of
 * a valid document within /good's limits (record size, depth, projected cost). Anything else is null,
 * and the caller scans the document for the verdict and its offset.
 */
export function parseDocument ({ bytes, format, maxDepth = Infinity, maxCost = Infinity, maxValueBytes = Infinity }) {
  if (bytes.byteLength > maxValueBytes) return null
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const meter = new ParseCostMeter()
  meter.write(buf)
  if (maxCost !== Infinity && meter.result().heap > maxCost) return null
  let doc
  try {
    doc = JSON.parse(buf.toString('utf8'))
  } catch {
    return null
  }
  const records = findRecords(doc, format)
  if (records === null) return null
  // as many containers as the limit cannot nest past it: the walk is for documents of many
  if (meter.containers > maxDepth && nestsDeeper(doc, maxDepth)) return null
  return { tally: tallyRecords(createTally(), records) }
}
