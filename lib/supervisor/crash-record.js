// What the supervisor makes of a dead worker: its restart, the route it is put down to, a line for people.
import { formatMemory } from '../util/units.js'

/** Routes whose memory grows with their bodies: the likely cause of a crash when in flight. */
const BUFFERING_ROUTES = Object.freeze(['bad', 'upload-buffer'])

/**
 * When to restart after a crash, and the backoff count after it: a crash a request caused restarts at once;
 * any other adds one and backs off (README.md). A worker up for `restartWindowMs` (`upMs`) ends the run first.
 */
export function planRestart (streak, { requestCaused, upMs }, { restartBackoffMs, maxRestartBackoffMs, restartWindowMs }) {
  const current = upMs >= restartWindowMs ? 0 : streak
  if (requestCaused) return { streak: current, backoffMs: 0 }
  const next = current + 1
  // 2 ** n is Infinity long before n overflows: min() caps it all the same
  const backoffMs = next === 1 ? 0 : Math.min(maxRestartBackoffMs, restartBackoffMs * 2 ** (next - 2))
  return { streak: next, backoffMs }
}

/** A route that buffers whole bodies (/bad, then /upload-buffer) if one was in flight, else the latest; or null. */
export function likelyCulprit (inFlight, routes) {
  for (const buffering of BUFFERING_ROUTES) if (inFlight[buffering]) return buffering
  return routes[routes.length - 1] ?? null
}

/** One line about a crash: "worker 123 killed: RSS 270.4 MiB passed the 256 MiB budget while POST /bad ...". */
export function describeCrash (crash) {
  const during = crash.route === null ? 'with no ingest or upload request in flight' : `while POST /${crash.route} was in flight`
  const who = `worker ${crash.pid}`
  if (crash.reason === 'memory-limit') {
    return `${who} killed: RSS ${formatMemory(crash.rss)} passed the ${formatMemory(crash.budget)} budget ${during}`
  }
  if (crash.reason === 'signal') return `${who} died of ${crash.signal} ${during}`
  return `${who} exited with code ${crash.exitCode} ${during}`
}
