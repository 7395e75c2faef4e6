// Zip bombs for the lab, the one door to them: small bodies that inflate to a huge, valid JSON document in
// each coding the ingest routes decode, with their upload headers and file name (bytes: bomb-blocks.js).
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

/** The codings of a bomb, in the order applied: `layers` times its codec (chained), once otherwise. */
function bombCodings ({ codec, layers }) {
  return new Array(layers).fill(codec)
}

/**
 * The headers to upload a bomb with: gzip, `Content-Type: application/gzip` and `Content-Encoding: gzip` for each
 * further layer; another codec, `application/json` and the codec in `Content-Encoding` once per layer.
 */
function bombUploadHeaders (params) {
  const gzip = params.codec === 'gzip'
  const headers = { 'content-type': gzip ? 'application/gzip' : 'application/json' }
  const encodings = gzip ? bombCodings(params).slice(1) : bombCodings(params)
  if (encodings.length > 0) headers['content-encoding'] = encodings.join(', ')
  return Object.freeze(headers)
}

/** The download name, `streamlab-bomb-ratio-10000000000B.json.gz`: one extension (.gz .zz .br .zst) per layer. */
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

/** A cached bomb's bytes, opened only once read: a bomb made to know its size (a HEAD) opens no file. */
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

/** The compressor-made bomb's streams (the document, a compressor per layer): reads every inflated byte. */
function compressorStreams (params, segments) {
  return [new DocumentStream(segments), ...bombCodings(params).map(function layer () { return CODECS[params.codec].layer() })]
}

/**
 * Make a bomb: gzip and deflate from one precompressed block (ready in milliseconds); br and zstd from
 * `cacheDir` when prepareBomb made them there, else compressed as read (`unmade`). `streams` is for
 * `pipeline(...bomb.streams, destination)`, once; `compressedBytes` is null when known only after the fact.
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
 * A bomb ready to send: br and zstd made once into `cacheDir` (atomically; two makers write the same bytes) and
 * read from there; gzip and deflate as createBomb makes them. `madeMs`: the compressor's time, or null.
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
