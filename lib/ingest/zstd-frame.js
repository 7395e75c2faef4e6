/**
 * Where each zstd frame of a layer ends (RFC 8878, 3.1), read from the headers alone, a read at a
 * time. A layer is one or more frames, skippable ones too (Node's own compressing stream ends with an
 * empty frame). Node's zstd stream decodes to a frame's end and drops the rest of that write, so the
 * framing (gzip-framing.js) writes each frame apart and judges a byte after a frame that starts
 * none. A header it cannot read ends nothing: zstd refuses it. A frame asking a window past
 * ZSTD_WINDOW_LOG_MAX is refused here, decoded in one call or streamed.
 */
import { encodingInvalid, encodingTrailingData, tooManyFrames } from '../errors/index.js'

/**
 * The largest window a zstd frame may ask, as a power of two: the most RFC 9659 (3) lets the content
 * coding use. zlib's default would let one streamed body make its decoder hold 16 times that, where
 * /good holds a constant; and zstd checks only the frames it decodes streamed, so the rule is kept here.
 */
export const ZSTD_WINDOW_LOG_MAX = 23
const WINDOW_MAX = 2 ** ZSTD_WINDOW_LOG_MAX

// Frames a layer may hold: each is a write to zlib, a trip to its thread pool (a gzip member costs none);
// half the reads of /good's largest body (docs/errors.md).
export const MAX_FRAMES = 4096

const MAGIC = 0xFD2FB528
// skippable frames: magic 0x184D2A50 to 0x184D2A5F, a 4-byte size, then that many bytes
const SKIPPABLE_MASK = 0xFFFFFFF0
const SKIPPABLE = 0x184D2A50
const MAGIC_BYTES = 4
const DICTIONARY_ID_BYTES = [0, 1, 2, 4]
const CONTENT_SIZE_BYTES = [0, 2, 4, 8]
const BLOCK_HEADER_BYTES = 3
const CHECKSUM_BYTES = 4
const BLOCK_RLE = 1
const BLOCK_RESERVED = 3
const EMPTY = Buffer.alloc(0)

/**
 * Follows a layer's frames across reads: `cut(chunk)` gives the pieces to write to zstd, each ending at
 * most at a frame's end, and the refusal of a byte after a frame that starts none (or past MAX_FRAMES);
 * `end()` that of a layer ending in part of a magic number.
 */
export class ZstdFrames {
  #pending = EMPTY // header bytes gathered until a header can be read
  #skip = 0 // bytes of the frame before the next header (a block's content, a skippable frame's data)
  #next = 'magic' // 'magic', 'frame', 'block', 'size' (a skippable frame's), 'checksum', or 'end'
  #checksum = false
  #offset = 0
  #frames = 0
  #unreadable = false // the headers made no sense: the rest is zstd's to refuse
  #onFrameEnd // told the offset in the layer where each frame ends
  #refusal = null // of a frame's window, found while reading its header
  window = 0 // the largest window a frame asked so far, in bytes

  constructor (onFrameEnd = noFrameEnd) {
    this.#onFrameEnd = onFrameEnd
  }

