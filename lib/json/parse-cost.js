/**
 * What `JSON.parse` will cost, projected from the text before it runs. JSON.parse cannot be stopped
 * half-way when memory runs short, so every route that parses a body whole (/bad, /good's threads per
 * batch) projects first and refuses what does not fit. The figure is an upper bound for every shape,
 * not an average: `[{},{},...]` costs many times the heap per byte of long strings (docs/limits.md).
 * The weights were measured on Node 20 and 24 for dense shapes; test/slow/parse-cost.test.js checks
 * them against real parses. Large arrays and objects cost more per slot (a growing temporary list, a
 * dictionary), so containers are sized as they close.
 */
import { isAscii } from 'node:buffer'
import { QUOTE, OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET, COMMA, closingQuote } from './bytes.js'

export const COST_CONTAINER = 72 // the object or array and its backing store's header
const COST_SMALL_SLOT = 24 // per element of a small array, per member of a small object
export const COST_LARGE_ELEMENT = 56 // the slot, the parser's temporary list as it grows, a boxed number
const COST_LARGE_MEMBER = 256 // a dictionary entry and an internalised key
const SMALL_ARRAY = 1024
const COST_MARGIN = 1.1 // RSS runs ahead of the heap: pages the collector has not returned yet
const SMALL_OBJECT = 64
const TRACKED_DEPTH = 256 // deeper containers are not sized: their slots are charged as large
/**
 * An upper bound of what the meter projects for a batch of `length` bytes (brackets included) with
 * `stringBytes` inside strings and `containers` opening brackets: each term the meter adds, at its
 * largest (every other byte a large object's comma), so the meter's figure can only be lower.
 */
export function costBound (length, stringBytes, containers) {
  return Math.ceil(2 * length * COST_MARGIN) +
    Math.ceil((2 * stringBytes + COST_CONTAINER * containers + COST_LARGE_MEMBER * (length - stringBytes)) * COST_MARGIN)
}

/**
 * Tally the parse cost of JSON text a chunk at a time, an upper bound for text that parses (invalid
 * JSON is JSON.parse's to refuse, cheaply). Text with any byte past ASCII is taken as a two-byte V8
 * string: exact for ASCII, a few tens of percent high otherwise, and fast.
 */
export class ParseCostMeter {
  constructor () {
    this.bytes = 0
    this.ascii = true
    this.stringBytes = 0 // inside strings and keys: parsed strings are copies
    this.containers = 0
    this.slotCost = 0
    this.inString = false
    this.escapeCarry = false
    this.previous = 0 // the last byte outside strings that was not white space: is a closing container empty?
    // per open container: is it an object, and the commas seen in it
    this.depth = 0
    this.isObject = new Uint8Array(TRACKED_DEPTH)
    this.commas = new Float64Array(TRACKED_DEPTH)
  }

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
   * The projection: `sourceString`, the V8 string of the whole text; `values`, what JSON.parse builds;
   * `heap`, both with the margin (the text's Buffer is the caller's). `known.chars`: the text's length
   * in characters, where the caller has the string: then both are sized exactly.
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

/** The projected heap cost of `JSON.parse(buf.toString('utf8'))` (`known`: see ParseCostMeter#result). */
export function projectParseCost (buf, known) {
  const meter = new ParseCostMeter()
  meter.write(buf)
  return meter.result(known)
}
