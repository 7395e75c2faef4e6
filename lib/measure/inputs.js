// Benchmark inputs, generated once into test-data/bench/ (or `dir`) and reused: the generator is deterministic.
import fs from 'node:fs'
import path from 'node:path'
import { createGzipStream } from '../generate/items.js'
import { writeAtomically } from '../util/atomic-file.js'
import { DEFAULTS } from '../config/options.js'
import { formatBytes, formatDuration } from '../util/units.js'

export const BENCH_DIR = path.join(DEFAULTS.dataDir, 'bench')

/** The path of a gzipped document of about `bytes` (or `size` items), made first if needed; `signal` leaves no file. */
export async function ensureInput (params = {}, log = function quiet () {}) {
  const { bytes = null, size = null, format = 'json', seed = 1, level = 6, dir = BENCH_DIR, signal } = params
  const amount = size === null ? `${bytes}B` : `${size}items`
  const name = `ingest-${format}-${amount}-seed${seed}-l${level}.json.gz`
  const file = path.join(dir, name)
  try {
    const stat = await fs.promises.stat(file)
    return { file, compressedBytes: stat.size }
  } catch (err) {
    if (err.code !== 'ENOENT') throw err
  }
  const wanted = size === null ? `${formatBytes(bytes)} inflated` : `${size} items`
  log(`generating ${name} (${wanted}) ...`)
  const started = Date.now()
  const { json, gzip } = createGzipStream({ bytes, size, format, seed, level })
  const ticker = setInterval(function progress () {
    const share = size === null ? json.bytes / bytes : json.items / Math.max(1, size)
    log(`  ${Math.round(share * 100)}% of ${wanted}`)
  }, 5000)
  try {
    const written = await writeAtomically(dir, name, [json, gzip], { signal })
    log(`  done in ${formatDuration(Date.now() - started)}: ${formatBytes(written.bytes)} compressed`)
    return { file, compressedBytes: written.bytes }
  } finally {
    clearInterval(ticker)
  }
}
