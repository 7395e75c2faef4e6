/**
 * The lab's event bus: what happens (requests, experiments, peak resets)
 * is emitted here, and whoever wants to show or record it subscribes:
 * /metrics, the experiment engine, tests. Measuring stays separate from
 * transport.
 *
 * Events:
 * - 'request' { phase: 'start'|'end', id, route, time, compressedBytes?, inflatedBytes?, status?, ms?, errorType? }
 * - 'experiment' { id, name, phase: 'start'|'progress'|'result'|'error'|'cancelled', time, ... }
 * - 'peak' { time, reset: boolean, supported: boolean, peakRss }
 * - 'crash' { reason, pid, rss, budget, route, inFlight, experiment, time, restartMs, ... }: once,
 *   right after start, in a worker the supervisor started in place of one that died
 *   (lib/supervisor.js, lib/worker-main.js)
 */
import { EventEmitter } from 'node:events'

/** @returns {EventEmitter} */
export function createLabEvents () {
  const events = new EventEmitter()
  // every SSE client subscribes: many listeners are expected, not a leak
  events.setMaxListeners(0)
  return events
}

let requestIds = 0

/** A process-wide increasing id for ingest requests. */
export function nextRequestId () {
  requestIds++
  return requestIds
}
