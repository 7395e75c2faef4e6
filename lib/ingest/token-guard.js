/**
 * What @streamparser/json cannot bound or see, watched token by token beside it for POST
 * /streamparser-json (streamparser.js). The library builds whatever it is given before a callback
 * runs, and hands over every `items` array's records where `JSON.parse` keeps the last. The guard
 * keeps the lab's rules as /bad and /good do: depth (422), a record's bytes and projected cost (413,
 * as the bytes arrive), only the last top-level `items`, the shape at the end (422), and a byte order
 * mark the tokenizer would skip (422). `wellFormedUtf8()` makes invalid UTF-8 U+FFFD as /bad does.
 */
import { isUtf8 } from 'node:buffer'
import { Transform } from 'node:stream'
import { TokenType } from '@streamparser/json'
import { createTally, tallyRecord, finishTally } from '../parse/tally.js'
import { jsonInvalid, recordTooDense, recordTooLarge, shapeInvalid, tooDeep } from '../errors/index.js'
import { COST_CONTAINER, COST_LARGE_ELEMENT } from '../json/parse-cost.js'
import { OPEN_BRACKET, CLOSE_BRACKET, OPEN_BRACE, CLOSE_BRACE, COMMA, COLON, isWhitespace } from '../json/bytes.js'

export const STREAMPARSER_FORMATS = Object.freeze(['json', 'array']) // one document (NDJSON is many)
const RECORD_PATHS = Object.freeze({ json: Object.freeze(['$.items.*']), array: Object.freeze(['$.*']) })
const RECORD_DEPTH = Object.freeze({ json: 2, array: 1 }) // in `items`, or in the array itself
const BOM_FIRST_BYTE = 0xef

/** What a document may hold before its first string, number or literal. */
function isStructural (byte) {
  return byte === OPEN_BRACKET || byte === CLOSE_BRACKET || byte === OPEN_BRACE || byte === CLOSE_BRACE ||
    byte === COMMA || byte === COLON || isWhitespace(byte)
}

/**
 * The inflated bytes as JSON.parse sees them on /bad: invalid UTF-8 replaced by U+FFFD by the very
 * `Buffer#toString` /bad calls, whatever the chunks. A chunk is cut before a character its end leaves
 * unfinished (a lead byte is never part of the sequence before it, so the cut changes nothing).
 * Well-formed UTF-8 passes as it is, so the tokenizer's offsets are the body's own.
 */
export function wellFormedUtf8 () {
  let unfinished = null
  return new Transform({
    transform: function replaceInvalid (chunk, encoding, done) {
      const bytes = unfinished === null ? chunk : Buffer.concat([unfinished, chunk])
      const end = completeEnd(bytes)
      unfinished = end < bytes.length ? Buffer.from(bytes.subarray(end)) : null
      done(null, asUtf8(bytes.subarray(0, end)))
    },
    flush: function replaceCutEnd (done) {
      // a character cut off by the end of the body: U+FFFD, as Buffer#toString gives
      done(null, unfinished === null ? undefined : asUtf8(unfinished))
    }
  })
}

/** `bytes` if they are well-formed UTF-8, else what Buffer#toString makes of them, in UTF-8. */
function asUtf8 (bytes) {
  return isUtf8(bytes) ? bytes : Buffer.from(Buffer.from(bytes).toString('utf8'), 'utf8')
}

/** Where an unfinished last character of `bytes` starts, else their length. */
function completeEnd (bytes) {
  for (let i = bytes.length - 1; i >= Math.max(0, bytes.length - 3); i--) {
    const byte = bytes[i]
    if (byte < 0x80) return bytes.length
    if (byte >= 0xc0) return i + (byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2) > bytes.length ? i : bytes.length
  }
  return bytes.length
}

function isClosing (token) {
  return token === TokenType.RIGHT_BRACE || token === TokenType.RIGHT_BRACKET
}

export class JsonTokenGuard {
  /** `format`: what the client asked for (null: the root decides); `maxCost`: `ingest.parseCost`, as on /good. */
  constructor (format, limits, maxCost) {
    this.asked = format
    this.maxDepth = limits.depth
    this.maxRecord = limits.record
    this.maxCost = maxCost
    this.cost = 0 // heap the record being read is projected to cost (chargeValue)
    this.root = null // 'json' or 'array', from the first token
    this.depth = 0
    this.bytesIn = 0
    // where the value being read may start: the last token between two records, or a chunk's end that left none open
    this.boundary = 0
    this.lastByte = -1
    this.open = false // the tokenizer reported a token left open at the last chunk's end
    this.markSkipped = true // until the first string, number or literal, the tokenizer would skip a mark
    this.previous = null
    this.afterItemsKey = false
    this.tally = null // the latest top-level `items` array's records; null: none, or not an array
  }

