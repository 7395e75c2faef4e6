// The supervisor's options: frozen defaults, normalised into a new object (a TypeError for a bad value).
import path from 'node:path'
import { defaultMemoryBudget } from '../limits/memory-budget.js'
import { PROJECT_ROOT } from '../config/options.js'
import { MiB, formatMemory } from '../util/units.js'
import { integerOptions } from '../config/integers.js'

export const SUPERVISOR_DEFAULTS = Object.freeze({
  host: '127.0.0.1',
  port: 3000,
  /** Options for the worker's `createApp` (JSON: they cross IPC). */
  app: Object.freeze({}),
  /** RSS past which the worker is killed (0: none); also the worker app's `memoryBudget` unless `app` names one. */
  memoryLimit: defaultMemoryBudget(),
  /** How often the worker's RSS is read: a bomb on /bad passes the line by what it grows in this time (docs/zip-bombs.md). */
  pollMs: 25,
  /** 'proc' (/proc/<pid>/status, from outside), 'ipc' (the worker's own: blind while it is stuck), 'auto'. */
  rssSource: 'auto',
  /** The delay before the second restart in a row with no request in flight (the first is at once); it doubles each time. */
  restartBackoffMs: 250,
  /** The longest that delay grows. */
  maxRestartBackoffMs: 10_000,
  /** A worker that stayed up (ready) this long starts the backoff again from nothing. */
  restartWindowMs: 60_000,
  /** How long a worker asked to stop may take before it is killed. */
  stopGraceMs: 3000,
  /** Connections held while no worker runs; past this they are closed. */
  maxHeldConnections: 1024,
  /** glibc's MALLOC_MMAP_THRESHOLD_ for the worker (0: glibc's own, which rises): docs/limits.md, "Decoder memory". */
  mallocMmapThreshold: 4 * MiB,
  workerScript: path.join(PROJECT_ROOT, 'worker.js'),
  /** Node flags for the worker (default: the supervisor's own). */
  execArgv: null
})

/** A budget smaller than this would kill an idle worker over and over. */
const MIN_MEMORY_LIMIT = 64 * MiB

const checkInteger = integerOptions('supervisor option ')

/** Normalise supervisor options: frozen defaults, a new object, a TypeError for a bad value. */
export function normalizeSupervisorOptions (options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('supervisor options must be an object')
  const out = { ...SUPERVISOR_DEFAULTS }
  // an option given as undefined is an option not given
  for (const [key, value] of Object.entries(options)) if (value !== undefined) out[key] = value
  if (typeof out.host !== 'string' || out.host === '') throw new TypeError('supervisor option host must be an address')
  checkInteger('port', out.port, 0, 65535)
  if (out.app === null || typeof out.app !== 'object') throw new TypeError('supervisor option app must be an object')
  checkInteger('memoryLimit', out.memoryLimit, 0, Number.MAX_SAFE_INTEGER)
  if (out.memoryLimit !== 0 && out.memoryLimit < MIN_MEMORY_LIMIT) {
    const least = formatMemory(MIN_MEMORY_LIMIT)
    throw new TypeError(`the memory budget must be 0 (none) or at least ${least}: an idle worker needs about 90 MiB`)
  }
  checkInteger('pollMs', out.pollMs, 5, 10_000)
  checkInteger('mallocMmapThreshold', out.mallocMmapThreshold, 0, 2 ** 31)
  if (!['auto', 'proc', 'ipc'].includes(out.rssSource)) {
    throw new TypeError(`supervisor option rssSource must be auto, proc or ipc, got ${out.rssSource}`)
  }
  // at least 1 ms: a worker dying at birth must never be restarted in a hot loop
  checkInteger('restartBackoffMs', out.restartBackoffMs, 1, 3600_000)
  checkInteger('maxRestartBackoffMs', out.maxRestartBackoffMs, 1, 3600_000)
  if (out.maxRestartBackoffMs < out.restartBackoffMs) {
    const { maxRestartBackoffMs: most, restartBackoffMs: first } = out
    throw new TypeError(`supervisor option maxRestartBackoffMs (${most}) must be at least restartBackoffMs (${first})`)
  }
  checkInteger('restartWindowMs', out.restartWindowMs, 1, 24 * 3600_000)
  checkInteger('stopGraceMs', out.stopGraceMs, 0, 600_000)
  checkInteger('maxHeldConnections', out.maxHeldConnections, 0, 1_000_000)
  if (typeof out.workerScript !== 'string' || out.workerScript === '') throw new TypeError('supervisor option workerScript must be a path')
  if (out.execArgv !== null && !Array.isArray(out.execArgv)) throw new TypeError('supervisor option execArgv must be an array or null')
  return Object.freeze(out)
}
