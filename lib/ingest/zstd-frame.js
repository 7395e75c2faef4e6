/**
 * Where a zstd frame ends (RFC 8878, 3.1.1), read from its headers alone, a
 * chunk at a time. Node's zstd stream starts a new frame on any write that
 * follows one that ended, where its whole decode stops at the first: the
 * framing (lib/ingest/gzip-framing.js) hands the stream the frame's bytes
 * and judges the rest itself, so a layer is one frame however it is split.
 * A header it cannot read ends nothing: zstd then refuses the bytes itself.
 */

const MAGIC = 0xFD2FB528
/** Skippable frames: magic 0x184D2A50 to 0x184D2A5F, a 4-byte size, then that many bytes. */
const SKIPPABLE_MASK = 0xFFFFFFF0
const SKIPPABLE = 0x184D2A50
const DICTIONARY_ID_BYTES = [0, 1, 2, 4]
const CONTENT_SIZE_BYTES = [0, 2, 4, 8]
const BLOCK_HEADER_BYTES = 3
const CHECKSUM_BYTES = 4
const BLOCK_RLE = 1
const BLOCK_RESERVED = 3

/** Follows one frame's headers across chunks: `take(chunk)` says how much of the chunk is the frame's. */
export class ZstdFrameEnd {
  /** Header bytes gathered until a header can be read. */
  #pending = Buffer.alloc(0)
  /** Bytes of the frame still to come before the next header (a block's content, a skippable frame's data). */
  #skip = 0
  /** What the next header is: 'magic', 'frame', 'block', 'size' (a skippable frame's), or 'checksum'. */
  #next = 'magic'
  #checksum = false
  #lastBlock = false
  /** The frame is over: nothing more is its. */
  ended = false
  /** The headers made no sense: the rest is left to zstd. */
  unreadable = false

  /**
   * @param {Buffer} chunk
   * @returns {number} how many of its bytes, from its start, belong to the frame
   */
  take (chunk) {
    let at = 0
    while (at < chunk.length && !this.ended && !this.unreadable) {
      if (this.#skip > 0) {
        const n = Math.min(this.#skip, chunk.length - at)
        this.#skip -= n
        at += n
        if (this.#skip === 0 && this.#next === 'end') this.ended = true
        continue
      }
      const need = this.#headerBytes() - this.#pending.length
      const piece = chunk.subarray(at, at + need)
      this.#pending = this.#pending.length === 0 ? Buffer.from(piece) : Buffer.concat([this.#pending, piece])
      at += piece.length
      // a frame header's size is known from its first byte: gather the rest before reading it
      if (this.#pending.length < this.#headerBytes()) continue
      const header = this.#pending
      this.#pending = Buffer.alloc(0)
      this.#read(header)
    }
    return this.unreadable ? chunk.length : at
  }

  /** Bytes the next header takes; a frame header's size is known once its descriptor is in. */
  #headerBytes () {
    switch (this.#next) {
      case 'magic': return 4
      case 'frame': return this.#pending.length === 0 ? 1 : frameHeaderBytes(this.#pending[0])
      case 'block': return BLOCK_HEADER_BYTES
      case 'size': return 4
      case 'checksum': return CHECKSUM_BYTES
    }
    return 1
  }

  #read (header) {
    if (this.#next === 'magic') {
      const magic = header.readUInt32LE(0)
      if (magic === MAGIC) this.#next = 'frame'
      else if ((magic & SKIPPABLE_MASK) >>> 0 === SKIPPABLE) this.#next = 'size'
      else this.unreadable = true
    } else if (this.#next === 'frame') {
      const descriptor = header[0]
      if ((descriptor & 0x08) !== 0) { this.unreadable = true; return } // the reserved bit
      this.#checksum = (descriptor & 0x04) !== 0
      this.#next = 'block'
    } else if (this.#next === 'size') {
      this.#skip = header.readUInt32LE(0)
      this.#next = 'end'
      if (this.#skip === 0) this.ended = true
    } else if (this.#next === 'block') {
      const word = header[0] | (header[1] << 8) | (header[2] << 16)
      this.#lastBlock = (word & 1) === 1
      const type = (word >>> 1) & 3
      const size = word >>> 3
      if (type === BLOCK_RESERVED) { this.unreadable = true; return }
      this.#skip = type === BLOCK_RLE ? 1 : size
      if (this.#lastBlock) this.#next = this.#checksum ? 'checksum' : 'end'
      if (this.#skip === 0 && this.#next === 'end') this.ended = true
    } else if (this.#next === 'checksum') {
      this.ended = true
    }
  }
}

/** A frame header's size from its descriptor byte: descriptor, window, dictionary id, content size. */
function frameHeaderBytes (descriptor) {
  const singleSegment = (descriptor & 0x20) !== 0
  const contentSizeFlag = descriptor >>> 6
  const contentSize = contentSizeFlag === 0 ? (singleSegment ? 1 : 0) : CONTENT_SIZE_BYTES[contentSizeFlag]
  return 1 + (singleSegment ? 0 : 1) + DICTIONARY_ID_BYTES[descriptor & 3] + contentSize
}
