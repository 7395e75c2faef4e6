/**
 * The process's peak RSS over a window, and its reset. On Linux the kernel's: `VmHWM` from /proc/self/status, reset by writing 5
 * to /proc/self/clear_refs (Linux >= 4.0). Elsewhere, and in portable mode (lib/util/platform.js), a sampled peak
 * (lib/metrics/peak-sampler.js): a thread reads the RSS every few ms while a request or a run watches. Every figure says which it
 * is (`source`: 'VmHWM' or 'sampled'; `peakSourceLabel` for people): a sampled peak can miss a spike shorter than its interval,
 * the kernel's cannot. (`process.resourceUsage().maxRSS` is never used for a window: it never resets, so it is the process's
 * lifetime peak, not a request's.)
 */
import fs from 'node:fs'
import { procAvailable } from '../util/platform.js'
import { PeakSampler } from './peak-sampler.js'

const STATUS = '/proc/self/status'
const CLEAR_REFS = '/proc/self/clear_refs'

function hasProc () {
  return procAvailable()
}

// one per process, like the kernel's peak it stands in for (see the counts below)
let sampler = null

function sampledPeak () {
  sampler ??= new PeakSampler()
  return { bytes: sampler.read(), source: 'sampled' }
}

/** Sample the peak while something runs, where the peak is sampled; returns the function to call when done. */
export function watchPeak () {
  if (hasProc()) return function kernelWatches () {}
  sampler ??= new PeakSampler()
  return sampler.watch()
}

export function peakSourceLabel (source) {
  return source === 'VmHWM' ? 'kernel peak' : 'sampled peak'
}

/**
 * A reader of the peak that keeps /proc/self/status open and reads it with one pread, for the sampler and the ingest routes, which
 * read it often. Whoever makes one closes it (the sampler when it stops, the app in its `close()`).
 */
export function createPeakReader () {
  let fd = null
  let buffer = null
  return {
    read: function readPeakKept () {
      if (!hasProc()) return sampledPeak()
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
  return match ? { bytes: Number(match[1]) * 1024, source: 'VmHWM' } : sampledPeak()
}

/**
 * Peak resident set size in bytes, and where it came from: one read that keeps nothing open, for callers that ask now and then (a
 * reader made by createPeakReader serves the frequent ones).
 */
export function readPeakRss () {
  return hasProc() ? peakFrom(fs.readFileSync(STATUS, 'latin1')) : sampledPeak()
}

/** Reset the peak to the current RSS, the kernel's or the sampled one; whether it could. */
export function resetPeakRss () {
  if (!hasProc()) {
    sampler ??= new PeakSampler()
    sampler.reset()
    return true
  }
  try {
    fs.writeFileSync(CLEAR_REFS, '5')
    return true
  } catch {
    return false
  }
}

// Process-wide on purpose, unlike everything an app holds: the kernel keeps one peak per process, so a request may call the peak
// its own only when no request of any app in the process ran beside it, and no app's experiment measures the process meanwhile.
// Two apps with counts of their own would each reset the one peak under the other.
let active = 0
let generation = 0
let holders = 0

/**
 * While something measures the whole process's peak (an experiment run), requests must not reset it. Returns the function that
 * lets go.
 */
export function holdPeak () {
  holders++
  const stopWatching = watchPeak()
  let released = false
  return function releasePeak () {
    if (!released) {
      released = true
      holders--
      stopWatching()
    }
  }
}

/**
 * Track the process's peak RSS over one request. When the request runs alone (and resetting is allowed) the kernel peak is reset
 * at its start, so the figure is the request's own; otherwise it is the process's.
 * @param {() => { bytes: number }} [readPeak] how to read the peak at the end (an app's kept reader)
 * @returns {() => { rssBefore: number, rssAfter: number, peakRss: number, peakScope: 'request'|'process',
 *   peakSource: 'kernel peak'|'sampled peak' }}
 */
export function watchRequestPeak (allowReset, readPeak = readPeakRss) {
  const rssBefore = process.memoryUsage.rss()
  const stopWatching = watchPeak()
  let alone = active === 0 && holders === 0 && allowReset && resetPeakRss()
  active++
  generation++
  const startGeneration = generation
  return function endRequestPeak () {
    active--
    // another request started (or ran) meanwhile: the peak is shared
    if (generation !== startGeneration || active > 0) alone = false
    const peak = readPeak()
    stopWatching()
    return {
      rssBefore,
      rssAfter: process.memoryUsage.rss(),
      peakRss: peak.bytes,
      peakScope: alone ? 'request' : 'process',
      peakSource: peakSourceLabel(peak.source)
    }
  }
}
