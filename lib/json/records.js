/**
 * Record boundaries found in a stream of JSON bytes, so that V8's JSON.parse parses batches of whole
 * records. The scanner reads each byte once, tracking strings, escapes and depth, and validates the
 * structure around the records itself: `[` + batch + `]` is valid JSON exactly when every record in it
 * is. Inside strings it jumps from quote to quote with `indexOf`: fast on text-heavy records.
 */
import { jsonInvalid, recordTooLarge, tooDeep } from '../errors/index.js'
import { findJsonError } from './validate.js'
import { costBound } from './parse-cost.js'
import {
  QUOTE, OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET, COMMA, COLON, closingQuote, endsScalar, isWhitespace, detachPieces
} from './bytes.js'
import {
  S_TOP, S_OBJ_FIRST, S_OBJ_KEY, S_COLON, S_MEMBER, S_AFTER_MEMBER, S_ARR_FIRST, S_ARR_NEXT, S_AFTER_RECORD, S_VALUE, S_END,
  V_RECORD, V_OTHER, V_KEY, V_TOP
} from './scanner-states.js'

// the formats and their detection, and NDJSON's batcher, live apart; the ingests import them from here
export { FORMATS, DETECT_BYTES, detectFormat } from './format.js'
export { LineBatcher } from './line-batcher.js'

const ITEMS_KEY_MAX = 40 // `"items"` spelt with \u escapes is 32 bytes

function newBytes (length) { return new Uint8Array(length) }

/**
 * Streaming record scanner for the `json` and `array` formats: `write(chunk)`, then `end()`. It calls
 * `onBatch({ kind: 'records'|'values', generation, offset, bytes })`, `bytes` (from `allocate`: pool.js's
 * SpareBuffers) holding `[` + the values + `]`, `offset` its first value's. Structural errors throw 422.
 * Items under a repeated `items` key get a new generation: like JSON.parse, the last one wins.
 * `inPlace`: each chunk has a byte to spare before and after it in its buffer, and a batch that lies
 * in one chunk is a view of it, the values between the two bytes its `[` and `]` are written to when
 * it is parsed (parse-batch.js); a value left unfinished is kept as a view until `detachFrom`.
 */
export class RecordScanner {
  constructor (format, { batchBytes, maxValueBytes = Infinity, maxDepth = Infinity, onBatch, allocate = newBytes, inPlace = false }) {
    this.format = format
    this.inPlace = inPlace
    this.batchBytes = batchBytes
    this.maxValueBytes = maxValueBytes
    this.maxDepth = maxDepth
    this.maxInnerDepth = maxDepth // nesting allowed inside the value being scanned
    this.onBatch = onBatch
    this.allocate = allocate
    this.state = S_TOP
    this.offset = 0 // absolute offset of the current chunk's first byte
    // value scanning
    this.kind = 0
    this.returnState = 0
    this.depth = 0
    this.inString = false
    this.escapeCarry = false // the previous chunk ended on an odd run of backslashes in a string
    this.scalar = false
    // the batch being gathered
    this.pieces = []
    this.pieceBytes = 0
    this.batchStart = -1
    this.batchKind = 0
    this.valueStart = -1 // absolute start of the value being scanned
    this.lastValueEnd = -1 // absolute end of the last complete value
    // json format bookkeeping
    this.generation = 0
    this.lastItemsIsArray = false
    this.memberIsItems = false
    this.topIsShape = false // the top-level value has the shape the format needs
    // What the batch holds, for its bound on the parse cost (costBound): a batch bound within the cost
    // allowed is not projected again on a thread. Counted only where the scanner reads strings as the
    // projection does; a scalar (crossed without looking for quotes) or a cut batch leaves it unbounded.
    this.stringBytes = 0
    this.opens = 0
    this.boundable = true
  }

  error (reason, at) {
    return jsonInvalid(reason, at)
  }

