/**
 * Where each zstd frame of a layer ends (RFC 8878, 3.1), read from the
 * headers alone, a read at a time. A zstd layer is one or more frames back
 * to back, skippable ones too (3.1: "one or more frames"; Node 24.21's own
 * compressing stream ends with an empty second frame). Node's zstd stream
 * decodes up to the end of a frame and drops the rest of that write, then
 * starts a new frame on the next write; so the framing
 * (lib/ingest/gzip-framing.js) writes each frame apart, and judges a byte
 * after a frame that starts no frame itself. A header it cannot read ends
 * nothing: zstd then refuses the bytes itself. Each frame's header also
 * says the window its decoder will hold: the largest so far is `window`,
 * and a frame that asks more than ZSTD_WINDOW_LOG_MAX allows is refused
 * here, whether zstd would decode it in one call or streamed.
 */
import { encodingInvalid, encodingTrailingData, tooManyFrames } from '../errors/index.js'

/**
 * The largest window a zstd frame may ask of the decoder, as a power of two: 8 MiB, the most
 * RFC 9659 (section 3) lets the zstd content coding use. zlib's default (2^27, 128 MiB) would let
 * one streamed body make its decoder hold that much, where /good holds a constant. A frame's window
 * is its Window_Descriptor's, or its content size where it has none (a single-segment frame, RFC
 * 8878 3.1.1.1.2): zstd itself checks only the frames it decodes streamed, not those it decodes
 * in one call, so the rule is kept here for all.
 */
export const ZSTD_WINDOW_LOG_MAX = 23
const WINDOW_MAX = 2 ** ZSTD_WINDOW_LOG_MAX

/**
 * Frames a layer may hold: each is a write to zlib, a trip to its thread pool, where a gzip layer's
 * members cost none; 4096 is half the reads of /good's largest body (512 MiB in 64 KiB reads).
 */
export const MAX_FRAMES = 4096

const MAGIC = 0xFD2FB528
/** Skippable frames: magic 0x184D2A50 to 0x184D2A5F, a 4-byte size, then that many bytes. */
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
 * Follows a layer's frames across reads: `cut(chunk)` gives the pieces to
 * write to zstd, each ending at most at the end of a frame, and the
 * refusal of a byte after a frame that starts none (or of a frame past
 * MAX_FRAMES); `end()` that of a layer that ends with part of a magic
 * number after its last frame.
 */
export class ZstdFrames {
  /** Header bytes gathered until a header can be read. */
  #pending = EMPTY
  /** Bytes of the frame still to come before the next header (a block's content, a skippable frame's data). */
  #skip = 0
  /** What the next header is: 'magic', 'frame', 'block', 'size' (a skippable frame's), 'checksum', or 'end'. */
  #next = 'magic'
  #checksum = false
  /** Bytes of the layer seen so far. */
  #offset = 0
  /** Frames that ended so far. */
  #frames = 0
  /** The headers made no sense: the rest is zstd's to refuse. */
  #unreadable = false
  /** Told the offset in the layer where each frame ends. */
  #onFrameEnd
  /** The refusal of a frame's window, found while reading its header. */
  #refusal = null
  /** The largest window a frame of the layer has asked so far, in bytes (0 before the first frame's header). */
  window = 0

  /** @param {(end: number) => void} [onFrameEnd] told the offset in the layer where each frame ends */
  constructor (onFrameEnd = noFrameEnd) {
    this.#onFrameEnd = onFrameEnd
  }

  /**
   * @param {Buffer} chunk the next read of the layer
   * @returns {{ pieces: Buffer[], error: import('../errors/index.js').LabError | null }} `pieces` to
   *   write to zstd one by one; `error`: the layer is refused after them (400 `encoding.trailing.data`,
   *   a byte after a frame that starts none; 413 `encoding.frames.too.many`)
   */
  cut (chunk) {
    const pieces = []
    /** Where in the chunk the next piece starts. */
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

  /**
   * @returns {import('../errors/index.js').LabError | null} 400 `encoding.trailing.data` for part of a
   *   magic number after the last frame, the layer having ended before the rest: no frame
   */
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
 * The window a frame asks for (RFC 8878, 3.1.1.1.2): its Window_Descriptor's, or its content size
 * for a single-segment frame; and what its decoder holds of it: no more than the content size.
 * @param {Buffer} header the frame header, whole
 * @returns {{ asked: number, held: number }} bytes
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
