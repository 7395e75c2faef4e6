/** NDJSON's batcher for /good: no scanning, lines cut into batches at a newline. Import from records.js. */
import { recordTooLarge } from '../errors/index.js'
import { NEWLINE } from './bytes.js'

function newBytes (length) { return new Uint8Array(length) }

/** Streaming batcher for NDJSON: cuts after a newline once a batch is big enough; the threads split the lines. */
export class LineBatcher {
  // allocate: where a batch's bytes go, as for the RecordScanner
  constructor ({ batchBytes, maxValueBytes = Infinity, onBatch, allocate = newBytes }) {
    this.batchBytes = batchBytes
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
    const lastNewline = chunk.lastIndexOf(NEWLINE)
    if (lastNewline !== -1) this.lineStart = this.offset + lastNewline + 1
    else if (this.offset + chunk.length - this.lineStart > this.maxValueBytes) {
      throw recordTooLarge(this.maxValueBytes, this.offset + chunk.length - this.lineStart, this.lineStart)
    }
    // a batch ends at the first newline once it holds batchBytes: a chunk larger than a batch is
    // cut into several, each small enough for the threads' UTF-8 decoder (utf8.js)
    let from = 0
    while (lastNewline >= from && this.pieceBytes + lastNewline + 1 - from >= this.batchBytes) {
      const cut = chunk.indexOf(NEWLINE, from + Math.max(0, this.batchBytes - this.pieceBytes - 1))
      this.pieces.push(chunk.subarray(from, cut + 1))
      this.emit()
      this.batchStart = this.offset + cut + 1
      from = cut + 1
    }
    if (from < chunk.length) {
      this.pieces.push(from === 0 ? chunk : chunk.subarray(from))
      this.pieceBytes += chunk.length - from
    }
    this.offset += chunk.length
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
