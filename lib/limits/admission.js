// Admission within the memory budget: a route that holds a whole body projects it and reserves it here
// before it allocates; 413 for what can never fit, 503 with Retry-After for what fits later. The rule: README.md.
import { labCollector } from '../util/lab-gc.js'
import { budgetExceeded, memoryBusy } from '../errors/index.js'

/** Budget fraction admitted requests may fill together. */
const ADMISSION_SAFETY = 0.9
/** Seconds a client told "busy" is asked to wait. */
const RETRY_AFTER_SECONDS = 2

/** One admission per app. budget: bytes, 0 for none; collect: a full GC (default: V8's, where it can be had). */
export function createAdmission (options) {
  return new MemoryAdmission(options)
}

function readProcessRss () {
  return process.memoryUsage.rss()
}

/** Fewest ms between two collections asked for by admission: a full GC of a large heap is not free. */
const COLLECT_EVERY_MS = 1000
/** Growth of Buffer memory that has a streaming request's garbage collected, and how often it is looked at. */
const GARBAGE_PACE = 4 * 1024 * 1024
const PACE_EVERY_MS = 10
/** How long the Buffers a scavenge found take to be freed (V8 sweeps them on a helper thread). */
const SWEEP_MS = 30

/** See the module comment. */
export class MemoryAdmission {
  constructor ({ budget, safety = ADMISSION_SAFETY, readRss = readProcessRss, collect = undefined }) {
    if (!Number.isSafeInteger(budget) || budget < 0) throw new TypeError(`memory budget must be a whole number of bytes, got ${budget}`)
    if (!(safety > 0 && safety <= 1)) throw new TypeError(`admission safety must be in (0, 1], got ${safety}`)
    this.budget = budget
    this.ceiling = Math.floor(budget * safety)
    this.readRss = readRss
    /** RSS of the process before any request: what it holds when idle. */
    this.idleRss = readRss()
    this.reserved = 0
    this.reservations = 0
    // after a large /bad the RSS stays high with garbage until V8 next collects, and "busy" must
    // not mean "garbage nobody collected": without a collector, admission only waits
    this.collect = collect === undefined ? labCollector() : collect
    this.lastCollect = 0
    this.watchers = 0
    this.garbageTimer = null
    this.garbageFloor = null
    /** When the pace last asked for a scavenge (0: not since the garbage was last under the pace). */
    this.scavengedAt = 0
    this.closed = false
  }

  /**
   * While anyone streams, collect the chunks' garbage once Buffer memory grew GARBAGE_PACE: a scavenge first,
   * a full collection only when that did not bring it down (why: README.md). Returns the call to stop watching.
   */
  watchGarbage () {
    if (this.collect === null || this.closed) return function nothingWatched () {}
    const admission = this
    if (this.watchers++ === 0) {
      // the floor stays from the last watch (the first tick lowers it if the buffers fell since):
      // reading it costs a read of /proc, and a request of a small body may start every millisecond
      if (this.garbageFloor === null) this.garbageFloor = process.memoryUsage().arrayBuffers
      this.garbageTimer = setInterval(function paceGarbage () {
        const buffers = process.memoryUsage().arrayBuffers
        if (buffers < admission.garbageFloor) admission.garbageFloor = buffers
        if (buffers - admission.garbageFloor < GARBAGE_PACE) {
          admission.scavengedAt = 0
          return
        }
        const now = Date.now()
        if (admission.scavengedAt === 0) {
          // chunks die young: a scavenge finds them, and V8 frees them just after on another thread
          admission.collect({ type: 'minor' })
          admission.scavengedAt = now
          return
        }
        if (now - admission.scavengedAt < SWEEP_MS) return
        // the scavenge did not bring it down: the garbage is older, collect it all
        admission.collect()
        admission.scavengedAt = 0
        admission.garbageFloor = process.memoryUsage().arrayBuffers
      }, PACE_EVERY_MS)
      this.garbageTimer.unref()
    }
    let done = false
    return function stopWatching () {
      if (done) return
      done = true
      if (admission.closed) return
      if (--admission.watchers === 0) {
        clearInterval(admission.garbageTimer)
        admission.garbageTimer = null
      }
    }
  }

  /** A full collection now, where one can be had: an idle lab may not collect for minutes. */
  collectNow () {
    if (this.collect === null || this.closed) return false
    this.lastCollect = Date.now()
    this.collect()
    return true
  }

