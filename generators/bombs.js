/**
 * Zip bombs for the lab: small gzip bodies that inflate to a huge, valid JSON
 * document, streamed as they are made. A 10 GB bomb costs about 10 MB to send
 * and next to nothing to make: neither 10 GB of memory nor of disk.
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
 * Same parameters, same bytes (on the same zlib): nothing here is random and
 * the gzip header carries no time.
 */
import { Readable } from 'node:stream'
import zlib from 'node:zlib'
import { badParameter } from '../lib/errors/index.js'
import { integerParam } from '../lib/config/integers.js'
import { parseByteSize } from '../lib/util/units.js'
import { crc32Combine, crc32Repeat } from './crc32-combine.js'

export const BOMB_VARIANTS = Object.freeze(['ratio', 'members', 'depth', 'string', 'chained'])

export const BOMB_DEFAULTS = Object.freeze({
  variant: 'ratio',
  /** Inflated size of the JSON document (all variants but depth). */
  bytes: 10_000_000_000,
  /** Nesting depth of the depth variant: a million `[`, then a million `]`. */
  depth: 1_000_000,
  /** gzip members of the members variant. */
  members: 1000,
  /** gzip layers of the chained variant: gzip inside gzip inside gzip. */
  layers: 3
})

export const BOMB_LIMITS = Object.freeze({
  /** 1 TB inflated is about 1 GB on the wire: enough for any lesson. */
  maxBytes: 1_000_000_000_000,
  maxDepth: 10_000_000_000,
  minMembers: 2,
  maxMembers: 100_000,
  minLayers: 2,
  maxLayers: 16
})

/** Which query parameters each variant takes, besides `kind` and `variant`. */
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

