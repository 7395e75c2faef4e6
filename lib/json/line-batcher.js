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
    if (this.pieceBytes + chunk.length >= this.batchBytes) {
      const cut = chunk.lastIndexOf(NEWLINE)
      if (cut !== -1) {
        this.pieces.push(chunk.subarray(0, cut + 1))
        this.emit()
        this.batchStart = this.offset + cut + 1
        chunk = chunk.subarray(cut + 1)
        this.offset += cut + 1
      }
    }
    if (chunk.length > 0) {
      this.pieces.push(chunk)
      this.pieceBytes += chunk.length
      this.offset += chunk.length
    }
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
