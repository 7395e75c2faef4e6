/**
 * The machine's bound on ingest speed (docs/ingest.md, "The machine's bound"): what one core does with the body
 * the ingest bench sends, held in memory, at each of /good's stages run alone with /good's own code and sizes
 * (inflate, parse, sha256, find: lib/measure/README.md lists how each is timed), and the MB/s that allows on C
 * cores: bound = C / (1/inflate + 1/parse + 1/sha256 + 1/find) MB/s. No split is perfect, so a route's MB/s stays
 * under it; its fraction says how far.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import zlib from 'node:zlib'
import { performance } from 'node:perf_hooks'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { FORMATS, LineBatcher } from '../json/records.js'
import { CuttingScanner } from '../json/cutter.js'
import { parseBatch } from '../parse/parse-batch.js'
import { createTally, mergeTally } from '../parse/tally.js'
import { MAX_BATCH, MAX_CHUNK } from '../ingest/streamed.js'
import { median } from './stats.js'
import { cpuPerGB } from './cpu.js'

/** The stages, in /good's order. */
export const STAGES = Object.freeze(['inflate', 'parse', 'sha256', 'find'])

/** The model, as the report and the figures file state it. */
export const MODEL = 'bound = cores / (1/inflate + 1/parse + 1/sha256 + 1/find) MB/s'

/** Compressed bytes per read into the Gunzip, and inflated bytes per digest update. */
const READ_BYTES = 1024 * 1024
const DIGEST_BYTES = 1024 * 1024

/**
 * A sample repeats its pass until this much time is measured: a pass over a small body takes
 * microseconds, below what a clock reading can tell apart. A large body's sample is one pass.
 */
const MIN_SAMPLE_MS = 20

function * slices (bytes, size) {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size)
}

/** The records of `body` found as /good finds them, each batch handed to `onBatch`. */
function scan (body, format, onBatch) {
  const options = { batchBytes: MAX_BATCH, onBatch }
  const scanner = format === 'ndjson' ? new LineBatcher(options) : new CuttingScanner(format, options)
  for (const chunk of slices(body, MAX_CHUNK)) scanner.write(chunk)
  scanner.end()
}

/** A clock of both kinds: the wall's, and this process's CPU (every thread: zlib's pool, the collector). */
function startClock () {
  return { wall: performance.now(), cpu: process.cpuUsage() }
}

/** Add what passed since `started` to `total` ({ seconds, cpuSeconds }); returns total. */
function addSince (total, started) {
  const { user, system } = process.cpuUsage(started.cpu)
  total.seconds += (performance.now() - started.wall) / 1000
  total.cpuSeconds += (user + system) / 1e6
  return total
}

function zero () {
  return { seconds: 0, cpuSeconds: 0 }
}

/** One pass of each stage over the body: the wall and CPU seconds it took. */
const PASSES = Object.freeze({
  inflate: async function inflatePass ({ gz, body }) {
    let inflated = 0
    const started = startClock()
    await pipeline(Readable.from(slices(gz, READ_BYTES)), zlib.createGunzip({ chunkSize: MAX_CHUNK }),
      new Writable({ write: function count (chunk, encoding, done) { inflated += chunk.length; done() } }))
    const took = addSince(zero(), started)
    if (inflated !== body.length) throw new Error(`the gzip inflates to ${inflated} bytes, not the body's ${body.length}`)
    return took
  },
  parse: function parsePass ({ body, format }) {
    const tally = createTally()
    const took = zero()
    scan(body, format, function parseTimed (batch) {
      const started = startClock()
      const parsed = parseBatch({ ...batch, simd: true })
      if (parsed.tally !== null) mergeTally(tally, parsed.tally)
      addSince(took, started)
      if (parsed.error !== null) {
        throw new Error(`the body is no valid ${format}: ${parsed.error.reason}, near byte ${batch.offset + parsed.error.offset}`)
      }
    })
    return took
  },
  sha256: function sha256Pass ({ body }) {
    const started = startClock()
    const hash = crypto.createHash('sha256')
    for (const piece of slices(body, DIGEST_BYTES)) hash.update(piece)
    hash.digest()
    return addSince(zero(), started)
  },
  find: function findPass ({ body, format }) {
    const started = startClock()
    scan(body, format, function dropBatch () {})
    return addSince(zero(), started)
  }
})