  get paths () {
    return RECORD_PATHS[this.root]
  }

  /** Count bytes about to go to the tokenizer; throws past `limits.record`, or at a byte order mark. */
  take (chunk) {
    if (this.markSkipped) this.watchForMark(chunk)
    if (this.betweenRecords()) this.boundary = this.bytesIn
    this.open = false
    if (chunk.length > 0) this.lastByte = chunk[chunk.length - 1]
    this.bytesIn += chunk.length
    const held = this.bytesIn - this.boundary
    if (held > this.maxRecord + chunk.length) throw recordTooLarge(this.maxRecord, held, this.boundary)
  }

  /**
   * Refuse a 0xEF before the first string, number or literal: till then the tokenizer skips EF BB BF
   * as a byte order mark, where JSON.parse refuses the body. Afterwards it refuses such bytes itself.
   */
  watchForMark (chunk) {
    for (let i = 0; i < chunk.length; i++) {
      if (chunk[i] === BOM_FIRST_BYTE) throw jsonInvalid('unexpected byte 0xef (a byte order mark?)', this.bytesIn + i)
      if (!isStructural(chunk[i])) {
        this.markSkipped = false
        return
      }
    }
  }

  /**
   * Whether the last chunk left the tokenizer between tokens, outside any record: it ended in
   * whitespace with no token reported open. Whitespace ends every token but a string, and a cut
   * string is reported (elsewhere whitespace fails the document, and the bytes are well-formed UTF-8).
   */
  betweenRecords () {
    return !this.open && isWhitespace(this.lastByte) && this.depth <= (RECORD_DEPTH[this.root] ?? 0)
  }

  /** See one token before the parser does. A partial token only says one is open: it comes again whole. */
  see ({ token, value, offset, partial }) {
    // the first token names the root; a partial one is a scalar's, which names the same root as the whole
    if (this.root === null) {
      this.root = token === TokenType.LEFT_BRACKET ? 'array' : 'json'
      if (this.root === 'array') this.tally = createTally()
    }
    if (partial) {
      this.open = true
      return
    }
    if (isClosing(token)) this.depth--
    const level = this.depth
    if (token === TokenType.LEFT_BRACE || token === TokenType.LEFT_BRACKET) {
      this.depth++
      if (this.depth > this.maxDepth) throw tooDeep(this.maxDepth, offset)
    }
    if (level === 1 && this.root === 'json') this.watchRootKey(token, value)
    if (this.depth <= RECORD_DEPTH[this.root]) {
      this.boundary = offset
      this.cost = 0
    } else {
      this.chargeValue(token, value, offset)
    }
    this.previous = token
  }

  /**
   * Add a token of the record to its projected heap, with parse-cost.js's weights at their largest.
   * Few bytes can make many values, built before the record ends: past `maxCost`, 413, as on /good.
   */
  chargeValue (token, value, offset) {
    if (token === TokenType.COLON || token === TokenType.COMMA || isClosing(token)) return
    this.cost += COST_LARGE_ELEMENT
    if (token === TokenType.LEFT_BRACE || token === TokenType.LEFT_BRACKET) this.cost += COST_CONTAINER
    else if (token === TokenType.STRING) this.cost += 2 * value.length
    if (this.cost > this.maxCost) throw recordTooDense(this.maxCost, this.cost, this.bytesIn - this.boundary, offset)
  }

  /** A token of the root object: which key holds the records (the last of a repeated key, as JSON.parse). */
  watchRootKey (token, value) {
    if (this.afterItemsKey) {
      if (token === TokenType.COLON) return
      // the value of an `items` key starts here: an array starts a fresh count, anything else means no records
      this.tally = token === TokenType.LEFT_BRACKET ? createTally() : null
      this.afterItemsKey = false
    } else if (token === TokenType.STRING && (this.previous === TokenType.LEFT_BRACE || this.previous === TokenType.COMMA)) {
      this.afterItemsKey = value === 'items'
    }
  }

  record (value) {
    if (this.tally !== null) tallyRecord(this.tally, value)
  }

  /** The figures, once the parser has ended without fault; 422 when the document is not what the format asks. */
  result () {
    if (this.root === null) throw jsonInvalid('the body holds no JSON', 0)
    const format = this.asked ?? this.root
    if (format !== this.root || this.tally === null) throw shapeInvalid(format, 0)
    return { format, tally: finishTally(this.tally) }
  }
}
