/**
 * What `JSON.parse` will cost, projected from the text before it runs.
 *
 * JSON.parse runs to the end once started: nothing can stop it half-way
 * when memory runs short. So every route that parses a body whole (/bad,
 * and /good's parse threads for each batch) projects the cost first and
 * refuses what does not fit. The figure must be an upper bound for every
 * shape of document, not an average: a body of `[{},{},...]` costs many
 * times more heap per byte of text than one of long strings (docs/limits.md).
 *
 * The weights below come from measuring the heap and RSS growth of
 * JSON.parse on Node 20 and 24 for dense shapes (`test/slow/parse-cost.test.js`
 * checks the projection against real parses of each shape): every
 * container, every element of an array, every member of an object, and the
 * characters of the source string and of the string values it produces.
 * Elements of large arrays and members of large objects cost more (the
 * parser grows a temporary list, and an object with many keys becomes a
 * dictionary), so containers are sized as they close.
 */
import { isAscii } from 'node:buffer'
import { QUOTE, OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET, COMMA, closingQuote } from './bytes.js'

/** Bytes per container (`{` or `[`): the object or array and its backing store's header. */
export const COST_CONTAINER = 72
/** Bytes per element of an array of up to SMALL_ARRAY elements, and per member of an object of up to SMALL_OBJECT members. */
const COST_SMALL_SLOT = 24
/** Bytes per element of a larger array: the slot, the parser's temporary list as it grows, and a boxed number. */
export const COST_LARGE_ELEMENT = 56
/** Bytes per member of a larger object (a dictionary entry and an internalised key). */
const COST_LARGE_MEMBER = 256
const SMALL_ARRAY = 1024
/** RSS runs ahead of the heap (pages the collector has not returned yet): the projection keeps 10 % above the weights. */
const COST_MARGIN = 1.1
const SMALL_OBJECT = 64
/** Containers nested deeper than this are not sized: their slots are charged as large. */
const TRACKED_DEPTH = 256


/**
 * An upper bound of what the meter below projects for a batch of `length`
 * bytes (its brackets included) holding `stringBytes` bytes inside strings
 * and `containers` brackets that open: every other byte is charged as if it
 * were a comma of a large object (256) or, for the brackets, a container and
 * its slot, and the text as a two-byte string. Each term is one the meter
 * adds, taken at its largest, so the meter's figure can only be lower.
 */
export function costBound (length, stringBytes, containers) {
  return Math.ceil(2 * length * COST_MARGIN) +
    Math.ceil((2 * stringBytes + COST_CONTAINER * containers + COST_LARGE_MEMBER * (length - stringBytes)) * COST_MARGIN)
}

/**
 * Tally the parse cost of JSON text a chunk at a time. Invalid JSON is not
 * its business (JSON.parse refuses it, cheaply): it only has to stay an
 * upper bound for text that parses. Characters are bounded by bytes, and
 * text with any byte past ASCII is taken as a two-byte V8 string: exact for
 * ASCII, at most a few tens of percent high otherwise, and fast (strings are
 * crossed with `indexOf`, the rest byte by byte).
 */
export class ParseCostMeter {
  constructor () {
    this.bytes = 0
    this.ascii = true
    /** Bytes inside string values and keys: parsed strings are copies. */
    this.stringBytes = 0
    this.containers = 0
    this.slotCost = 0
    this.inString = false
    this.escapeCarry = false
    /** The last byte outside strings that was not white space: is a closing container empty? */
    this.previous = 0
    // per open container: is it an object, and the commas seen in it
    this.depth = 0
    this.isObject = new Uint8Array(TRACKED_DEPTH)
    this.commas = new Float64Array(TRACKED_DEPTH)
  }

  /** @param {Uint8Array} chunk */
  write (chunk) {
    const n = chunk.length
    if (this.ascii && !isAscii(chunk)) this.ascii = false
    let i = 0
    let previous = this.previous
    let depth = this.depth
    const isObject = this.isObject
    const commas = this.commas
    while (i < n) {
      if (this.inString) {
        const end = closingQuote(chunk, i, this)
        this.stringBytes += (end === -1 ? n : end) - i
        if (end === -1) break
        i = end + 1
        this.inString = false
        previous = QUOTE
        continue
      }
      for (; i < n; i++) {
        const c = chunk[i]
        if (c === QUOTE) {
          this.inString = true
          i++
          break
        }
        if (c === OPEN_BRACE || c === OPEN_BRACKET) {
          this.containers++
          if (depth < TRACKED_DEPTH) {
            isObject[depth] = c === OPEN_BRACE ? 1 : 0
            commas[depth] = 0
          } else {
            this.slotCost += COST_LARGE_MEMBER
          }
          depth++
        } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
          if (depth > 0) {
            depth--
            if (depth < TRACKED_DEPTH) {
              const empty = previous === OPEN_BRACE || previous === OPEN_BRACKET
              const slots = empty ? 0 : commas[depth] + 1
              if (isObject[depth] === 1) this.slotCost += slots * (slots <= SMALL_OBJECT ? COST_SMALL_SLOT : COST_LARGE_MEMBER)
              else this.slotCost += slots * (slots <= SMALL_ARRAY ? COST_SMALL_SLOT : COST_LARGE_ELEMENT)
            }
          }
        } else if (c === COMMA) {
          if (depth > 0 && depth <= TRACKED_DEPTH) commas[depth - 1]++
          else if (depth > TRACKED_DEPTH) this.slotCost += COST_LARGE_MEMBER
        } else if (c <= 0x20) {
          continue // white space does not count as the previous byte
        }
        previous = c
      }
    }
    this.previous = previous
    this.depth = depth
    this.bytes += n
  }

  /**
   * The projection.
   * @param {{ chars?: number }} [known] the text's length in characters, where the caller has
   *   the string already: then the source string and the string values are sized exactly (every
   *   byte past ASCII sits inside a string, so the values hold `stringBytes - (bytes - chars)`)
   * @returns {{ bytes: number, sourceString: number, values: number, heap: number }}
   *   sourceString: the V8 string of the whole text; values: what JSON.parse builds from it;
   *   heap: both, with the margin (the text's own Buffer is not counted: the caller holds it)
   */
  result ({ chars } = {}) {
    // containers still open (truncated text) are charged as large
    let open = 0
    for (let d = 0; d < Math.min(this.depth, TRACKED_DEPTH); d++) open += (this.commas[d] + 1) * COST_LARGE_MEMBER
    const width = this.ascii ? 1 : 2
    const exact = Number.isSafeInteger(chars) && chars <= this.bytes
    const sourceString = (exact ? chars : this.bytes) * width
    const stringChars = exact ? Math.max(0, this.stringBytes - (this.bytes - chars)) : this.stringBytes
    const values = Math.ceil((stringChars * width + this.containers * COST_CONTAINER + this.slotCost + open) * COST_MARGIN)
    return { bytes: this.bytes, sourceString, values, heap: Math.ceil(sourceString * COST_MARGIN) + values }
  }
}

/**
 * The projected heap cost of `JSON.parse(buf.toString('utf8'))`.
 * @param {Uint8Array} buf
 * @param {{ chars?: number }} [known] see ParseCostMeter#result
 * @returns {{ bytes: number, sourceString: number, values: number, heap: number }}
 */
export function projectParseCost (buf, known) {
  const meter = new ParseCostMeter()
  meter.write(buf)
  return meter.result(known)
}