/** One sample: passes until MIN_SAMPLE_MS is measured; MB/s of inflated body on the clock, CPU seconds per GB. */
async function sample (pass, input) {
  const took = zero()
  let passes = 0
  do {
    const one = await pass(input)
    took.seconds += one.seconds
    took.cpuSeconds += one.cpuSeconds
    passes++
  } while (took.seconds * 1000 < MIN_SAMPLE_MS)
  const bytes = passes * input.body.length
  return { mbPerSecond: bytes / 1e6 / took.seconds, cpuSecondsPerGB: cpuPerGB(took.cpuSeconds, bytes) }
}

function checkInput ({ gz, body, format, repeat }) {
  if (!(body instanceof Uint8Array) || body.length === 0) throw new TypeError('the bound needs a body of at least one byte')
  if (!(gz instanceof Uint8Array)) throw new TypeError('the bound needs the body\'s gzip')
  if (!FORMATS.includes(format)) throw new TypeError(`the format is one of ${FORMATS.join(', ')}, not "${format}"`)
  if (!Number.isInteger(repeat) || repeat < 1) throw new TypeError(`repeat is a positive integer, not ${repeat}`)
}

/**
 * Each stage on one core: a warm-up sample, then `repeat` samples, their median.
 * @param {{ gz: Uint8Array, body: Uint8Array, format: string, repeat?: number }} input the body's gzip and the body
 * @param {(event: object) => void} [report] progress events, as the benches' printer takes them
 * @returns {Promise<Array<{ stage: string, mbPerSecond: number, secondsPerGB: number, cpuSecondsPerGB: number, runs: number[] }>>}
 */
export async function measureStages ({ gz, body, format, repeat = 3 }, report = function quiet () {}) {
  checkInput({ gz, body, format, repeat })
  const input = { gz, body, format }
  const total = STAGES.length * (repeat + 1)
  let done = 0
  const cells = []
  for (const stage of STAGES) {
    report({ type: 'progress', done: done++, total, label: `${stage}: warm-up` })
    await sample(PASSES[stage], input)
    const samples = []
    for (let r = 0; r < repeat; r++) {
      report({ type: 'progress', done: done++, total, label: `${stage}: run ${r + 1}/${repeat}` })
      samples.push(await sample(PASSES[stage], input))
    }
    const runs = samples.map(function rate (s) { return s.mbPerSecond })
    const mbPerSecond = median(runs)
    const cpuSecondsPerGB = median(samples.map(function cpu (s) { return s.cpuSecondsPerGB }))
    cells.push({ stage, mbPerSecond, secondsPerGB: 1000 / mbPerSecond, cpuSecondsPerGB, runs })
  }
  report({ type: 'progress', done, total, label: 'done' })
  return cells
}

/**
 * The bound: `cores` / the sum of the stages' seconds per MB on one core.
 * @param {Record<string, number>} rates MB/s on one core of every stage in STAGES
 * @param {number} [cores]
 * @returns {number} MB/s of inflated body
 * @throws {TypeError} naming a stage with no positive finite rate, or cores that are no positive integer
 */
export function boundOf (rates, cores = 1) {
  if (!Number.isInteger(cores) || cores < 1) throw new TypeError(`cores is a positive integer, not ${cores}`)
  let secondsPerMB = 0
  for (const stage of STAGES) {
    const rate = rates?.[stage]
    const positive = typeof rate === 'number' && rate > 0 && Number.isFinite(rate)
    if (!positive) throw new TypeError(`the ${stage} stage needs a positive MB/s, not ${rate}`)
    secondsPerMB += 1 / rate
  }
  return cores / secondsPerMB
}

