/**
 * Benchmark inputs: generated once into test-data/bench/ and reused, since
 * the generator is deterministic (same parameters, same bytes).
 */
import fs from 'node:fs'
import path from 'node:path'
import { createGzipStream } from '../generators/items.js'
import { writeAtomically } from '../lib/atomic-file.js'
import { DEFAULTS } from '../lib/options.js'
import { formatBytes } from '../lib/units.js'

export const BENCH_DIR = path.join(DEFAULTS.dataDir, 'bench')

/**
 * The path of a gzipped generated document of about `bytes` inflated bytes,
 * making it first if needed.
 * @param {{ bytes: number, format?: string, seed?: number, level?: number }} params
 * @param {(line: string) => void} [log]
 * @returns {Promise<{ file: string, compressedBytes: number }>}
 */
export async function ensureInput ({ bytes, format = 'json', seed = 1, level = 6 }, log = function quiet () {}) {
  const name = `ingest-${format}-${bytes}B-seed${seed}-l${level}.json.gz`
  const file = path.join(BENCH_DIR, name)
  try {
    const stat = await fs.promises.stat(file)
    return { file, compressedBytes: stat.size }
  } catch (err) {
    if (err.code !== 'ENOENT') throw err
  }
  log(`generating ${name} (${formatBytes(bytes)} inflated) ...`)
  const started = Date.now()
  const { json, gzip } = createGzipStream({ bytes, format, seed, level })
  const ticker = setInterval(function progress () {
    log(`  ${Math.round(json.bytes / bytes * 100)}% of ${formatBytes(bytes)}`)
  }, 5000)
  try {
    const written = await writeAtomically(BENCH_DIR, name, [json, gzip])
    log(`  done in ${((Date.now() - started) / 1000).toFixed(1)} s: ${formatBytes(written.bytes)} compressed`)
    return { file, compressedBytes: written.bytes }
  } finally {
    clearInterval(ticker)
  }
}
