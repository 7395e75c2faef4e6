/**
 * CPU seconds per GB: what a route or a stage spends on the CPU per GB of inflated body, whatever
 * else the machine runs. Wall MB/s moves with the load of other processes; CPU per GB barely does,
 * so a share of CPU against the stages' own (lib/measure/bound.js) means the same on a busy box.
 * A route's CPU is its worker process's (every thread: the event loop, the parse threads, zlib's
 * and the collector's), read from outside in /proc/<pid>/stat.
 */
import fs from 'node:fs'
import { procAvailable } from '../util/platform.js'

/** Clock ticks per second of /proc/<pid>/stat's utime and stime: USER_HZ, 100 on every Linux. */
export const USER_HZ = 100

/**
 * The CPU seconds a process has spent, user and system, all its threads: null where there is no
 * /proc, or in portable mode (lib/util/platform.js).
 * @param {number} pid
 * @param {(file: string) => string} [read] the file's text (specs); by default /proc itself
 * @returns {number|null}
 */
export function processCpuSeconds (pid, read = null) {
  if (read === null) {
    if (!procAvailable()) return null
    read = readStat
  }
  let text
  try {
    text = read(`/proc/${pid}/stat`)
  } catch {
    return null
  }
  // the command may hold spaces and parentheses: the fields start after the last ')'
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  const ticks = Number(fields[11]) + Number(fields[12])
  return Number.isFinite(ticks) ? ticks / USER_HZ : null
}

function readStat (file) {
  return fs.readFileSync(file, 'latin1')
}

/**
 * CPU seconds per GB (1e9 bytes) of inflated body; null where either is missing or no bytes were served.
 * @param {number|null} cpuSeconds
 * @param {number|null} bytes
 * @returns {number|null}
 */
export function cpuPerGB (cpuSeconds, bytes) {
  if (!(typeof cpuSeconds === 'number' && cpuSeconds >= 0 && Number.isFinite(cpuSeconds))) return null
  if (!(typeof bytes === 'number' && bytes > 0 && Number.isFinite(bytes))) return null
  return cpuSeconds / (bytes / 1e9)
}

/**
 * A route's CPU share: the stages' CPU per GB over the route's, 1 when the route spends no more
 * than its stages alone, 0.5 when twice as much. Null when either is missing.
 * @param {number|null} routeCpuPerGB
 * @param {number|null} stagesCpuPerGB
 * @returns {number|null}
 */
export function cpuShare (routeCpuPerGB, stagesCpuPerGB) {
  if (!(typeof routeCpuPerGB === 'number' && routeCpuPerGB > 0 && Number.isFinite(routeCpuPerGB))) return null
  if (!(typeof stagesCpuPerGB === 'number' && stagesCpuPerGB > 0 && Number.isFinite(stagesCpuPerGB))) return null
  return stagesCpuPerGB / routeCpuPerGB
}

/**
 * How far apart a cell's runs are: (largest - smallest) / smallest of the figures present; null
 * with fewer than two. The ingest bench says it of each cell's CPU per GB, which should agree
 * within 10 % whatever else the machine runs (docs/ingest.md).
 * @param {Array<number|null>} values
 * @returns {number|null}
 */
export function spread (values) {
  const present = values.filter(function isPositive (v) { return typeof v === 'number' && v > 0 && Number.isFinite(v) })
  if (present.length < 2) return null
  return (Math.max(...present) - Math.min(...present)) / Math.min(...present)
}