  unexpected (c, at) {
    const shown = c >= 0x20 && c < 0x7f ? `'${String.fromCharCode(c)}'` : `byte 0x${c.toString(16).padStart(2, '0')}`
    return this.error(`unexpected character ${shown}`, at)
  }

  /** Start scanning a value whose first byte is at index i of chunk. */
  beginValue (chunk, i, kind, returnState) {
    const c = chunk[i]
    this.kind = kind
    this.returnState = returnState
    this.valueStart = this.offset + i
    this.depth = 0
    this.inString = false
    this.escapeCarry = false
    this.scalar = false
    // the value's own brackets sit below the document's: the records array (and the object around it)
    const outer = kind === V_RECORD ? (this.format === 'array' ? 1 : 2) : (kind === V_TOP ? 0 : 1)
    this.maxInnerDepth = this.maxDepth - outer
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      this.depth = 1
      this.opens++
      if (this.maxInnerDepth < 1) throw tooDeep(this.maxDepth, this.offset + i)
    }
    else if (c === QUOTE) this.inString = true
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET || c === COMMA || c === COLON) throw this.unexpected(c, this.offset + i)
    else {
      this.scalar = true
      this.boundable = false
    }
    if (this.batchStart === -1) {
      this.batchStart = this.valueStart
      this.batchKind = kind === V_RECORD ? V_RECORD : V_OTHER
      this.batchChunkStart = i
    }
    this.state = S_VALUE
    return i + 1
  }

  /**
   * Scan inside the current value from index i.
   * @returns {number} index after the value's last byte, or -1 if the chunk ended inside it
   */
  scanValue (chunk, i) {
    const n = chunk.length
    if (this.scalar) {
      while (i < n && !endsScalar(chunk[i])) i++
      return i < n ? i : -1
    }
    let depth = this.depth
    for (;;) {
      if (this.inString) {
        // jump to the next quote, then check it is not escaped
        const q = closingQuote(chunk, i, this)
        if (q === -1) {
          this.stringBytes += n - i
          this.depth = depth
          return -1
        }
        this.stringBytes += q - i
        i = q + 1
        this.inString = false
        if (depth === 0) { this.depth = 0; return i } // a string value ended
        continue
      }
      // outside strings inside a container
      for (; i < n; i++) {
        const c = chunk[i]
        // digits, signs, points, commas, colons and white space all sort below `[`, and
        // of the bytes below it only the quote matters: one test for most of what lies here
        if (c < OPEN_BRACKET && c !== QUOTE) continue
        if (c === QUOTE) { this.inString = true; i++; break }
        if (c === OPEN_BRACE || c === OPEN_BRACKET) {
          depth++
          this.opens++
          if (depth > this.maxInnerDepth) throw tooDeep(this.maxDepth, this.offset + i)
        } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
          depth--
          if (depth === 0) { this.depth = 0; return i + 1 }
        }
      }
      if (i >= n && !this.inString) { this.depth = depth; return -1 }
      if (i >= n) { this.depth = depth; this.escapeCarry = false; return -1 }
    }
  }

  /** The value ended at absolute offset `end` (exclusive), index `i` in chunk. */
  endValue (chunk, i) {
    const end = this.offset + i
    // one that ended in the chunk it passed the limit in (keepTail sees those that run on)
    if (end - this.valueStart > this.maxValueBytes) throw recordTooLarge(this.maxValueBytes, end - this.valueStart, this.valueStart)
    this.lastValueEnd = end
    if (this.kind === V_KEY) {
      // keys go to a worker for validation like any value; a short one is decoded here to see if it is "items"
      let key = null
      if (this.pieceBytes + (i - this.batchChunkStart) <= ITEMS_KEY_MAX) {
        const raw = Buffer.concat([...this.pieces, chunk.subarray(this.batchChunkStart, i)])
        try {
          key = JSON.parse(raw.toString('utf8'))
        } catch {
          // an invalid key: the worker that validates it reports where
        }
      }
      this.memberIsItems = key === 'items'
      this.flush(chunk, i, end)
      this.state = S_COLON
      return
    }
    if (this.kind === V_TOP) {
      // the top-level value was not the shape the format needs: keep it for validation
      this.state = S_END
    } else {
      this.state = this.returnState
    }
    const size = this.pieceBytes + (i - this.batchChunkStart)
    if (this.kind !== V_RECORD || size >= this.batchBytes) this.flush(chunk, i, end)
  }

  /** Emit the gathered batch, ending at index i of chunk (absolute `end`). */
  flush (chunk, i, end) {
    if (this.batchStart === -1) return
    const length = end - this.batchStart
    let bytes
    if (this.inPlace && this.pieces.length === 0 && chunk.length > 0) {
      // within this chunk: its spare bytes around take the brackets
      bytes = new Uint8Array(chunk.buffer, chunk.byteOffset + this.batchChunkStart - 1, length + 2)
    } else {
      this.pieces.push(chunk.subarray(this.batchChunkStart, i))
      bytes = this.allocate(length + 2)
      bytes[0] = OPEN_BRACKET
      let at = 1
      for (const piece of this.pieces) {
        bytes.set(piece, at)
        at += piece.length
      }
      bytes[at] = CLOSE_BRACKET
    }
    const batch = {
      kind: this.batchKind === V_RECORD ? 'records' : 'values',
      generation: this.generation,
      offset: this.batchStart,
      bytes,
      // the batch's own `[` is a container too
      costBound: this.boundable ? costBound(bytes.length, this.stringBytes, this.opens + 1) : Infinity
    }
    this.stringBytes = 0
    this.opens = 0
    this.boundable = true
    this.pieces = []
    this.pieceBytes = 0
    this.batchStart = -1
    this.onBatch(batch)
  }

  /** Keep the unfinished tail of a chunk that belongs to the batch or key. */
  keepTail (chunk) {
    if (this.batchStart === -1) return
    if (this.state !== S_VALUE && this.pieceBytes + chunk.length - this.batchChunkStart > this.batchBytes) {
      // only whitespace and separators since the last value: send what is complete and drop the padding
      this.flushCompleted(chunk)
      return
    }
    if (this.state === S_VALUE && this.offset + chunk.length - this.valueStart > this.maxValueBytes) {
      throw this.partialValueError(chunk) ??
        recordTooLarge(this.maxValueBytes, this.offset + chunk.length - this.valueStart, this.valueStart)
    }
    const piece = chunk.subarray(this.batchChunkStart)
    this.pieces.push(piece)
    this.pieceBytes += piece.length
    this.batchChunkStart = 0
  }

  /** Copy what is kept of an unfinished value out of `buffer`, which is about to be reused or sent. */
  detachFrom (buffer) {
    detachPieces(this.pieces, buffer)
  }

  /** A value unfinished where scanning must stop: a wrong quote or bracket inside it, found by the validator. */
  partialValueError (chunk) {
    if (this.state !== S_VALUE || this.batchStart === -1) return null
    const gathered = Buffer.concat([...this.pieces, chunk.subarray(this.batchChunkStart)])
    const partial = gathered.subarray(this.valueStart - this.batchStart)
    const found = findJsonError(partial)
    if (found && found.offset < partial.length) return jsonInvalid(found.reason, this.valueStart + found.offset)
    return null
  }

  /** Scan one chunk of inflated bytes. */
  write (chunk) {
    try {
      this.scanChunk(chunk)
      this.keepTail(chunk)
    } catch (err) {
      // records before the fault may hold an earlier one: send them first
      this.flushCompleted(chunk)
      throw err
    }
    this.offset += chunk.length
  }

  /** Emit the batch's complete values, up to the end of the last one. */
  flushCompleted (chunk) {
    if (this.batchStart === -1 || this.lastValueEnd <= this.batchStart) return
    const gathered = Buffer.concat([...this.pieces, chunk.subarray(this.batchChunkStart)])
    const length = this.lastValueEnd - this.batchStart
    // what was counted may run past the cut: the threads project this batch themselves
    this.boundable = false
    this.pieces = [gathered.subarray(0, length)]
    this.pieceBytes = 0
    this.batchChunkStart = 0
    this.flush(new Uint8Array(0), 0, this.lastValueEnd)
  }

  // from index `from`; `handBack`: stop after the first record that ends (lib/json/cutter.js goes on)
  scanChunk (chunk, from = 0, handBack = false) {
    const n = chunk.length
    let i = from
    if (from === 0 && this.batchStart !== -1) this.batchChunkStart = 0
    while (i < n) {
      const state = this.state
      if (state === S_VALUE) {
        const end = this.scanValue(chunk, i)
        if (end === -1) { i = n; break }
        i = end
        this.endValue(chunk, i)
        if (handBack && this.state === S_AFTER_RECORD) return i
        continue
      }
      const c = chunk[i]
      if (isWhitespace(c)) { i++; continue }
      const at = this.offset + i
      switch (state) {
        case S_TOP:
          if (this.format === 'json' && c === OPEN_BRACE) {
            this.topIsShape = true
            this.state = S_OBJ_FIRST
            i++
          } else if (this.format === 'array' && c === OPEN_BRACKET) {
            this.topIsShape = true
            this.generation++
            this.lastItemsIsArray = true
            this.state = S_ARR_FIRST
            i++
          } else i = this.beginValue(chunk, i, V_TOP, S_END)
          break
        case S_OBJ_FIRST:
          if (c === CLOSE_BRACE) { this.state = S_END; i++; break }
        // falls through
        case S_OBJ_KEY:
          if (c !== QUOTE) throw this.unexpected(c, at)
          i = this.beginValue(chunk, i, V_KEY, S_COLON)
          break
        case S_COLON:
          if (c !== COLON) throw this.unexpected(c, at)
          this.state = S_MEMBER
          i++
          break
        case S_MEMBER:
          if (this.memberIsItems) {
            this.lastItemsIsArray = c === OPEN_BRACKET
            if (c === OPEN_BRACKET) {
              this.generation++
              this.state = S_ARR_FIRST
              i++
              break
            }
          }
          i = this.beginValue(chunk, i, V_OTHER, S_AFTER_MEMBER)
          break
        case S_AFTER_MEMBER:
          if (c === COMMA) this.state = S_OBJ_KEY
          else if (c === CLOSE_BRACE) this.state = S_END
          else throw this.unexpected(c, at)
          i++
          break
        case S_ARR_FIRST:
          if (c === CLOSE_BRACKET) { this.state = this.format === 'array' ? S_END : S_AFTER_MEMBER; i++; break }
          i = this.beginValue(chunk, i, V_RECORD, S_AFTER_RECORD)
          break
        case S_ARR_NEXT:
          i = this.beginValue(chunk, i, V_RECORD, S_AFTER_RECORD)
          break
        case S_AFTER_RECORD:
          if (c === COMMA) this.state = S_ARR_NEXT
          else if (c === CLOSE_BRACKET) {
            this.flush(chunk, i, at)
            this.state = this.format === 'array' ? S_END : S_AFTER_MEMBER
          } else throw this.unexpected(c, at)
          i++
          break
        case S_END:
          throw this.error('unexpected content after the JSON value', at)
      }
    }
    return i
  }

  /** The input ended: emit what is gathered and check the document is complete (`{ generation, shapeOk }`). */
  end () {
    if (this.state === S_VALUE && this.scalar && this.kind === V_TOP) {
      // a scalar top-level value ends with the input
      this.flush(new Uint8Array(0), 0, this.offset)
      this.state = S_END
    }
    if (this.state !== S_END) {
      const empty = new Uint8Array(0)
      const err = this.partialValueError(empty) ?? this.error('unexpected end of input', this.offset)
      this.flushCompleted(empty)
      throw err
    }
    this.flush(new Uint8Array(0), 0, this.offset)
    return {
      generation: this.generation,
      shapeOk: this.topIsShape && this.lastItemsIsArray
    }
  }
}
