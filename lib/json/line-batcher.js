/** NDJSON's batcher for /good: no scanning, lines cut into batches at a newline. Import from records.js. */
import { recordTooLarge } from '../errors/index.js'
import { NEWLINE, detachPieces } from './bytes.js'

function newBytes (length) { return new Uint8Array(length) }

/**
 * Streaming batcher for NDJSON: cuts after a newline once a batch is big enough; the threads split the lines.
 * `allocate` and `inPlace` as for the RecordScanner: in place, a batch within one chunk is a view of it.
 */
export class LineBatcher {
  constructor ({ batchBytes, maxValueBytes = Infinity, onBatch, allocate = newBytes, inPlace = false }) {
    this.batchBytes = batchBytes
    this.inPlace = inPlace
    this.allocate = allocate
    this.maxValueBytes = maxValueBytes
    this.lineStart = 0 // absolute offset where the current line began
    this.onBatch = onBatch
    this.pieces = []
    this.pieceBytes = 0
    this.offset = 0
    this.batchStart = 0
  }

  write (chunk) {
    const firstNewline = chunk.indexOf(NEWLINE)
    const lastNewline = firstNewline === -1 ? -1 : chunk.lastIndexOf(NEWLINE)
    this.checkLines(chunk, firstNewline, lastNewline)
    if (lastNewline !== -1) this.lineStart = this.offset + lastNewline + 1
    // a batch ends at the first newline once it holds batchBytes: a chunk larger than a batch is
    // cut into several, each small enough for the threads' UTF-8 decoder (utf8.js)
    let from = 0
    while (lastNewline >= from && this.pieceBytes + lastNewline + 1 - from >= this.batchBytes) {
      const cut = chunk.indexOf(NEWLINE, from + Math.max(0, this.batchBytes - this.pieceBytes - 1))
      if (this.inPlace && this.pieces.length === 0) {
        this.onBatch({ kind: 'lines', generation: 1, offset: this.batchStart, bytes: chunk.subarray(from, cut + 1) })
      } else {
        this.pieces.push(chunk.subarray(from, cut + 1))
        this.emit()
      }
      this.batchStart = this.offset + cut + 1
      from = cut + 1
    }
    if (from < chunk.length) {
      this.pieces.push(from === 0 ? chunk : chunk.subarray(from))
      this.pieceBytes += chunk.length - from
    }
    this.offset += chunk.length
  }

  /** Each line the chunk ends, and the one it ends inside, within the record limit (`first`, `last`: its first and last newline). */
  checkLines (chunk, first, last) {
    const most = this.maxValueBytes
    const runsOn = first === -1 ? chunk.length : first
    if (this.offset + runsOn - this.lineStart > most) this.tooLarge(this.lineStart, this.offset + runsOn)
    if (first === -1) return
    if (chunk.length - last - 1 > most) this.tooLarge(this.offset + last + 1, this.offset + chunk.length)
    // the lines between the first newline and the last are shorter than the bytes between them
    if (last - first - 1 <= most) return
    for (let at = first; at < last;) {
      const next = chunk.indexOf(NEWLINE, at + 1)
      if (next - at - 1 > most) this.tooLarge(this.offset + at + 1, this.offset + next)
      at = next
    }
  }

  tooLarge (start, end) {
    throw recordTooLarge(this.maxValueBytes, end - start, start)
  }

  /** Copy the lines kept since the last batch out of `buffer`, which is about to be reused or sent. */
  detachFrom (buffer) {
    detachPieces(this.pieces, buffer)
  }

  emit () {
    // one copy, into memory of the batch's own that can be transferred to a parse thread
    let length = 0
    for (const piece of this.pieces) length += piece.length
    const bytes = this.allocate(length)
    let at = 0
    for (const piece of this.pieces) {
      bytes.set(piece, at)
      at += piece.length
    }
    this.pieces = []
    this.pieceBytes = 0
    if (length > 0) this.onBatch({ kind: 'lines', generation: 1, offset: this.batchStart, bytes })
  }

  end () {
    this.emit()
    return { generation: 1, shapeOk: true }
  }
}