/** The largest `bytes` a variant takes: 1 TB, or for depth the bytes of its deepest nesting. */
export function maximumBytes (variant) {
  return variant === 'depth' ? frameBytes(variant) + 2 * BOMB_LIMITS.maxDepth : BOMB_LIMITS.maxBytes
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
// Compiling: segments to the pieces of one gzip member, `{ buffer, times }`.

const runBlocks = new Map()

/** 1 MiB of one byte, deflated once per process and per byte. */
function runBlock (byte) {
  let block = runBlocks.get(byte)
  if (block === undefined) {
    const plain = Buffer.alloc(RUN_BLOCK, byte)
    const compressed = zlib.deflateRawSync(plain, SYNC)
    block = { compressed, crc: zlib.crc32(plain), repeated: repeatedBuffer(compressed) }
    runBlocks.set(byte, block)
  }
  return block
}

/** Several copies of a small buffer side by side, so emitting does not push kilobytes at a time. */
function repeatedBuffer (buffer) {
  const copies = Math.max(1, Math.floor(EMIT_CHUNK / buffer.length))
  return { buffer: Buffer.concat(new Array(copies).fill(buffer)), copies }
}

function compileMember (segments) {
  const pieces = [{ buffer: GZIP_HEADER, times: 1 }]
  let crc = 0
  let length = 0
  for (const segment of segments) {
    if (segment.literal) {
      pieces.push({ buffer: zlib.deflateRawSync(segment.literal, SYNC), times: 1 })
      crc = zlib.crc32(segment.literal, crc)
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
      crc = crc32Combine(crc, crc32Repeat(block.crc, RUN_BLOCK, whole), whole * RUN_BLOCK)
    }
    if (rest > 0) {
      const tail = Buffer.alloc(rest, segment.byte)
      pieces.push({ buffer: zlib.deflateRawSync(tail, SYNC), times: 1 })
      crc = zlib.crc32(tail, crc)
    }
    length += segment.count
  }
  const trailer = Buffer.alloc(8)
  trailer.writeUInt32LE(crc >>> 0, 0)
  // ISIZE is the length modulo 2^32: a 10 GB member's trailer says 1.4 GB
  trailer.writeUInt32LE(length % 2 ** 32, 4)
  pieces.push({ buffer: Buffer.concat([FINAL_BLOCK, trailer]), times: 1 })
  const compressedBytes = pieces.reduce(function add (sum, p) { return sum + p.buffer.length * p.times }, 0)
  return { pieces, compressedBytes, inflatedBytes: length }
}

/**
 * The members of the outer gzip layer, run-length grouped: `{ member, times }`.
 * Equal slices compile once.
 */
function planMembers (segments, count) {
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
      member = compileMember(slice)
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

// ---------------------------------------------------------------------------
// The public face: parameters, the bomb, its name.

/** Parameters this module has already checked: createBomb need not check them twice. */
const NORMALIZED = new WeakSet()

/**
 * Check bomb parameters given as strings (an Express `req.query`, or CLI flags) or numbers.
 * A parameter that does not belong to the variant (`size`, `depth` with `ratio` ...) is refused,
 * so nobody believes it was applied.
 * @param {Record<string, unknown>} [query] `variant`, `bytes`, `depth`, `members`, `layers`; `kind` is allowed
 * @returns {Readonly<{variant: string, bytes: number, depth: number|null, members: number|null, layers: number}>}
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
  const allowed = VARIANT_PARAMS[variant]
  for (const key of Object.keys(q)) {
    if (key === 'kind' || key === 'variant') continue
    if (!allowed.includes(key)) {
      throw badParameter(key, q[key], `no "${key}" for the ${variant} bomb (it takes ${allowed.join(', ')})`)
    }
  }
  let bytes = q.bytes === undefined ? null : byteSizeParam(q.bytes, variant)
  let depth = null
  if (variant === 'depth') {
    if (bytes !== null && q.depth !== undefined) throw badParameter('bytes', q.bytes, 'either depth or bytes, not both')
    depth = bytes !== null
      ? Math.floor((bytes - frameBytes(variant)) / 2)
      : integerParam('depth', q.depth ?? BOMB_DEFAULTS.depth, 1, BOMB_LIMITS.maxDepth)
    bytes = frameBytes(variant) + 2 * depth
  }
  bytes ??= BOMB_DEFAULTS.bytes
  const members = variant === 'members'
    ? integerParam('members', q.members ?? BOMB_DEFAULTS.members, BOMB_LIMITS.minMembers, Math.min(BOMB_LIMITS.maxMembers, bytes))
    : null
  const layers = variant === 'chained'
    ? integerParam('layers', q.layers ?? BOMB_DEFAULTS.layers, BOMB_LIMITS.minLayers, BOMB_LIMITS.maxLayers)
    : 1
  const normalized = Object.freeze({ variant, bytes, depth, members, layers })
  NORMALIZED.add(normalized)
  return normalized
}

/**
 * The headers a bomb must be uploaded with: always `Content-Type: application/gzip` (one gzip
 * layer), plus `Content-Encoding: gzip` once for every further layer (the chained variant).
 * @param {{layers: number}} params normalised
 * @returns {Readonly<Record<string, string>>} lower-case header names
 */
function bombUploadHeaders ({ layers }) {
  const headers = { 'content-type': 'application/gzip' }
  if (layers > 1) headers['content-encoding'] = new Array(layers - 1).fill('gzip').join(', ')
  return Object.freeze(headers)
}

/**
 * The download name: `streamlab-bomb-ratio-10000000000B.json.gz`, one `.gz` per layer.
 * @param {{variant: string, bytes: number, layers: number}} params normalised
 * @returns {string}
 */
function bombFileName ({ variant, bytes, layers }) {
  return `streamlab-bomb-${variant}-${bytes}B.json${'.gz'.repeat(layers)}`
}

/**
 * Make a bomb. Nothing is deflated per byte of output: runs come from one precompressed block,
 * so a 10 GB bomb is ready in milliseconds and streams at the speed of whoever reads it.
 * @param {object} [params] raw or normalised, as for normalizeBombParams
 * @returns {{ params: object, inflatedBytes: number, compressedBytes: number|null, members: number,
 *   layers: number, uploadHeaders: Record<string, string>, fileName: string,
 *   streams: import('node:stream').Stream[] }}
 *   `streams` is for `pipeline(...bomb.streams, destination)`: the bomb, then one gzip per
 *   further layer (chained); use them once. `compressedBytes` is null when it is only known
 *   after the fact (chained).
 * @throws {import('../lib/errors/index.js').LabError} `parameter.invalid` (400)
 */
export function createBomb (params) {
  const p = normalizeBombParams(params)
  const segments = documentSegments(p)
  const groups = planMembers(segments, p.variant === 'members' ? p.members : 1)
  const inner = new BombStream(groups)
  const streams = [inner]
  for (let layer = 1; layer < p.layers; layer++) streams.push(zlib.createGzip({ level: 9, chunkSize: EMIT_CHUNK }))
  const compressedBytes = groups.reduce(function add (sum, g) { return sum + g.member.compressedBytes * g.times }, 0)
  return {
    params: p,
    inflatedBytes: p.bytes,
    compressedBytes: p.layers > 1 ? null : compressedBytes,
    members: groups.reduce(function add (sum, g) { return sum + g.times }, 0),
    layers: p.layers,
    uploadHeaders: bombUploadHeaders(p),
    fileName: bombFileName(p),
    streams
  }
}

function asText (value) {
  return typeof value === 'number' && Number.isFinite(value) ? String(value) : value
}

function byteSizeParam (value, variant) {
  const min = minimumBytes(variant)
  const max = maximumBytes(variant)
  // the depth bomb's bytes set its depth, so they are held to its deepest nesting too
  const allowed = variant === 'depth'
    ? `a byte size from ${min} to ${max} bytes (${BOMB_LIMITS.maxDepth} levels), e.g. 2MB`
    : `a byte size from ${min} to ${max} bytes, e.g. 2GB or 10GB`
  let bytes
  try {
    bytes = parseByteSize(asText(value))
  } catch {
    throw badParameter('bytes', value, allowed)
  }
  if (bytes < min || bytes > max) throw badParameter('bytes', value, allowed)
  return bytes
}
