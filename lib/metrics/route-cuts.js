/**
 * When a new route's first request closes the allocation-site window (alloc-sites.js), so that a run taking its routes in turn
 * gets windows of one route each: fed the bus's `request` events, told when each window closes. A cut that comes too soon after a
 * window, or while one is being collected, is put off: the next window starts the epoch instead.
 */

/**
 * A new route closes the window only this long after the last one: a window given to a stream at 100 ms is drawn before the next
 * replaces it, and a load of several routes at once does not close one per request.
 */
export const ROUTE_CUT_MS = 250
/** Requests in flight followed: more than any load the lab admits. */
const MAX_IN_FLIGHT = 10_000

export class RouteCuts {
  /** request id -> route, in flight */
  #inFlight = new Map()
  /** routes with a request since the last window */
  #routesSince = new Set()
  #lastWindowAt = 0
  #epochDue = false

  /**
   * A bus `request` event, with whether sites are sampled (`active`) and a window is being collected: the time to close the
   * window at (a new route's first request's start), or null for none now.
   */
  onRequest (event, { active, collecting }) {
    if (typeof event?.route !== 'string' || (typeof event.id !== 'number' && typeof event.id !== 'string')) return null
    // an experiment's warm-up is no route's upload: the record and the page leave it out (lib/runs/sites.js)
    if (event.warmUp === true) return null
    if (event.phase === 'end') {
      this.#inFlight.delete(event.id)
      return null
    }
    if (event.phase !== 'start') return null
    // the first request after none is fresh too: the window before it was nobody's
    const fresh = !this.#routesSince.has(event.route)
    this.#inFlight.set(event.id, event.route)
    if (this.#inFlight.size > MAX_IN_FLIGHT) this.#inFlight.delete(this.#inFlight.keys().next().value)
    this.#routesSince.add(event.route)
    const at = Number.isFinite(event.time) ? event.time : Date.now()
    if (!fresh || !active) return null
    if (at - this.#lastWindowAt < ROUTE_CUT_MS || collecting) {
      this.#epochDue = true
      return null
    }
    return at
  }

  /** A window closed (or sampling started) at `at`: the routes in flight are the next window's; whether a cut was put off. */
  closed (at) {
    const due = this.#epochDue
    this.#epochDue = false
    this.#lastWindowAt = at
    this.#routesSince = new Set(this.#inFlight.values())
    return due
  }
}
