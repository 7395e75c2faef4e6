/**
 * A measurement window of the experiment engine (lib/experiments/engine.js): one route of a run
 * of several, measured from its own start. Two figures, each against a baseline taken for it:
 * - the server's RSS: `settleMemory` first (a full collection, then a wait while V8's background
 *   thread hands the freed pages back), so the idle holds none of the garbage a route before it
 *   left; then the kernel's peak reset, then the idle read;
 * - what the route's uploads held, from the held ledger (lib/metrics/held.js): the end events
 *   of the requests that start inside the window. It starts at zero by construction, and it is
 *   what RSS cannot show when a route reuses pages a route before it freed (docs/experiments.md).
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { readPeakRss, resetPeakRss } from '../metrics/peak.js'
import { labCollector } from '../util/lab-gc.js'

/** How often the RSS is read while it falls, the fall under which it has settled, and the longest wait. */
const SETTLE_POLL_MS = 10
const SETTLE_STEP = 1024 * 1024
const SETTLE_MAX_MS = 1000

let collector

/**
 * One full collection, where the runtime lets the lab have one, then wait until the RSS stops
 * falling: V8 unmaps the pages a collection freed on a thread of its own, tens of ms after it.
 * @returns {Promise<boolean>} whether a collection ran
 */
export async function settleMemory (signal) {
  collector ??= labCollector() ?? false
  if (collector === false) return false
  collector()
  const started = performance.now()
  let last = process.memoryUsage.rss()
  let still = 0
  while (still < 3 && performance.now() - started < SETTLE_MAX_MS) {
    await sleep(SETTLE_POLL_MS, null, { signal })
    const now = process.memoryUsage.rss()
    still = last - now < SETTLE_STEP ? still + 1 : 0
    last = Math.min(last, now)
  }
  return true
}

/**
 * Reset the kernel's peak and read the idle after it: GC threads free pages at any time, so an
 * idle read before the reset could top every later peak.
 * @param {import('node:events').EventEmitter} events told 'peak' { reset: true, by: 'lab' } as the window opens (the lab's reset)
 */
export function resetAndReadIdle (events) {
  const peakReset = resetPeakRss()
  const idleRss = process.memoryUsage.rss()
  events.emit('peak', { time: Date.now(), reset: true, by: 'lab', supported: peakReset, peakRss: readPeakRss().bytes })
  return { idleRss, peakReset }
}

/**
 * Follow the ingest requests that start from now on: the most one of them held at once
 * (its end event's `heldPeak`), and how many ended.
 * @param {import('node:events').EventEmitter} events the lab's bus ('request' start and end)
 * @returns {() => { heldPeak: number|null, heldRequests: number }} stops following, and says
 */
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