/**
 * A route's MB/s as a fraction of the bound: 0.5 is half of it. Null when either is missing.
 * @param {number|null} mbPerSecond
 * @param {number|null} bound MB/s
 * @returns {number|null}
 */
export function boundFraction (mbPerSecond, bound) {
  if (!(typeof mbPerSecond === 'number' && mbPerSecond >= 0 && Number.isFinite(mbPerSecond))) return null
  if (!(typeof bound === 'number' && bound > 0 && Number.isFinite(bound))) return null
  return mbPerSecond / bound
}

/**
 * The stages' own CPU seconds per GB: the sum over STAGES, what a route's CPU per GB is held to
 * (lib/measure/cpu.js, cpuShare). Null when a stage has none.
 * @param {Array<{ stage: string, cpuSecondsPerGB: number|null }>} cells
 * @returns {number|null}
 */
export function stagesCpuPerGB (cells) {
  let sum = 0
  for (const stage of STAGES) {
    const cpu = cells.find(function named (c) { return c.stage === stage })?.cpuSecondsPerGB
    if (!(typeof cpu === 'number' && cpu > 0 && Number.isFinite(cpu))) return null
    sum += cpu
  }
  return sum
}

/**
 * Measure the stages and the bound they allow.
 * @param {{ gz: Uint8Array, body: Uint8Array, format: string, repeat?: number, cores?: number }} input
 *   cores: what the bound spreads the work over (default this machine's)
 * @returns {Promise<{ body: object, repeat: number, cells: object[], cores: number, bound: number, singleCore: number,
 *   stagesCpuPerGB: number|null, model: string }>}
 */
export async function measureBound ({ gz, body, format, repeat = 3, cores = os.availableParallelism() }, report) {
  const cells = await measureStages({ gz, body, format, repeat }, report)
  const rates = Object.fromEntries(cells.map(function rate (c) { return [c.stage, c.mbPerSecond] }))
  return {
    body: { format, bytes: body.length, compressedBytes: gz.length },
    repeat,
    cells,
    cores,
    bound: boundOf(rates, cores),
    singleCore: boundOf(rates, 1),
    stagesCpuPerGB: stagesCpuPerGB(cells),
    model: MODEL
  }
}

/**
 * Measure the bound on a gzip file (an ingest bench input), read and inflated once, up front.
 * @param {string} file
 * @param {{ format: string, repeat?: number, cores?: number }} options
 */
export async function measureBoundOfFile (file, { format, repeat, cores }, report) {
  const gz = await fs.promises.readFile(file)
  return measureBound({ gz, body: zlib.gunzipSync(gz), format, repeat, cores }, report)
}

/**
 * The bound a figures file of the bound bench holds (`npm run bench -- bound --figures NAME`).
 * @param {string} file
 * @returns {{ mbPerSecond: number, cores: number, body: object|null, cpuPerGB: number|null, file: string }}
 *   cpuPerGB: the stages' CPU seconds per GB, where the file has it
 * @throws {TypeError} naming the file and what it lacks
 */
export function readBoundFile (file) {
  let data
  try {
    data = JSON.parse(fs.readFileSync(file, 'utf8'))
  } catch (err) {
    throw new TypeError(`${file}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`, { cause: err })
  }
  const { bound, cores } = data ?? {}
  if (!(typeof bound === 'number' && bound > 0 && Number.isFinite(bound)) || !Number.isInteger(cores) || cores < 1) {
    throw new TypeError(`${file} holds no bound and cores: write one with npm run bench -- bound --figures NAME`)
  }
  return Object.freeze({ mbPerSecond: bound, cores, body: data.body ?? null, cpuPerGB: data.stagesCpuPerGB ?? null, file })
}
