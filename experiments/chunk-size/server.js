/**
 * One generated file served with `fs.createReadStream(file, { highWaterMark, encoding })` through `pipeline`:
 * `highWaterMark` is the size of each read; `encoding: 'utf8'` decodes each chunk to a string the response encodes again.
 */
import fs from 'node:fs'
import path from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { writeAtomically } from '../../lib/util/atomic-file.js'
import { badParameter } from '../../lib/errors/index.js'
import { integerParam } from '../../lib/config/integers.js'
import { KiB, MiB } from '../../lib/util/units.js'

/** The served file's size: the static-file-server benchmark served a 1 MiB file. */
export const CHUNK_FILE_BYTES = MiB

/** The read sizes the experiment sweeps: 1 MiB reads the whole file at once. */
export const HWM_STEPS = Object.freeze([KiB, 4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, MiB])

/** `buffer`: chunks stay Buffers; `string`: decoded to UTF-8 strings and encoded again. */
export const CHUNK_MODES = Object.freeze(['buffer', 'string'])

/** Reads smaller than this would make one request a thousand+ syscalls; larger ones are the whole file anyway. */
export const HWM_MIN = KiB
export const HWM_MAX = 4 * MiB

const CHUNK_DIR_NAME = 'chunk-size'

/** GET /files/chunk's query: `hwm` (default 65536) and `mode` (default buffer). @throws {LabError} 400 naming hwm or mode */
export function normalizeChunkQuery (query) {
  const { hwm = '65536', mode = 'buffer' } = query ?? {}
  const bytes = integerParam('hwm', hwm, HWM_MIN, HWM_MAX, `an integer number of bytes from ${HWM_MIN} to ${HWM_MAX}`)
  if (typeof mode !== 'string' || !CHUNK_MODES.includes(mode)) throw badParameter('mode', mode, CHUNK_MODES.join(' | '))
  return { hwm: bytes, mode }
}

/**
 * The file's bytes: deterministic UTF-8 text with two-, three- and four-byte characters, and a four-byte one across
 * every 1 KiB boundary, so that any read size cuts characters in two and string mode has real decoding to do.
 */
function chunkFileContent (bytes) {
  const words = ['stream', 'buffer', 'chunk', 'pipeline', 'café', 'naïve', 'Größe',
    '数据流', '内存', 'ストリーム', '🚀', '📦', '\n']
    .map(function encode (w) { return Buffer.from(w, 'utf8') })
  const straddle = Buffer.from('🐢', 'utf8')
  const out = Buffer.alloc(bytes, '.')
  let seed = 0x2545f491
  let at = 0
  for (;;) {
    // xorshift32: the same text on every machine, no dependency
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    const word = words[(seed >>> 0) % words.length]
    const toBoundary = KiB - (at % KiB)
    if (word.length + 1 >= toBoundary) {
      // dots up to two bytes before the boundary, then a character that spans it
      if (at + toBoundary + 2 > bytes) break
      at += toBoundary - 2
      straddle.copy(out, at)
      at += straddle.length
      continue
    }
    if (at + word.length + 1 > bytes) break
    word.copy(out, at)
    at += word.length
    out[at++] = 0x20
  }
  // the rest stays '.': whole characters only, to the last byte
  return out
}

const pending = new Map()

/** The served file { path, bytes }, made on first use and reused (concurrent first requests share one making). */
export function ensureChunkFile (dataDir) {
  const dir = path.join(dataDir, CHUNK_DIR_NAME)
  const name = `text-${CHUNK_FILE_BYTES}B.txt`
  const file = path.join(dir, name)
  let making = pending.get(file)
  if (!making) {
    making = makeIfMissing(dir, name, file)
    pending.set(file, making)
    making.catch(function forget () { pending.delete(file) })
  }
  return making
}

async function makeIfMissing (dir, name, file) {
  const content = chunkFileContent(CHUNK_FILE_BYTES)
  try {
    // 1 MiB compared once per process: a file left by an older version of the text is made again
    if (content.equals(await fs.promises.readFile(file))) return { path: file, bytes: content.length }
  } catch (err) {
    if (err.code !== 'ENOENT') throw err
  }
  const written = await writeAtomically(dir, name, Readable.from([content]))
  return { path: file, bytes: written.bytes }
}

/** The headers of the file's answer, the same for GET and HEAD (HEAD reads nothing). */
export function setChunkFileHeaders (res, file) {
  res.set({ 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': String(file.bytes), 'Cache-Control': 'no-store' })
}

/** Serve the file in reads of `hwm` bytes, as Buffers or strings; rejects with ERR_STREAM_PREMATURE_CLOSE when the client hangs up. */
export async function serveChunkFile (res, { file, hwm, mode }) {
  setChunkFileHeaders(res, file)
  const source = fs.createReadStream(file.path, { highWaterMark: hwm, encoding: mode === 'string' ? 'utf8' : undefined })
  await pipeline(source, res)
}

