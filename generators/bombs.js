/**
 * Zip bombs for the lab: small bodies that inflate to a huge, valid JSON
 * document, in each content coding the ingest routes decode (gzip, deflate,
 * br, zstd). A 10 GB gzip bomb costs about 10 MB to send and next to nothing
 * to make: neither 10 GB of memory nor of disk.
 *
 * Deflate encodes a long run of one byte at its best ratio (about 1030:1:
 * matches of 258 bytes at distance 1, two bits each). Compressing 10 GB of
 * spaces with a real gzip stream takes tens of seconds, so runs are made
 * from one block instead: 1 MiB of the byte is deflated once, sync-flushed
 * (so it ends byte-aligned and refers to nothing before it), and that same
 * compressed block is emitted as many times as needed inside one gzip
 * member. The member's CRC-32 is computed without the data, by combining the
 * block's CRC (the CRC of a concatenation follows from the CRCs of its parts
 * and the second part's length, by arithmetic on polynomials over GF(2)).
 * Repeating whole gzip members would also be legal gzip, but a different
 * document: that is the `members` variant.
 *
 * `deflate` (the zlib format, RFC 1950) is made from the same blocks, with an
 * Adler-32 combined the same way (adler32-combine.js). br and zstd cannot be
 * assembled from blocks here: their bombs are the document streamed through
 * zlib's own compressor, which reads every inflated byte (seconds per 10 GB:
 * docs/zip-bombs.md has the figures and the command), so `prepareBomb` makes
 * each once into a cache file named by its parameters and the compressor's
 * version, and `createBomb` reads it from there.
 *
 * Same parameters, same bytes (on the same zlib): nothing here is random and
 * the gzip header carries no time.
 */
import fs from 'node:fs'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { Readable } from 'node:stream'
import zlib from 'node:zlib'
import { badParameter } from '../lib/errors/index.js'
import { integerParam } from '../lib/config/integers.js'
import { DEFAULTS } from '../lib/config/options.js'
import { writeAtomically } from '../lib/util/atomic-file.js'
import { parseByteSize } from '../lib/util/units.js'
import { adler32, adler32Combine, adler32Repeat } from './adler32-combine.js'
import { crc32Combine, crc32Repeat } from './crc32-combine.js'

export const BOMB_VARIANTS = Object.freeze(['ratio', 'members', 'depth', 'string', 'chained'])

/** The content codings a bomb can ride, as Content-Encoding names them. */
export const BOMB_CODECS = Object.freeze(['gzip', 'deflate', 'br', 'zstd'])

/** Where prepareBomb keeps the br and zstd bombs it made (git ignores test-data/). */
export const BOMB_CACHE_DIR = path.join(DEFAULTS.dataDir, 'bombs')

export const BOMB_DEFAULTS = Object.freeze({
  variant: 'ratio',
  codec: 'gzip',
  /** Inflated size of the JSON document (all variants but depth). */
  bytes: 10_000_000_000,
  /** Nesting depth of the depth variant: a million `[`, then a million `]`. */
  depth: 1_000_000,
  /** gzip members of the members variant. */
  members: 1000,
  /** Layers of the chained variant: the codec inside itself, gzip inside gzip inside gzip. */
  layers: 3
})

export const BOMB_LIMITS = Object.freeze({
  /** 1 TB inflated is about 1 GB on the wire: enough for any lesson. */
  maxBytes: 1_000_000_000_000,
  /**
   * br and zstd: zlib's compressor reads every inflated byte, a few minutes per 100 GB on one
   * core (docs/zip-bombs.md), so a request cannot ask for an hour of it.
   */
  maxCompressorBytes: 100_000_000_000,
  maxDepth: 10_000_000_000,
  minMembers: 2,
  maxMembers: 100_000,
  minLayers: 2,
  maxLayers: 16
})

/** Which query parameters each variant takes, besides `kind`, `variant` and `codec`. */
const VARIANT_PARAMS = Object.freeze({
  ratio: Object.freeze(['bytes']),
  members: Object.freeze(['bytes', 'members']),
  depth: Object.freeze(['bytes', 'depth']),
  string: Object.freeze(['bytes']),
  chained: Object.freeze(['bytes', 'layers'])
})

/** Deflate's own best: 1 MiB of one byte compresses to 1038 bytes (1010:1). */
const RUN_BLOCK = 1024 * 1024
/** Small compressed pieces are emitted several at a time, in chunks of about this size. */
const EMIT_CHUNK = 64 * 1024
const SPACE = 0x20