  /** The pieces to write to zstd one by one, then the refusal of the layer after them, if any (400 or 413). */
  cut (chunk) {
    const pieces = []
    let start = 0
    let at = 0
    // each piece is part of this read, or a whole magic number: a piece as long as what is left to
    // write is then the layer's last bytes, and only those get zlib's finishing flush
    // (ZlibBase._transform gives it to a write as long as what is left once the input has ended)
    function pieceUpTo (end) {
      if (end > start) pieces.push(chunk.subarray(start, end))
      start = end
    }
    while (at < chunk.length && !this.#unreadable) {
      if (this.#skip === 0) {
        // after a frame, a magic number is withheld from zstd until it is whole and known
        const withheld = this.#next === 'magic' && this.#frames > 0
        const need = this.#headerBytes() - this.#pending.length
        const piece = chunk.subarray(at, at + need)
        this.#pending = this.#pending.length === 0 ? Buffer.from(piece) : Buffer.concat([this.#pending, piece])
        at += piece.length
        if (withheld) start = at
        // a frame header's size is known from its first byte: gather the rest before reading it
        if (this.#pending.length < this.#headerBytes()) continue
        const header = this.#pending
        this.#pending = EMPTY
        if (withheld && !isMagic(header.readUInt32LE(0))) {
          return { pieces, error: encodingTrailingData('zstd', this.#offset + at - header.length, header[0]) }
        }
        if (withheld && this.#frames === MAX_FRAMES) {
          return { pieces, error: tooManyFrames('zstd', MAX_FRAMES, this.#offset + at - header.length) }
        }
        if (withheld) pieces.push(header)
        this.#read(header, this.#offset + at - header.length)
        if (this.#refusal !== null) {
          // the frame's header goes no further: its decoder would be made from it
          if (!withheld) pieceUpTo(at - header.length)
          return { pieces, error: this.#refusal }
        }
      } else {
        const n = Math.min(this.#skip, chunk.length - at)
        this.#skip -= n
        at += n
      }
      if (this.#next === 'end' && this.#skip === 0) {
        pieceUpTo(at)
        this.#onFrameEnd(this.#offset + at)
        this.#frames++
        this.#next = 'magic'
      }
    }
    pieceUpTo(chunk.length)
    this.#offset += chunk.length
    return { pieces, error: null }
  }

  /** 400 `encoding.trailing.data` for part of a magic number after the last frame, or null. */
  end () {
    if (this.#frames === 0 || this.#next !== 'magic' || this.#pending.length === 0) return null
    return encodingTrailingData('zstd', this.#offset - this.#pending.length, this.#pending[0])
  }

  /** Bytes the next header takes; a frame header's size is known once its descriptor is in. */
  #headerBytes () {
    switch (this.#next) {
      case 'magic': return MAGIC_BYTES
      case 'frame': return this.#pending.length === 0 ? 1 : frameHeaderBytes(this.#pending[0])
      case 'block': return BLOCK_HEADER_BYTES
      case 'size': return 4
      case 'checksum': return CHECKSUM_BYTES
    }
    return 1
  }

  #read (header, offset) {
    if (this.#next === 'magic') {
      const magic = header.readUInt32LE(0)
      if (magic === MAGIC) this.#next = 'frame'
      else if (isSkippable(magic)) this.#next = 'size'
      else this.#unreadable = true
    } else if (this.#next === 'frame') {
      const descriptor = header[0]
      if ((descriptor & 0x08) !== 0) { this.#unreadable = true; return } // the reserved bit
      this.#checksum = (descriptor & 0x04) !== 0
      this.#next = 'block'
      const { asked, held } = frameWindow(header)
      if (asked > WINDOW_MAX) {
        this.#refusal = encodingInvalid('zstd', `a frame's window is over 8 MiB, the most RFC 9659 lets the zstd content coding use ` +
          `(the frame at byte ${offset - MAGIC_BYTES} of the layer asks ${asked} bytes)`, null)
        return
      }
      this.window = Math.max(this.window, held)
    } else if (this.#next === 'size') {
      this.#skip = header.readUInt32LE(0)
      this.#next = 'end'
    } else if (this.#next === 'block') {
      const word = header[0] | (header[1] << 8) | (header[2] << 16)
      const lastBlock = (word & 1) === 1
      const type = (word >>> 1) & 3
      const size = word >>> 3
      if (type === BLOCK_RESERVED) { this.#unreadable = true; return }
      this.#skip = type === BLOCK_RLE ? 1 : size
      if (lastBlock) this.#next = this.#checksum ? 'checksum' : 'end'
    } else if (this.#next === 'checksum') {
      this.#next = 'end'
    }
  }
}

function noFrameEnd () {}

function isSkippable (magic) {
  return ((magic & SKIPPABLE_MASK) >>> 0) === SKIPPABLE
}

function isMagic (magic) {
  return magic === MAGIC || isSkippable(magic)
}

/**
 * The window a frame asks (RFC 8878, 3.1.1.1.2): its Window_Descriptor's, or its content size for a
 * single-segment frame; and what its decoder holds of it, no more than the content size (`{ asked, held }`).
 */
function frameWindow (header) {
  const descriptor = header[0]
  const singleSegment = (descriptor & 0x20) !== 0
  const contentSizeFlag = descriptor >>> 6
  const sizeBytes = contentSizeFlag === 0 ? (singleSegment ? 1 : 0) : CONTENT_SIZE_BYTES[contentSizeFlag]
  const sizeAt = 1 + (singleSegment ? 0 : 1) + DICTIONARY_ID_BYTES[descriptor & 3]
  let contentSize = Infinity
  if (sizeBytes === 1) contentSize = header[sizeAt]
  else if (sizeBytes === 2) contentSize = header.readUInt16LE(sizeAt) + 256
  else if (sizeBytes === 4) contentSize = header.readUInt32LE(sizeAt)
  else if (sizeBytes === 8) contentSize = Number(header.readBigUInt64LE(sizeAt))
  if (singleSegment) return { asked: contentSize, held: contentSize }
  const exponent = header[1] >>> 3
  const mantissa = header[1] & 7
  const base = 2 ** (10 + exponent)
  const asked = base + (base / 8) * mantissa
  return { asked, held: Math.min(asked, contentSize) }
}

/** A frame header's size from its descriptor byte: descriptor, window, dictionary id, content size. */
function frameHeaderBytes (descriptor) {
  const singleSegment = (descriptor & 0x20) !== 0
  const contentSizeFlag = descriptor >>> 6
  const contentSize = contentSizeFlag === 0 ? (singleSegment ? 1 : 0) : CONTENT_SIZE_BYTES[contentSizeFlag]
  return 1 + (singleSegment ? 0 : 1) + DICTIONARY_ID_BYTES[descriptor & 3] + contentSize
}
