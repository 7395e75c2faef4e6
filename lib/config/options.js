// Options for the lab: frozen defaults, normalised into a new object (a TypeError for a bad value, the caller's
// object never changed). Only server.js and the CLIs read env vars and flags; why each default: README.md.
import os from 'node:os'
import { defaultMemoryBudget } from '../limits/memory-budget.js'
import { normalizeGuardOptions } from '../limits/request-guard.js'
import { integerOptions } from './integers.js'
import { PROJECT_ROOT, defaultDataDir } from '../util/project-root.js'
import { GiB, MiB } from '../util/units.js'

export { PROJECT_ROOT }

export const DEFAULTS = Object.freeze({
  /** Where everything generated goes: test-data/ beside the code, or under the current folder when installed. */
  dataDir: defaultDataDir(),
  /** Bytes the lab may keep under `dataDir` (uploads, saves): past it, 507. */
  diskQuota: 2 * GiB,
  limits: Object.freeze({
    /** Compressed request bytes, both routes. */
    compressed: 512 * MiB,
    /** Inflated bytes, both routes: below V8's largest string, so /bad can always make its one string. */
    inflated: 500 * MiB,
    /** Largest single JSON value (or NDJSON line) /good gathers for a parse thread. */
    record: 4 * MiB,
    /** /good: largest inflated/compressed ratio, checked once `ratioAfter` bytes are inflated. */
    ratio: 200,
    ratioAfter: 16 * MiB,
    /** /good: deepest nesting of arrays and objects. */
    depth: 1000,
    /** ms without a body byte (while the server reads) before any body fails with 408; 0: no idle limit. */
    bodyIdleMs: 10_000,
    /** Bytes/s a body must average over the last `bodyRateWindowMs` of reading; 0: no minimum. */
    minBodyRate: 4096,
    bodyRateWindowMs: 10_000,
    /** Ingest requests in flight, both routes; past it, 503 with Retry-After. */
    inflight: 256,
    /** gzip layers (media type plus Content-Encoding). */
    layers: 3
  }),
  ingest: Object.freeze({
    /** Bytes of inflate chunks and parse batches /good may hold across all requests: the "constant". */
    bufferBudget: 16 * MiB,
    /** Bytes the streaming routes' decoders (brotli, zstd, zlib windows) may hold across all requests. */
    decoderBudget: 24 * MiB,
    /** Heap one parse thread may be projected to use for one batch: a denser record gets 413, unparsed. */
    parseCost: 12 * MiB,
    /** /good: a body that ends within this many inflated bytes is parsed whole; 0: every batch to a thread. */
    inlineParse: 64 * 1024,
    /** Where a small body's document past 16 KiB is parsed: 'busy', 'always' or 'never' on a parse thread. */
    shareParse: 'busy',
    /** Most bytes of a block /good fills with inflated bytes and sends a parse thread whole; smaller as more stream. */
    blockBytes: 256 * 1024,
    /** /good's WebAssembly SIMD cutter and UTF-8 decoder (lib/json/cutter.js, utf8.js); false or no SIMD: the scanner alone. */
    simd: true,
    /** ms a queued /good request waits on a stuck queue before 503 with Retry-After. */
    queueMs: 10_000,
    /** /good requests streaming at once; the rest wait, unread, in the kernel's socket buffers. */
    activePipelines: 8
  }),
  /** /bad without its `maxOutputLength` guard: a bomb takes the process down (only with a memory budget). */
  unsafeBad: false,
  /** Bytes the process may hold: the supervisor kills the worker past it, and buffering routes are admitted within it. */
  memoryBudget: defaultMemoryBudget(),
  /** Who may drive the lab (lib/limits/request-guard.js). */
  guard: Object.freeze({ allowedHosts: Object.freeze([]), boundHost: null, accessToken: null, exemptLoopback: true }),
  /** Reset the kernel's peak RSS when an ingest request starts alone. */
  resetPeakPerRequest: true,
  /** Run records kept in `dataDir/runs/` (docs/runs.md): past it the oldest goes; 0: none written. */
  runs: Object.freeze({ keep: 50 }),
  generate: Object.freeze({
    defaultSize: 10000,
    maxItems: 20_000_000,
    maxBytes: 8 * GiB
  }),
  /** Worker threads that JSON.parse record batches for /good (one pool per process). */
  parseThreads: Math.max(1, Math.min(4, os.availableParallelism()))
})

/** Where a small body's document may be parsed: see DEFAULTS.ingest.shareParse. */
const SHARE_PARSE_MODES = Object.freeze(['busy', 'always', 'never'])