  /** Stop pacing the garbage (the app's `close()`): watches still held end here. Safe to call twice. */
  close () {
    this.closed = true
    clearInterval(this.garbageTimer)
    this.garbageTimer = null
    this.watchers = 0
  }

  get enabled () {
    return this.budget > 0
  }

  /** What one request could ever be given: the ceiling less the idle process. */
  get mostForOne () {
    return Math.max(0, this.ceiling - this.idleRss)
  }

  /** Memory held now, as admission sees it. */
  committed () {
    return Math.max(this.readRss(), this.idleRss + this.reserved)
  }

  /** What a new reservation could get right now. */
  available () {
    return Math.max(0, this.ceiling - this.committed())
  }

  /** The refusal of `more` bytes on top of `held` already reserved by the same request, or null. */
  check (more, held, route, what) {
    if (!this.enabled || more <= 0) return null
    const projected = held + more
    if (projected > this.mostForOne) {
      return budgetExceeded({ route, budget: this.budget, projected, available: this.mostForOne, what })
    }
    // the request's own reservation is part of what is committed: it does not compete with itself
    let free = this.ceiling - this.committed()
    if (more > free && this.collect !== null && Date.now() - this.lastCollect >= COLLECT_EVERY_MS) {
      // garbage counts in the RSS until collected: collect, then look again
      this.lastCollect = Date.now()
      this.collect()
      free = this.ceiling - this.committed()
    }
    return more > free ? this.refusal(more, held, free, route, what) : null
  }

  /** 413 when nobody else holds a reservation (waiting would not help), else 503, to try again. */
  refusal (more, held, free, route, what) {
    const figures = { route, budget: this.budget, projected: held + more, available: Math.max(0, free + held), what }
    return this.reserved - held === 0 ? budgetExceeded(figures) : memoryBusy({ ...figures, retryAfter: RETRY_AFTER_SECONDS })
  }

  /** Reserve the projection for one request (`who` names it in messages); throws 413 or 503. */
  reserve (bytes, { route, what }) {
    const reservation = new Reservation(this, route, what)
    reservation.grow(bytes)
    this.reservations++
    return reservation
  }

  /** Count bytes another budget already bounds (the streaming decoders) as held; no refusal here. */
  count (bytes) {
    if (this.enabled) this.reserved += bytes
  }

  /** For /metrics and the tests. */
  state () {
    return { budget: this.budget, ceiling: this.ceiling, idleRss: this.idleRss, reserved: this.reserved, reservations: this.reservations }
  }
}

/** Bytes reserved by one request; grows as the request learns more, released once. */
export class Reservation {
  constructor (admission, route, what) {
    this.admission = admission
    this.route = route
    this.what = what
    this.bytes = 0
    this.released = false
  }

  /** Reserve `more` bytes on top of what is held; throws 413 or 503. */
  grow (more, what = this.what) {
    const refusal = this.tryGrow(more, what)
    if (refusal) throw refusal
  }

  /** As grow, but the refusal is returned, not thrown (for stream callbacks). */
  tryGrow (more, what = this.what) {
    if (this.released) return null
    const refusal = this.admission.check(more, this.bytes, this.route, what)
    if (refusal) return refusal
    if (more > 0) {
      this.bytes += more
      this.admission.reserved += more
    }
    return null
  }

  /** The refusal of bytes already met (zlib stopped at its cap): grow() would collect the very bytes that did not fit. */
  refuse (more, what = this.what) {
    const free = Math.min(more - 1, this.admission.ceiling - this.admission.committed())
    return this.admission.refusal(more, this.bytes, free, this.route, what)
  }

  /** How many more bytes this request could reserve right now. */
  room () {
    if (this.released || !this.admission.enabled) return Infinity
    return Math.max(0, Math.min(this.admission.mostForOne - this.bytes, this.admission.ceiling - this.admission.committed()))
  }

  /** Give back bytes the request no longer holds (never below zero). */
  shrink (less) {
    const amount = Math.min(less, this.bytes)
    this.bytes -= amount
    this.admission.reserved -= amount
  }

  release () {
    if (this.released) return
    this.released = true
    this.admission.reserved -= this.bytes
    this.admission.reservations--
    this.bytes = 0
  }
}
