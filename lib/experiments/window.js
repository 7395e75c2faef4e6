// A measurement window of the engine: one route of a run measured from its own start, the server's RSS and
// what the route's uploads held, each against a baseline taken for it (README.md).
import { setTimeout as sleep } from 'node:timers/promises'
import { readPeakRss, resetPeakRss } from '../metrics/peak.js'
import { labCollector } from '../util/lab-gc.js'

/**
 * How often the RSS is read while it falls, the fall under which a read is still, how many still reads in a row
 * settle it (V8 unmaps in a thread of its own, which a busy machine delays), and the longest wait.
 */
const SETTLE_POLL_MS = 10
const SETTLE_STEP = 1024 * 1024
const SETTLE_STILL_READS = 10
const SETTLE_MAX_MS = 2000

let collector

/** One full collection where the runtime allows, then wait until V8's thread has unmapped the freed pages. */
export async function settleMemory (signal) {
  collector ??= labCollector() ?? false
  if (collector === false) return false
  collector()
  const started = performance.now()
  let last = process.memoryUsage.rss()
  let still = 0
  while (still < SETTLE_STILL_READS && performance.now() - started < SETTLE_MAX_MS) {
    await sleep(SETTLE_POLL_MS, null, { signal })
    const now = process.memoryUsage.rss()
    still = last - now < SETTLE_STEP ? still + 1 : 0
    last = Math.min(last, now)
  }
  return true
}

/** Reset the kernel's peak (telling `events`), then read the idle: an idle read first could top every later peak. */
export function resetAndReadIdle (events) {
  const peakReset = resetPeakRss()
  const idleRss = process.memoryUsage.rss()
  events.emit('peak', { time: Date.now(), reset: true, by: 'lab', supported: peakReset, peakRss: readPeakRss().bytes })
  return { idleRss, peakReset }
}

/** Follow the requests that start from now: the most one held at once, and how many ended; returns the stop. */
export function followHeld (events) {
  const started = new Set()
  let heldPeak = null
  let heldRequests = 0
  function onRequest (event) {
    if (event?.phase === 'start') started.add(event.id)
    else if (event?.phase === 'end' && started.delete(event.id) && Number.isFinite(event.heldPeak)) {
      heldRequests++
      heldPeak = Math.max(heldPeak ?? 0, event.heldPeak)
    }
  }
  events.on('request', onRequest)
  return function stopFollowing () {
    events.off('request', onRequest)
    return { heldPeak, heldRequests }
  }
}

/** A window's memory figures. */
export function memoryFigures (start, peak, held) {
  return {
    idleRss: start.idleRss,
    peakRss: peak.bytes,
    // without a reset the kernel's peak is the process's lifetime high: no "above idle" to speak of
    peakAboveIdle: start.peakReset ? Math.max(0, peak.bytes - start.idleRss) : null,
    peakSource: peak.source,
    peakReset: start.peakReset,
    idleAfterCollection: start.collected,
    ...(held === undefined ? {} : held)
  }
}
