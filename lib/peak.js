/**
 * The kernel's true peak RSS: `VmHWM` from /proc/self/status, reset by
 * writing 5 to /proc/self/clear_refs (Linux >= 4.0). Elsewhere the portable
 * `process.resourceUsage().maxRSS`, which never resets.
 */
import fs from 'node:fs'

const STATUS = '/proc/self/status'
const CLEAR_REFS = '/proc/self/clear_refs'

let procAvailable = null

function hasProc () {
  if (procAvailable === null) {
    try {
      fs.accessSync(STATUS, fs.constants.R_OK)
      procAvailable = true
    } catch {
      procAvailable = false
    }
  }
  return procAvailable
}

let statusFd = null
const statusBuffer = Buffer.alloc(4096)

/**
 * /proc/self/status, read with one pread on a descriptor kept open: the
 * sampler reads it ten times a second, and open/fstat/read/close each time
 * was a third of what watching /metrics cost.
 */
function readStatus () {
  if (statusFd === null) statusFd = fs.openSync(STATUS, 'r')
  const length = fs.readSync(statusFd, statusBuffer, 0, statusBuffer.length, 0)
  return statusBuffer.toString('latin1', 0, length)
}

/** Peak resident set size in bytes, and where it came from. */
export function readPeakRss () {
  if (hasProc()) {
    const match = /^VmHWM:\s+(\d+) kB/m.exec(readStatus())
    if (match) return { bytes: Number(match[1]) * 1024, source: 'VmHWM' }
  }
  return { bytes: process.resourceUsage().maxRSS * 1024, source: 'maxRSS' }
}

/**
 * Reset the kernel's peak to the current RSS.
 * @returns {boolean} whether it could
 */
export function resetPeakRss () {
  if (!hasProc()) return false
  try {
    fs.writeFileSync(CLEAR_REFS, '5')
    return true
  } catch {
    return false
  }
}

let active = 0
let generation = 0
let holders = 0

/**
 * While something measures the whole process's peak (an experiment run),
 * requests must not reset it. Returns the function that lets go.
 */
export function holdPeak () {
  holders++
  let released = false
  return function releasePeak () {
    if (!released) {
      released = true
      holders--
    }
  }
}

/**
 * Track the process's peak RSS over one request. When the request runs
 * alone (and resetting is allowed) the kernel peak is reset at its start,
 * so the figure is the request's own; otherwise it is the process's.
 * @param {boolean} allowReset
 * @returns {() => { rssBefore: number, rssAfter: number, peakRss: number, peakScope: 'request'|'process' }}
 */
export function watchRequestPeak (allowReset) {
  const rssBefore = process.memoryUsage.rss()
  let alone = active === 0 && holders === 0 && allowReset && resetPeakRss()
  active++
  generation++
  const startGeneration = generation
  return function endRequestPeak () {
    active--
    // another request started (or ran) meanwhile: the peak is shared
    if (generation !== startGeneration || active > 0) alone = false
    const peak = readPeakRss()
    return {
      rssBefore,
      rssAfter: process.memoryUsage.rss(),
      peakRss: peak.bytes,
      peakScope: alone ? 'request' : 'process'
    }
  }
}
