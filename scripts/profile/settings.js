/** What the profiler's parts share: the pinned Clinic.js, where results go, the lab and load it forks, the modes. */
import path from 'node:path'
import { DEFAULTS, PROJECT_ROOT } from '../../lib/config/options.js'
import { formatBytes } from '../../lib/util/units.js'
import { ROUTES } from './load.js'

/** Clinic.js 13.0.0 is the last release (2023); pinned so every run downloads the same tree. */
export const CLINIC_VERSION = '13.0.0'
/** Clinic doctor 13 does not work from this Node on (docs/sources.md#tools); heapprofiler and flame are tried anyway. */
export const DOCTOR_LAST_WORKING = [21, 7]

export const PROFILES_DIR = path.join(DEFAULTS.dataDir, 'profiles')
export const INPUT_DIR = path.join(PROFILES_DIR, 'inputs')
export const SERVER = path.join(PROJECT_ROOT, 'scripts', 'profile', 'server.js')
export const LOAD = path.join(PROJECT_ROOT, 'scripts', 'profile', 'load.js')
export const STOP_GRACE_MS = 60_000
/** Bytes between heap samples: Node's default (512 KiB) leaves a short load of small bodies a few dozen; the lab's frames need hundreds. */
export const HEAP_PROF_INTERVAL = 32 * 1024
export const SNAPSHOT_TIMEOUT_MS = 300_000

export const MODES = Object.freeze({
  doctor: Object.freeze({
    clinic: 'doctor', profilers: ['cpu', 'heap'], what: 'CPU, memory, event-loop delay and handles over time, with a diagnosis'
  }),
  heap: Object.freeze({
    clinic: 'heapprofiler',
    profilers: ['heap'],
    sampler: true,
    what: 'which lines allocated the bytes and which hold them, V8 heap and Buffers (the lab\'s sampler)'
  }),
  flame: Object.freeze({ clinic: 'flame', profilers: ['cpu'], what: 'where CPU time goes, as a flame graph' }),
  snapshot: Object.freeze({ clinic: null, profilers: [], what: 'every object on the heap before, during and after the load' })
})

/** A path as the output shows it: from the project's root. */
export function shown (file) {
  return path.relative(PROJECT_ROOT, file) || '.'
}

/** The profiled lab's own data directory, removed once it stops: an upload answered as the load stops is never deleted by the load. */
export function labDataDir (args) {
  return path.join(args.out, 'lab-data')
}
/** The load in a line: route, body, connections, length. */
export function describePlan (args, body) {
  const length = args.amount > 0 ? `${args.amount} requests` : `${args.duration} s`
  return `POST ${ROUTES[args.route].path}, ${formatBytes(body.length)} of gzip (${formatBytes(args.size)} inflated), ` +
    `${args.connections} connections, ${length}`
}
