/**
 * Zip bombs for the lab, the one door to them: small bodies that inflate to a huge, valid JSON
 * document, in each content coding the ingest routes decode (gzip, deflate, br, zstd), with the
 * headers to send them with and the name to save them under. How the bytes are made, from one
 * precompressed block or through zlib's compressor, is lib/generate/bomb-blocks.js's; their
 * parameters are lib/generate/bomb-params.js's.
 */
import fs from 'node:fs'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { Readable } from 'node:stream'
import { writeAtomically } from '../util/atomic-file.js'
import { BOMB_CACHE_DIR, CODECS, normalizeBombParams } from './bomb-params.js'
import { BombStream, DocumentStream, EMIT_CHUNK, FRAMINGS, documentSegments, planMembers } from './bomb-blocks.js'

export {
  BOMB_CACHE_DIR, BOMB_CODECS, BOMB_DEFAULTS, BOMB_LIMITS, BOMB_VARIANTS,
  bombCodecAvailable, bombCodecProblem, maximumBytes, minimumBytes, normalizeBombParams
} from './bomb-params.js'

/**
 * The codings of a bomb, in the order applied: `layers` times its codec (chained), once otherwise.
 * @param {{codec: string, layers: number}} params normalised
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
 * @throws {import('../errors/index.js').LabError} `parameter.invalid` (400)
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
 * @returns {Promise<ReturnType<typeof createBomb> & { madeMs: number|null }>} `madeMs`: how long the
 *   compressor took, null when nothing had to be made
 * @throws {import('../errors/index.js').LabError} `parameter.invalid` (400)
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
