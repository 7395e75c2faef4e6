/**
 * What a streaming JSON library cannot bound or see on its own, watched
 * token by token beside it for POST /streamparser-json
 * (lib/streamparser-ingest.js). @streamparser/json builds whatever it is
 * given: a million nested arrays, or one 400 MB record, become a million
 * objects or one 400 MB string before a callback runs. And it hands over
 * the records of every `items` array, where `JSON.parse` keeps only the
 * last `items` key of the object. The guard, fed the tokenizer's tokens
 * and told how many bytes went in, keeps the lab's rules:
 * - nesting past `limits.depth` is refused at its first bracket (413);
 * - one record (or any value between two records) past `limits.record`
 *   inflated bytes is refused as the bytes arrive, before the library has
 *   gathered more than that and a chunk (413);
 * - the records counted are those of the last top-level `items` key, and a
 *   document whose last `items` is not an array, or whose root is not what
 *   the format asks, is refused at its end (422), as /bad refuses it.
 */
import { TokenType } from '@streamparser/json'
import { createTally, tallyRecord, finishTally } from './tally.js'
import { recordTooLarge, shapeInvalid, tooDeep } from './errors.js'

/** The formats the textbook route reads: one JSON document (NDJSON is many). */
export const STREAMPARSER_FORMATS = Object.freeze(['json', 'array'])

/** Where each root's records are, for the library's `paths` option. */
const RECORD_PATHS = Object.freeze({ json: Object.freeze(['$.items.*']), array: Object.freeze(['$.*']) })

/** How deep a record starts under each root: in `items` (2), or in the array itself (1). */
const RECORD_DEPTH = Object.freeze({ json: 2, array: 1 })

export class JsonTokenGuard {
  /**
   * @param {'json'|'array'|null} format what the client asked for; null: the root decides
   * @param {{ depth: number, record: number }} limits
   */
  constructor (format, limits) {
    this.asked = format
    this.maxDepth = limits.depth
    this.maxRecord = limits.record
    /** 'json' or 'array', from the first token: which `paths` the parser is built with. */
    this.root = null
    this.depth = 0
    this.bytesIn = 0
    /** Offset of the last token between two records. */
    this.boundary = 0
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
   * Count bytes about to go to the tokenizer; throws once the value being read has passed `limits.record`.
   * @param {number} length
   */
  take (length) {
    this.bytesIn += length
    const held = this.bytesIn - this.boundary
    if (held > this.maxRecord + length) throw recordTooLarge(this.maxRecord, held, this.boundary)
  }

  /**
   * See one token before the parser does.
   * @param {{ token: number, value: unknown, offset: number }} info the tokenizer's
   */
  see ({ token, value, offset }) {
    if (token === TokenType.RIGHT_BRACE || token === TokenType.RIGHT_BRACKET) this.depth--
    const level = this.depth
    if (token === TokenType.LEFT_BRACE || token === TokenType.LEFT_BRACKET) {
      this.depth++
      if (this.depth > this.maxDepth) throw tooDeep(this.maxDepth, offset)
    }
    if (this.root === null) {
      this.root = token === TokenType.LEFT_BRACKET ? 'array' : 'json'
      if (this.root === 'array') this.tally = createTally()
    }
    if (level === 1 && this.root === 'json') this.watchRootKey(token, value)
    if (this.depth <= RECORD_DEPTH[this.root]) this.boundary = offset
    this.previous = token
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
   * @throws {import('./errors.js').LabError} 422 when the document is not what the format asks
   */
  result () {
    const format = this.asked ?? this.root
    if (format !== this.root || this.tally === null) throw shapeInvalid(format, 0)
    return { format, tally: finishTally(this.tally) }
  }
}
