/**
 * The lab's event bus: what happens (requests, experiments, peak resets) is emitted here, and whoever wants to show or record it
 * subscribes: /metrics, the experiment engine, tests. Measuring stays separate from transport. More: README.md, "lab-events.js".
 */
import { EventEmitter } from 'node:events'
import { performance } from 'node:perf_hooks'

export function createLabEvents () {
  const events = new EventEmitter()
  // every SSE client subscribes: many listeners are expected, not a leak
  events.setMaxListeners(0)
  return events
}

/** The header an experiment's warm-up upload carries, so its request events say so. */
export const WARM_UP_HEADER = 'x-streamlab-warm-up'

/** `{ warmUp: true }` for a request that carries WARM_UP_HEADER, else nothing: spread into its events. */
export function warmUpMark (req) {
  return req.headers[WARM_UP_HEADER] === '1' ? { warmUp: true } : {}
}

/**
 * One request on the bus: its id, and its 'request' events in the envelope every route's events share (phase, id, route, time,
 * the warm-up mark). `start(figures)` emits the start; `end(figures)` the end, with `ms` since the request began unless the
 * figures give their own; `failed(err, figures)` an end that names the error's status and type.
 * @param {import('node:events').EventEmitter} events the lab's bus
 */
export function requestEvents (events, route, req) {
  const id = nextRequestId()
  const started = performance.now()
  const mark = warmUpMark(req)
  function emit (phase, figures) {
    events.emit('request', { phase, id, route, time: Date.now(), ...mark, ...figures })
  }
  return {
    id,
    started,
    start: function emitStart (figures = {}) { emit('start', figures) },
    end: function emitEnd (figures) { emit('end', { ms: msSince(started), ...figures }) },
    failed: function emitFailure (err, figures = {}) {
      emit('end', { ms: msSince(started), status: err?.status ?? 500, errorType: err?.type ?? 'internal', ...figures })
    }
  }
}

let requestIds = 0

/**
 * A process-wide increasing id for ingest and upload requests. Process-wide on purpose, unlike what an app holds: the routes of
 * an app (and a caller's own, the grader's, an experiment's) draw from it without a handle on the app, and one counter for all is
 * what keeps their ids from colliding on a bus. Two apps in one process only see gaps in each other's ids.
 */
export function nextRequestId () {
  requestIds++
  return requestIds
}

/**
 * Milliseconds since `started` (a `performance.now()` reading), to 0.1 ms: the `ms` of every `request` end event and of the
 * answers, refused requests included.
 */
export function msSince (started) {
  return Math.round((performance.now() - started) * 10) / 10
}
