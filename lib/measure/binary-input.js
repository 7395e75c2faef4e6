// Upload bodies for the upload-to-disk experiment: `bytes` random bytes (nothing on the way can shrink them),
// made once per size and reused.
import { randomFillSync } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { Readable } from 'node:stream'
import { writeAtomically } from '../util/atomic-file.js'
import { BENCH_DIR } from './inputs.js'

const PIECE = 1024 * 1024

/** The path of a file of exactly `bytes` random bytes in `dir`, made first if needed. */
export async function ensureBinaryInput ({ bytes, dir = BENCH_DIR, signal }) {
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw new TypeError(`bytes must be a positive integer, got ${bytes}`)
  const name = `upload-${bytes}B.bin`
  const file = path.join(dir, name)
  try {
    const stat = await fs.promises.stat(file)
    if (stat.size === bytes) return { file, bytes }
  } catch (err) {
    if (err.code !== 'ENOENT') throw err
  }
  await writeAtomically(dir, name, Readable.from(randomPieces(bytes)), { signal })
  return { file, bytes }
}

function * randomPieces (bytes) {
  for (let at = 0; at < bytes; at += PIECE) {
    yield randomFillSync(Buffer.allocUnsafe(Math.min(PIECE, bytes - at)))
  }
}
