/**
 * What the supervisor (lib/supervisor/supervisor.js) makes of a dead worker: the
 * restart it gets (planRestart), the route it is put down to (likelyCulprit)
 * and one line about it for people (describeCrash).
 */
import { formatMemory } from '../util/units.js'

/** Routes whose memory grows with their bodies: the likely cause of a crash when in flight. */
const BUFFERING_ROUTES = Object.freeze(['bad', 'upload-buffer'])

/**
 * When to restart after a crash, and the backoff count after it. A crash a request caused restarts
 * at once and leaves the count as it is; any other crash adds one, and waits 0 for the first of a run,
 * then `restartBackoffMs`, doubling, at most `maxRestartBackoffMs`. A worker that was up (ready) for
 * `restartWindowMs` or more ends the run first, whatever killed it.
 * @param {number} streak crashes with no request in flight in the current run
 * @param {{ requestCaused: boolean, upMs: number }} crash `upMs`: how long the worker had been ready (0: never)
 */
export function planRestart (streak, { requestCaused, upMs }, { restartBackoffMs, maxRestartBackoffMs, restartWindowMs }) {
  const current = upMs >= restartWindowMs ? 0 : streak
  if (requestCaused) return { streak: current, backoffMs: 0 }
  const next = current + 1
  // 2 ** n is Infinity long before n overflows: min() caps it all the same
  const backoffMs = next === 1 ? 0 : Math.min(maxRestartBackoffMs, restartBackoffMs * 2 ** (next - 2))
  return { streak: next, backoffMs }
}

/**
 * The route a crash is put down to: a route that buffers whole bodies (/bad, then /upload-buffer)
 * when one was in flight, else the latest request to start; null when none was in flight.
 * @param {Record<string, number>} inFlight requests in flight by route
 * @param {string[]} routes their routes, oldest first
 */
export function likelyCulprit (inFlight, routes) {
  for (const buffering of BUFFERING_ROUTES) if (inFlight[buffering]) return buffering
  return routes[routes.length - 1] ?? null
}

/**
 * One line about a crash: "worker 123 killed: RSS 270.4 MiB passed the 256 MiB budget while
 * POST /bad was in flight".
 * @param {object} crash a crash record
 */
export function describeCrash (crash) {
  const during = crash.route === null ? 'with no ingest or upload request in flight' : `while POST /${crash.route} was in flight`
  const who = `worker ${crash.pid}`
  if (crash.reason === 'memory-limit') {
    return `${who} killed: RSS ${formatMemory(crash.rss)} passed the ${formatMemory(crash.budget)} budget ${during}`
  }
  if (crash.reason === 'signal') return `${who} died of ${crash.signal} ${during}`
  return `${who} exited with code ${crash.exitCode} ${during}`
}
