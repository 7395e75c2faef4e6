/**
 * What @streamparser/json cannot bound or see on its own, watched token by
 * token beside it for POST /streamparser-json (lib/ingest/streamparser.js).
 * The library builds whatever it is given (any nesting, any record's size)
 * before a callback runs, and hands over the records of every `items`
 * array where `JSON.parse` keeps the last. The guard, fed the tokenizer's
 * tokens and the bytes that went in, keeps the lab's rules, as /bad and
 * /good keep them: nesting past `limits.depth` (422 json.too.deep at its
 * first bracket); a record past `limits.record` bytes or `ingest.parseCost`
 * (413, as the bytes arrive); only the last top-level `items` counted, and a
 * document of the wrong shape refused at its end (422); a UTF-8 byte order
 * mark refused (422), which the tokenizer would skip. `wellFormedUtf8()`
 * makes invalid UTF-8 U+FFFD as /bad's Buffer#toString does, where the
 * library's fatal decoder would fail the document.
 */
import { isUtf8 } from 'node:buffer'
import { Transform } from 'node:stream'
import { TokenType } from '@streamparser/json'
import { createTally, tallyRecord, finishTally } from '../parse/tally.js'
import { jsonInvalid, recordTooDense, recordTooLarge, shapeInvalid, tooDeep } from '../errors/index.js'
import { COST_CONTAINER, COST_LARGE_ELEMENT } from '../json/parse-cost.js'
import { OPEN_BRACKET, CLOSE_BRACKET, OPEN_BRACE, CLOSE_BRACE, COMMA, COLON, isWhitespace } from '../json/bytes.js'

/** The formats the textbook route reads: one JSON document (NDJSON is many). */
export const STREAMPARSER_FORMATS = Object.freeze(['json', 'array'])

/** Where each root's records are, for the library's `paths` option. */
const RECORD_PATHS = Object.freeze({ json: Object.freeze(['$.items.*']), array: Object.freeze(['$.*']) })

/** How deep a record starts under each root: in `items` (2), or in the array itself (1). */
const RECORD_DEPTH = Object.freeze({ json: 2, array: 1 })

/** The first byte of a UTF-8 byte order mark (EF BB BF). */
const BOM_FIRST_BYTE = 0xef

/** What a document may hold before its first string, number or literal: brackets, braces, commas, colons, whitespace. */
function isStructural (byte) {
  return byte === OPEN_BRACKET || byte === CLOSE_BRACKET || byte === OPEN_BRACE || byte === CLOSE_BRACE ||
    byte === COMMA || byte === COLON || isWhitespace(byte)
}

/**
 * The inflated bytes as JSON.parse sees them on /bad: each invalid UTF-8
 * sequence replaced by U+FFFD (EF BF BD), by the very `Buffer#toString`
 * /bad calls, the rest unchanged, whatever the chunks. A chunk is cut before
 * a character its end leaves unfinished, and that character waits for the
 * next chunk: a lead byte (0xC0 and up) is never part of the sequence before
 * it, so the cut changes nothing. A chunk of well-formed UTF-8 (nearly all)
 * passes as it is. A byte order mark is kept, for the guard to refuse. Only
 * bytes that were not UTF-8 change, so the offsets the tokenizer gives are
 * the body's own in every body that is UTF-8.
 * @returns {Transform}
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

/** Where the last character of `bytes` starts if it is unfinished (a lead byte with too few bytes after it), else their length. */
function completeEnd (bytes) {
  for (let i = bytes.length - 1; i >= Math.max(0, bytes.length - 3); i--) {
    const byte = bytes[i]
    if (byte < 0x80) return bytes.length
    if (byte >= 0xc0) return i + (byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2) > bytes.length ? i : bytes.length
  }
  return bytes.length
}

