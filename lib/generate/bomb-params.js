// A zip bomb's parameters and what they allow: variants, codecs (and which this Node can make), the
// document's frame around its run, and the check of parameters given as strings or numbers.
import path from 'node:path'
import zlib from 'node:zlib'
import { badParameter } from '../errors/index.js'
import { integerParam } from '../config/integers.js'
import { DEFAULTS } from '../config/options.js'
import { parseByteSize } from '../util/units.js'

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
  /** br and zstd: zlib's compressor reads every inflated byte, so a request cannot ask for an hour of it. */
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

/**
 * Each codec: how its bomb is made (`blocks`, or `compressor`), its extension per layer, the download's media
 * type (br has none registered), and what a compressed layer's name says of the compressor (the cache key).
 */
export const CODECS = Object.freeze({
  gzip: Object.freeze({
    made: 'blocks',
    extension: 'gz',
    mediaType: 'application/gzip',
    layer: function gzipLayer () { return zlib.createGzip({ level: 9, chunkSize: 64 * 1024 }) }
  }),
  deflate: Object.freeze({
    made: 'blocks',
    extension: 'zz',
    mediaType: 'application/zlib',
    layer: function deflateLayer () { return zlib.createDeflate({ level: 9, chunkSize: 64 * 1024 }) }
  }),
  br: Object.freeze({
    made: 'compressor',
    extension: 'br',
    mediaType: 'application/octet-stream',
    // quality 5 with a 16 MiB window: half the bytes of quality 4's 4 MiB window, in about the same time
    layer: function brotliLayer () {
      const { BROTLI_PARAM_QUALITY, BROTLI_PARAM_LGWIN, BROTLI_PARAM_MODE, BROTLI_MODE_TEXT } = zlib.constants
      return zlib.createBrotliCompress({
        chunkSize: 64 * 1024,
        params: { [BROTLI_PARAM_QUALITY]: 5, [BROTLI_PARAM_LGWIN]: 24, [BROTLI_PARAM_MODE]: BROTLI_MODE_TEXT }
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

/** Why a variant cannot ride a codec here, as `allowed` text for parameter.invalid, or null when it can. */
export function bombCodecProblem (variant, codec) {
  if (!BOMB_CODECS.includes(codec)) return `one of ${BOMB_CODECS.join(', ')}`
  if (!bombCodecAvailable(codec)) {
    const available = BOMB_CODECS.filter(bombCodecAvailable).join(', ')
    const why = `zstd bombs need a Node whose zlib has zstd (${ZSTD_SINCE} and later), this is Node ${process.versions.node}`
    return `one of ${available}: ${why}`
  }
  if (variant === 'members' && codec !== 'gzip') {
    return 'gzip: members are gzip\'s (a deflate or br body is one stream, nothing after it)'
  }
  return null
}


export function documentHead (variant) {
  // no newline anywhere: a format detector must not take the first line for NDJSON
  return `{"meta":{"generator":"streamlab","bomb":"${variant}"},"items":[`
}

export const TAIL = ']}'

/** The overhead around the run, so `bytes` can be exact. */
export function frameBytes (variant) {
  const head = Buffer.byteLength(documentHead(variant))
  if (variant === 'string') return head + Buffer.byteLength('{"id":1,"s":""}') + TAIL.length
  return head + TAIL.length
}

/** The smallest `bytes` a variant can make. */
export function minimumBytes (variant) {
  return frameBytes(variant) + (variant === 'depth' ? 2 : 1)
}

/** The largest `bytes` a variant takes: 1 TB, depth's deepest nesting, at most `maxCompressorBytes` for br and zstd. */
export function maximumBytes (variant, codec = BOMB_DEFAULTS.codec) {
  const most = variant === 'depth' ? frameBytes(variant) + 2 * BOMB_LIMITS.maxDepth : BOMB_LIMITS.maxBytes
  return CODECS[codec]?.made === 'compressor' ? Math.min(most, BOMB_LIMITS.maxCompressorBytes) : most
}

/** Parameters this module has already checked: createBomb need not check them twice. */
const NORMALIZED = new WeakSet()

/**
 * Check bomb parameters given as strings (`req.query`, CLI flags) or numbers. One that does not belong to the
 * variant is refused, so nobody believes it applied; so is a codec the variant cannot ride or this Node cannot
 * make. `bytes` is the inflated size of the JSON document. 400 parameter.invalid names the parameter.
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