function checkChoice (name, value, choices) {
  if (!choices.includes(value)) throw new TypeError(`option ${name} must be one of ${choices.join(', ')}, got ${JSON.stringify(value)}`)
  return value
}

const checkInteger = integerOptions('option ')

function checkFlag (name, value) {
  if (typeof value !== 'boolean') throw new TypeError(`option ${name} must be a boolean, got ${JSON.stringify(value)}`)
  return value
}

/** Normalise app options. */
export function normalizeOptions (options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('options must be an object')
  const limits = { ...DEFAULTS.limits, ...options.limits }
  const generate = { ...DEFAULTS.generate, ...options.generate }
  const ingest = { ...DEFAULTS.ingest, ...options.ingest }
  const runs = { ...DEFAULTS.runs, ...options.runs }
  const out = {
    ...DEFAULTS,
    ...options,
    limits: Object.freeze({
      compressed: checkInteger('limits.compressed', limits.compressed, 1, Number.MAX_SAFE_INTEGER),
      inflated: checkInteger('limits.inflated', limits.inflated, 1, Number.MAX_SAFE_INTEGER),
      record: checkInteger('limits.record', limits.record, 1, Number.MAX_SAFE_INTEGER),
      layers: checkInteger('limits.layers', limits.layers, 1, 16),
      ratio: checkInteger('limits.ratio', limits.ratio, 1, 1_000_000),
      ratioAfter: checkInteger('limits.ratioAfter', limits.ratioAfter, 0, Number.MAX_SAFE_INTEGER),
      depth: checkInteger('limits.depth', limits.depth, 1, 1_000_000),
      bodyIdleMs: checkInteger('limits.bodyIdleMs', limits.bodyIdleMs, 0, 3_600_000),
      minBodyRate: checkInteger('limits.minBodyRate', limits.minBodyRate, 0, Number.MAX_SAFE_INTEGER),
      bodyRateWindowMs: checkInteger('limits.bodyRateWindowMs', limits.bodyRateWindowMs, 50, 3_600_000),
      inflight: checkInteger('limits.inflight', limits.inflight, 1, 100_000)
    }),
    ingest: Object.freeze({
      bufferBudget: checkInteger('ingest.bufferBudget', ingest.bufferBudget, 64 * 1024, Number.MAX_SAFE_INTEGER),
      decoderBudget: checkInteger('ingest.decoderBudget', ingest.decoderBudget, 64 * 1024, Number.MAX_SAFE_INTEGER),
      activePipelines: checkInteger('ingest.activePipelines', ingest.activePipelines, 1, 10000),
      parseCost: checkInteger('ingest.parseCost', ingest.parseCost, 64 * 1024, Number.MAX_SAFE_INTEGER),
      queueMs: checkInteger('ingest.queueMs', ingest.queueMs, 1, 3_600_000),
      inlineParse: checkInteger('ingest.inlineParse', ingest.inlineParse, 0, MiB),
      shareParse: checkChoice('ingest.shareParse', ingest.shareParse, SHARE_PARSE_MODES),
      simd: checkFlag('ingest.simd', ingest.simd),
      blockBytes: checkInteger('ingest.blockBytes', ingest.blockBytes, 16 * 1024, 64 * MiB)
    }),
    runs: Object.freeze({
      keep: checkInteger('runs.keep', runs.keep, 0, 10_000)
    }),
    generate: Object.freeze({
      defaultSize: checkInteger('generate.defaultSize', generate.defaultSize, 0, generate.maxItems),
      maxItems: checkInteger('generate.maxItems', generate.maxItems, 1, Number.MAX_SAFE_INTEGER),
      maxBytes: checkInteger('generate.maxBytes', generate.maxBytes, 1, Number.MAX_SAFE_INTEGER)
    })
  }
  if (typeof out.dataDir !== 'string' || out.dataDir === '') throw new TypeError('option dataDir must be a path')
  if (typeof out.unsafeBad !== 'boolean') throw new TypeError('option unsafeBad must be a boolean')
  checkInteger('memoryBudget', out.memoryBudget, 0, Number.MAX_SAFE_INTEGER)
  out.guard = normalizeGuardOptions(out.guard)
  if (typeof out.resetPeakPerRequest !== 'boolean') throw new TypeError('option resetPeakPerRequest must be a boolean')
  checkInteger('parseThreads', out.parseThreads, 1, 64)
  checkInteger('diskQuota', out.diskQuota, 1, Number.MAX_SAFE_INTEGER)
  return Object.freeze(out)
}