// A gzip header with no name, no time (MTIME 0), XFL 2 (best compression), OS 3 (Unix).
const GZIP_HEADER = Buffer.from([0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03])
const SYNC = { level: 9, finishFlush: zlib.constants.Z_SYNC_FLUSH }
// The empty final block that ends every deflate stream made here (03 00).
const FINAL_BLOCK = zlib.deflateRawSync(Buffer.alloc(0), { level: 9 })
// A zlib header (RFC 1950): deflate, 32 KiB window, FLEVEL 3 (best), no dictionary; 0x78DA is a multiple of 31.
const ZLIB_HEADER = Buffer.from([0x78, 0xDA])

/**
 * Each codec: how its bomb is made (`blocks`: assembled from deflate blocks; `compressor`: the
 * document through zlib's compressor, `compressor()` one layer of it), the file extension per
 * layer, the download's media type (application/zlib and application/zstd are registered; br has
 * none), and what a compressed layer's name says of the compressor (the cache key).
 */
const CODECS = Object.freeze({
  gzip: Object.freeze({ made: 'blocks', extension: 'gz', mediaType: 'application/gzip', layer: function gzipLayer () { return zlib.createGzip({ level: 9, chunkSize: 64 * 1024 }) } }),
  deflate: Object.freeze({ made: 'blocks', extension: 'zz', mediaType: 'application/zlib', layer: function deflateLayer () { return zlib.createDeflate({ level: 9, chunkSize: 64 * 1024 }) } }),
  br: Object.freeze({
    made: 'compressor',
    extension: 'br',
    mediaType: 'application/octet-stream',
    // quality 5 with a 16 MiB window: half the bytes of quality 4's 4 MiB window, in about the same time
    // (the time for 10 GB is in docs/zip-bombs.md, with its command)
    layer: function brotliLayer () {
      return zlib.createBrotliCompress({
        chunkSize: 64 * 1024,
        params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5, [zlib.constants.BROTLI_PARAM_LGWIN]: 24, [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT }
      })
    },
    compressor: `brotli${process.versions.brotli ?? ''}-q5w24`
  }),
  zstd: Object.freeze({
    made: 'compressor',
    extension: 'zst',
    mediaType: 'application/zstd',
    // a zstd block holds at most 128 KiB, and a run's is a 4-byte RLE block: tens of thousands to one,
    // where br reaches millions; the level changes next to nothing of that
    layer: function zstdLayer () {
      return zlib.createZstdCompress({ chunkSize: 64 * 1024, params: { [zlib.constants.ZSTD_c_compressionLevel]: 3 } })
    },
    compressor: `zstd${process.versions.zstd ?? ''}-l3`
  })
})

/** The Node version whose zlib compresses zstd (zlib.createZstdCompress). */
const ZSTD_SINCE = '22.15.0'

/** Whether this Node can make `codec`'s bombs: zstd only where zlib has it. */
export function bombCodecAvailable (codec) {
  return codec !== 'zstd' || typeof zlib.createZstdCompress === 'function'
}

/**
 * Why a variant cannot ride a codec here, as `allowed` text for parameter.invalid, or null when it can.
 * @param {string} variant
 * @param {string} codec
 * @returns {string|null}
 */
export function bombCodecProblem (variant, codec) {
  if (!BOMB_CODECS.includes(codec)) return `one of ${BOMB_CODECS.join(', ')}`
  if (!bombCodecAvailable(codec)) {
    return `one of ${BOMB_CODECS.filter(bombCodecAvailable).join(', ')}: zstd bombs need a Node whose zlib has zstd (${ZSTD_SINCE} and later), this is Node ${process.versions.node}`
  }
  if (variant === 'members' && codec !== 'gzip') {
    return 'gzip: members are gzip\'s (a deflate or br body is one stream, nothing after it)'
  }
  return null
}

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

function documentHead (variant) {
  // no newline anywhere: a format detector must not take the first line for NDJSON
  return `{"meta":{"generator":"streamlab","bomb":"${variant}"},"items":[`
}

const TAIL = ']}'

/** The overhead around the run, so `bytes` can be exact. */
function frameBytes (variant) {
  const head = Buffer.byteLength(documentHead(variant))
  if (variant === 'string') return head + Buffer.byteLength('{"id":1,"s":""}') + TAIL.length
  return head + TAIL.length
}