export class JsonTokenGuard {
  /**
   * @param {'json'|'array'|null} format what the client asked for; null: the root decides
   * @param {{ depth: number, record: number }} limits
   * @param {number} maxCost heap one record may be projected to cost (`ingest.parseCost`, as on /good)
   */
  constructor (format, limits, maxCost) {
    this.asked = format
    this.maxDepth = limits.depth
    this.maxRecord = limits.record
    this.maxCost = maxCost
    /** Heap the record being read is projected to cost (chargeValue). */
    this.cost = 0
    /** 'json' or 'array', from the first token: which `paths` the parser is built with. */
    this.root = null
    this.depth = 0
    this.bytesIn = 0
    /** Where the value being read may start: the offset of the last token between two records, or the end of a chunk that left none open. */
    this.boundary = 0
    /** The last byte given to the tokenizer, and whether it reported a token left open at that chunk's end. */
    this.lastByte = -1
    this.open = false
    /** True until the first byte that starts a string, number or literal: the tokenizer would skip a byte order mark till then. */
    this.markSkipped = true
    this.previous = null
    this.afterItemsKey = false
    /** Records of the latest top-level `items` array; null when there is none (or it is not an array). */
    this.tally = null
  }

  /** The `paths` to build the library's parser with, once the first token has told the root. */
  get paths () {
    return RECORD_PATHS[this.root]
  }

  /**
   * Count bytes about to go to the tokenizer; throws once the value being read has passed
   * `limits.record`, or at a byte order mark the tokenizer would skip (watchForMark).
   * @param {Uint8Array} chunk
   */
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
   * Refuse a 0xEF before the first string, number or literal: the tokenizer stays in its
   * start-of-input state until one, and there it takes EF BB BF for a byte order mark and
   * skips it, where JSON.parse refuses the body. A 0xEF there starts a mark or some other
   * character outside a string: no JSON either way. From the first other byte on, the
   * tokenizer refuses any byte from 0x80 up outside a string itself.
   * @param {Uint8Array} chunk
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
   * Whether the last chunk left the tokenizer between two tokens, outside any record: then it
   * holds none of the bytes so far. It did if the chunk ended in whitespace and no token was
   * reported open at its end (`emitPartialTokens`): in valid JSON whitespace ends every token
   * but a string, and a string cut short is reported (after a backslash, in a literal or a
   * number's sign, exponent or point, whitespace fails the document there and then; and the
   * bytes here are well-formed UTF-8, so no character a chunk cut short ends in whitespace).
   */
  betweenRecords () {
    return !this.open && isWhitespace(this.lastByte) && this.depth <= (RECORD_DEPTH[this.root] ?? 0)
  }

  /**
   * See one token before the parser does. A partial token (the tokenizer's `emitPartialTokens`:
   * a string, number or literal a chunk's end cut short) only says one is open: it comes again whole.
   * @param {{ token: number, value: unknown, offset: number, partial?: boolean }} info the tokenizer's
   */
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
    if (token === TokenType.RIGHT_BRACE || token === TokenType.RIGHT_BRACKET) this.depth--
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
   * Add a token of the record being read to its projected heap, with lib/json/parse-cost.js's
   * weights taken at their largest: a container, and a slot for every value (a key too), plus
   * two bytes a character of a string. Few bytes can make many values, built before the record
   * ends. Past `maxCost`, 413, as /good refuses a record that dense.
   */
  chargeValue (token, value, offset) {
    if (token === TokenType.COLON || token === TokenType.COMMA || token === TokenType.RIGHT_BRACE || token === TokenType.RIGHT_BRACKET) return
    this.cost += COST_LARGE_ELEMENT
    if (token === TokenType.LEFT_BRACE || token === TokenType.LEFT_BRACKET) this.cost += COST_CONTAINER
    else if (token === TokenType.STRING) this.cost += 2 * value.length
    if (this.cost > this.maxCost) throw recordTooDense(this.maxCost, this.cost, this.bytesIn - this.boundary, offset)
  }

  /** A token of the root object: which key holds the records. JSON.parse keeps the last of a repeated key; so does this. */
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

  /** Count one record the parser emitted (none while `items` is not an array). */
  record (value) {
    if (this.tally !== null) tallyRecord(this.tally, value)
  }

  /**
   * The figures, once the parser has ended without fault.
   * @returns {{ format: 'json'|'array', tally: object }}
   * @throws {import('../errors/index.js').LabError} 422 when the document is not what the format asks
   */
  result () {
    if (this.root === null) throw jsonInvalid('the body holds no JSON', 0)
    const format = this.asked ?? this.root
    if (format !== this.root || this.tally === null) throw shapeInvalid(format, 0)
    return { format, tally: finishTally(this.tally) }
  }
}
