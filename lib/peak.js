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

/**
 * A reader of the peak that keeps /proc/self/status open and reads it with
 * one pread: the sampler reads it ten times a second and the ingest routes
 * at the end of every request, and open/fstat/read/close each time was a
 * third of what watching /metrics cost. Whoever makes one closes it (the
 * sampler when it stops, the app in its `close()`).
 * @returns {{ read: () => { bytes: number, source: 'VmHWM'|'maxRSS' }, close: () => void }}
 */
export function createPeakReader () {
  let fd = null
  let buffer = null
  return {
    read: function readPeakKept () {
      if (!hasProc()) return portablePeak()
      if (fd === null) {
        fd = fs.openSync(STATUS, 'r')
        buffer = Buffer.alloc(4096)
      }
      const length = fs.readSync(fd, buffer, 0, buffer.length, 0)
      return peakFrom(buffer.toString('latin1', 0, length))
    },
    close: function closePeakReader () {
      if (fd === null) return
      fs.closeSync(fd)
      fd = null
      buffer = null
    }
  }
}

function peakFrom (status) {
  const match = /^VmHWM:\s+(\d+) kB/m.exec(status)
  return match ? { bytes: Number(match[1]) * 1024, source: 'VmHWM' } : portablePeak()
}

function portablePeak () {
  return { bytes: process.resourceUsage().maxRSS * 1024, source: 'maxRSS' }
}

/**
 * Peak resident set size in bytes, and where it came from: one read that
 * keeps nothing open, for callers that ask now and then (a reader made by
 * createPeakReader serves the frequent ones).
 */
export function readPeakRss () {
  return hasProc() ? peakFrom(fs.readFileSync(STATUS, 'latin1')) : portablePeak()
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

// Process-wide on purpose, unlike everything an app holds: the kernel keeps
// one peak per process, so a request may call the peak its own only when no
// request of any app in the process ran beside it, and no app's experiment
// measures the process meanwhile. Two apps with counts of their own would
// each reset the one peak under the other.
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
 * @param {() => { bytes: number }} [readPeak] how to read the peak at the end (an app's kept reader)
 * @returns {() => { rssBefore: number, rssAfter: number, peakRss: number, peakScope: 'request'|'process' }}
 */
export function watchRequestPeak (allowReset, readPeak = readPeakRss) {
  const rssBefore = process.memoryUsage.rss()
  let alone = active === 0 && holders === 0 && allowReset && resetPeakRss()
  active++
  generation++
  const startGeneration = generation
  return function endRequestPeak () {
    active--
    // another request started (or ran) meanwhile: the peak is shared
    if (generation !== startGeneration || active > 0) alone = false
    const peak = readPeak()
    return {
      rssBefore,
      rssAfter: process.memoryUsage.rss(),
      peakRss: peak.bytes,
      peakScope: alone ? 'request' : 'process'
    }
  }
}