/** The smallest `bytes` a variant can make. */
export function minimumBytes (variant) {
  return frameBytes(variant) + (variant === 'depth' ? 2 : 1)
}

/**
 * The largest `bytes` a variant takes: 1 TB, or for depth the bytes of its deepest nesting; for a
 * codec whose bombs zlib's compressor makes (br, zstd), at most `maxCompressorBytes`.
 */
export function maximumBytes (variant, codec = BOMB_DEFAULTS.codec) {
  const most = variant === 'depth' ? frameBytes(variant) + 2 * BOMB_LIMITS.maxDepth : BOMB_LIMITS.maxBytes
  return CODECS[codec]?.made === 'compressor' ? Math.min(most, BOMB_LIMITS.maxCompressorBytes) : most
}

function documentSegments (params) {
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

/**
 * The two framings around the same deflate blocks: gzip (RFC 1952: CRC-32 and the length, little-endian)
 * and zlib (RFC 1950, the `deflate` coding: Adler-32, big-endian). `sum` is the checksum of a run block.
 */
const FRAMINGS = Object.freeze({
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

/**
 * The members of the outer gzip layer, run-length grouped: `{ member, times }`.
 * Equal slices compile once.
 */
function planMembers (segments, count, framing = FRAMINGS.gzip) {
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
class BombStream extends Readable {
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

/**
 * The inflated document itself, as a stream, for a compressor to read: literals as they are, runs as
 * slices of one shared MiB of the byte. Pushes on demand, so the compressor sets the pace.
 */
class DocumentStream extends Readable {
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

// ---------------------------------------------------------------------------
// The public face: parameters, the bomb, its name.

/** Parameters this module has already checked: createBomb need not check them twice. */
const NORMALIZED = new WeakSet()

/**
 * Check bomb parameters given as strings (an Express `req.query`, or CLI flags) or numbers.
 * A parameter that does not belong to the variant (`size`, `depth` with `ratio` ...) is refused,
 * so nobody believes it was applied; so is a codec the variant cannot ride (members are gzip's),
 * or one this Node cannot make (zstd before 22.15).
 * @param {Record<string, unknown>} [query] `variant`, `codec`, `bytes`, `depth`, `members`, `layers`; `kind` is allowed
 * @returns {Readonly<{variant: string, codec: string, bytes: number, depth: number|null, members: number|null, layers: number}>}
 *   `bytes` is the inflated size of the JSON document in every variant
 * @throws {import('../lib/errors/index.js').LabError} `parameter.invalid` (400) naming the parameter
 */
export function normalizeBombParams (query = {}) {
  if (NORMALIZED.has(query)) return query
  const q = {}
  // null is "not given" too (a JSON body, a form left empty)
  for (const [key, value] of Object.entries(query ?? {})) if (value !== undefined && value !== null) q[key] = value
  const variant = q.variant === undefined ? BOMB_DEFAULTS.variant : q.variant
  if (!BOMB_VARIANTS.includes(variant)) throw badParameter('variant', variant, `one of ${BOMB_VARIANTS.join(', ')}`)
  const codec = q.codec === undefined ? BOMB_DEFAULTS.codec : q.codec
  const problem = bombCodecProblem(variant, codec)
  if (problem !== null) throw badParameter('codec', codec, problem)
  const allowed = VARIANT_PARAMS[variant]
  for (const key of Object.keys(q)) {
    if (key === 'kind' || key === 'variant' || key === 'codec') continue
    if (!allowed.includes(key)) {
      throw badParameter(key, q[key], `no "${key}" for the ${variant} bomb (it takes ${allowed.join(', ')})`)
    }
  }
  let bytes = q.bytes === undefined ? null : byteSizeParam(q.bytes, variant, codec)
  let depth = null
  if (variant === 'depth') {
    if (bytes !== null && q.depth !== undefined) throw badParameter('bytes', q.bytes, 'either depth or bytes, not both')
    depth = bytes !== null
      ? Math.floor((bytes - frameBytes(variant)) / 2)
      : integerParam('depth', q.depth ?? BOMB_DEFAULTS.depth, 1, Math.floor((maximumBytes(variant, codec) - frameBytes(variant)) / 2))
    bytes = frameBytes(variant) + 2 * depth
  }
  bytes ??= BOMB_DEFAULTS.bytes
  const members = variant === 'members'
    ? integerParam('members', q.members ?? BOMB_DEFAULTS.members, BOMB_LIMITS.minMembers, Math.min(BOMB_LIMITS.maxMembers, bytes))
    : null
  const layers = variant === 'chained'
    ? integerParam('layers', q.layers ?? BOMB_DEFAULTS.layers, BOMB_LIMITS.minLayers, BOMB_LIMITS.maxLayers)
    : 1
  const normalized = Object.freeze({ variant, codec, bytes, depth, members, layers })
  NORMALIZED.add(normalized)
  return normalized
}

/**
 * The codings of a bomb, in the order applied: `layers` times its codec (chained), once otherwise.
 * @param {{codec: string, layers: number}} params normalised
 * @returns {string[]}
 */
function bombCodings ({ codec, layers }) {
  return new Array(layers).fill(codec)
}

/**
 * The headers a bomb must be uploaded with. gzip: `Content-Type: application/gzip` (one gzip
 * layer), plus `Content-Encoding: gzip` once for every further layer (the chained variant).
 * Another codec: `Content-Type: application/json` and the codec in `Content-Encoding` once per layer.
 * @param {{codec: string, layers: number}} params normalised
 * @returns {Readonly<Record<string, string>>} lower-case header names
 */
function bombUploadHeaders (params) {
  if (params.codec !== 'gzip') return Object.freeze({ 'content-type': 'application/json', 'content-encoding': bombCodings(params).join(', ') })
  const headers = { 'content-type': 'application/gzip' }
  if (params.layers > 1) headers['content-encoding'] = new Array(params.layers - 1).fill('gzip').join(', ')
  return Object.freeze(headers)
}

/**
 * The download name: `streamlab-bomb-ratio-10000000000B.json.gz`, one extension per layer
 * (`.gz`, `.zz` for the zlib format, `.br`, `.zst`).
 * @param {{variant: string, codec: string, bytes: number, layers: number}} params normalised
 * @returns {string}
 */
function bombFileName ({ variant, codec, bytes, layers }) {
  return `streamlab-bomb-${variant}-${bytes}B.json${`.${CODECS[codec].extension}`.repeat(layers)}`
}

/** The cache file of a compressor-made bomb: its download name, with the compressor and its settings before it. */
function cacheFileName (params) {
  return `${CODECS[params.codec].compressor}-${bombFileName(params)}`
}

/** The size of a cached bomb's file, or null when there is none yet. */
function cachedSize (file) {
  try {
    return fs.statSync(file).size
  } catch (err) {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return null
    throw err
  }
}

/**
 * A cached bomb's bytes, opened only once read: a bomb made to know its size and then
 * destroyed (a HEAD, the experiment's description) opens no file.
 */
function cachedStream (file) {
  async function * chunks () {
    const handle = await fs.promises.open(file, 'r')
    try {
      for (;;) {
        const { buffer, bytesRead } = await handle.read(Buffer.allocUnsafe(EMIT_CHUNK), 0, EMIT_CHUNK, null)
        if (bytesRead === 0) return
        yield buffer.subarray(0, bytesRead)
      }
    } finally {
      await handle.close()
    }
  }
  return Readable.from(chunks(), { objectMode: false })
}

/**
 * The compressor-made bomb's bytes, as streams: the document, then one compressor per layer.
 * Reads every inflated byte: for a cache file, or a one-off.
 */
function compressorStreams (params, segments) {
  return [new DocumentStream(segments), ...bombCodings(params).map(function layer () { return CODECS[params.codec].layer() })]
}

/**
 * Make a bomb. gzip and deflate: nothing is deflated per byte of output (runs come from one
 * precompressed block), so a 10 GB bomb is ready in milliseconds and streams at the speed of
 * whoever reads it. br and zstd: read from `cacheDir` when prepareBomb has made it there, else
 * compressed as it is read, which takes seconds per GB (docs/zip-bombs.md).
 * @param {object} [params] raw or normalised, as for normalizeBombParams
 * @param {{ cacheDir?: string|null }} [options] where prepareBomb keeps br and zstd bombs (null: never read a cache)
 * @returns {{ params: object, inflatedBytes: number, compressedBytes: number|null, members: number,
 *   layers: number, codings: string[], uploadHeaders: Record<string, string>, mediaType: string,
 *   fileName: string, cacheFile: string|null, unmade: boolean, streams: import('node:stream').Stream[] }}
 *   `streams` is for `pipeline(...bomb.streams, destination)`: the bomb, then one encoder per
 *   further layer where the layers are made as they are read; use them once. `compressedBytes` is
 *   null when it is only known after the fact (chained, or a br or zstd bomb not cached);
 *   `codings` the Content-Encoding names in the order applied; `mediaType` the download's;
 *   `cacheFile` the file the bytes come from, or null; `unmade`: a br or zstd bomb not in the
 *   cache, whose streams compress as they are read (prepareBomb makes it once instead).
 * @throws {import('../lib/errors/index.js').LabError} `parameter.invalid` (400)
 */
export function createBomb (params, { cacheDir = BOMB_CACHE_DIR } = {}) {
  const p = normalizeBombParams(params)
  const codec = CODECS[p.codec]
  const segments = documentSegments(p)
  const made = {
    params: p,
    inflatedBytes: p.bytes,
    layers: p.layers,
    codings: bombCodings(p),
    uploadHeaders: bombUploadHeaders(p),
    mediaType: codec.mediaType,
    fileName: bombFileName(p),
    cacheFile: null,
    unmade: false
  }
  if (codec.made === 'compressor') {
    const file = cacheDir === null ? null : path.join(cacheDir, cacheFileName(p))
    const size = file === null ? null : cachedSize(file)
    if (size === null) return { ...made, compressedBytes: null, members: 1, unmade: true, streams: compressorStreams(p, segments) }
    return { ...made, compressedBytes: size, members: 1, cacheFile: file, streams: [cachedStream(file)] }
  }
  const groups = planMembers(segments, p.variant === 'members' ? p.members : 1, p.codec === 'deflate' ? FRAMINGS.zlib : FRAMINGS.gzip)
  const streams = [new BombStream(groups)]
  for (let layer = 1; layer < p.layers; layer++) streams.push(codec.layer())
  const compressedBytes = groups.reduce(function add (sum, g) { return sum + g.member.compressedBytes * g.times }, 0)
  return {
    ...made,
    compressedBytes: p.layers > 1 ? null : compressedBytes,
    members: groups.reduce(function add (sum, g) { return sum + g.times }, 0),
    streams
  }
}

/**
 * A bomb ready to send: br and zstd bombs made once into `cacheDir` (atomically: a reader sees the
 * whole file or none) and read from there, so that sending one costs what sending gzip's does;
 * gzip and deflate as createBomb makes them. Two makers of the same bomb at once both write it,
 * and the same bytes win.
 * @param {object} [params] as for createBomb
 * @param {{ cacheDir?: string, signal?: AbortSignal }} [options]
 * @returns {Promise<ReturnType<typeof createBomb> & { madeMs: number|null }>} `madeMs`: how long the
 *   compressor took, null when nothing had to be made
 * @throws {import('../lib/errors/index.js').LabError} `parameter.invalid` (400)
 */
export async function prepareBomb (params, { cacheDir = BOMB_CACHE_DIR, signal } = {}) {
  const p = normalizeBombParams(params)
  const ready = createBomb(p, { cacheDir })
  if (!ready.unmade) return { ...ready, madeMs: null }
  // the one-off streams were never read: the file gets streams of its own
  for (const stream of ready.streams) stream.destroy()
  const started = performance.now()
  await writeAtomically(cacheDir, cacheFileName(p), compressorStreams(p, documentSegments(p)), { signal })
  const madeMs = Math.round(performance.now() - started)
  return { ...createBomb(p, { cacheDir }), madeMs }
}

function asText (value) {
  return typeof value === 'number' && Number.isFinite(value) ? String(value) : value
}

function byteSizeParam (value, variant, codec) {
  const min = minimumBytes(variant)
  const max = maximumBytes(variant, codec)
  const by = CODECS[codec].made === 'compressor' ? ` (a ${codec} bomb is made by zlib's compressor, which reads every byte)` : ''
  // the depth bomb's bytes set its depth, so they are held to its deepest nesting too
  const allowed = variant === 'depth'
    ? `a byte size from ${min} to ${max} bytes (${Math.floor((max - frameBytes(variant)) / 2)} levels), e.g. 2MB${by}`
    : `a byte size from ${min} to ${max} bytes, e.g. 2GB or 10GB${by}`
  let bytes
  try {
    bytes = parseByteSize(asText(value))
  } catch {
    throw badParameter('bytes', value, allowed)
  }
  if (bytes < min || bytes > max) throw badParameter('bytes', value, allowed)
  return bytes
}
