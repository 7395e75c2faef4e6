/**
 * One recorder's table of sampled allocations by site, for the allocators wrapped in JavaScript (buffers.js, strings.js): a
 * countdown of bytes drawn from an exponential law, as V8 samples its heap, so an allocation of s bytes is sampled with
 * probability 1 - exp(-s / interval) and stands for s / that probability bytes. With `held`, a sample stays held until the object
 * given with it is collected; without, what a site holds is not known (null).
 */
import { siteKey } from './site.js'

/** Sites a table keeps apart; past it, the rest share one. */
const MOST_SITES = 2000
const OTHER_SITES = Object.freeze({ functionName: '(other sites)', file: null, line: null, column: null })

export class SiteTable {
  #interval
  #kind
  #held
  #countdown = 0
  #sites = new Map()
  #registry = null
  #totals = null
  #peakHeld = 0
  /** Held counts the samples taken since the last `newEpoch()` only (a route's start: alloc-sites.js). */
  #epoch = 0

  constructor (intervalBytes, { kind, held }) {
    this.#interval = intervalBytes
    this.#kind = kind
    this.#held = held
    this.reset()
  }

  /** Every figure from nothing, and the held samples' finalizations with them. */
  reset () {
    this.#sites = new Map()
    this.#peakHeld = 0
    this.#totals = { allocatedBytes: 0, heldBytes: this.#held ? 0 : null, samples: 0 }
    this.#countdown = nextCountdown(this.#interval)
    const table = this
    this.#registry = this.#held ? new FinalizationRegistry(function releaseHeld (entry) { table.#release(entry) }) : null
  }

  /** Forget the pending finalizations: the table is done. */
  close () {
    this.#registry = null
  }

  /** Bytes of this allocation count down to the next sample; a true return asks for its site. */
  count (bytes) {
    this.#countdown -= bytes
    return this.#countdown <= 0
  }

  /**
   * Charge a sampled allocation of `bytes` to `site`, held (when the table tracks it) until `holder` is collected; `kind`, where
   * it is not the table's (strings.js: a text parsed).
   */
  record (site, bytes, holder, kind = this.#kind) {
    this.#countdown = nextCountdown(this.#interval)
    const weight = bytes / -Math.expm1(-bytes / this.#interval)
    const entry = this.#siteFor(site, kind)
    entry.allocatedBytes += weight
    entry.samples++
    this.#totals.allocatedBytes += weight
    this.#totals.samples++
    if (this.#registry === null || holder === null || typeof holder !== 'object') return
    entry.heldBytes += weight
    this.#totals.heldBytes += weight
    this.#registry.register(holder, { entry, weight, epoch: this.#epoch })
  }

  /**
   * From now on a site holds only what it allocates from now on: the samples taken before are forgotten by held (what a route
   * holds is what it allocated, never what the one before left).
   */
  newEpoch () {
    if (!this.#held) return
    this.#epoch++
    for (const entry of this.#sites.values()) {
      entry.heldBytes = 0
      entry.peakHeld = 0
    }
    this.#totals.heldBytes = 0
    this.#peakHeld = 0
  }

  #siteFor (site, kind) {
    const key = siteKey(site, kind)
    let entry = this.#sites.get(key)
    if (entry === undefined) {
      if (this.#sites.size >= MOST_SITES) return this.#siteFor(OTHER_SITES, kind)
      entry = { ...site, kind, allocatedBytes: 0, heldBytes: this.#held ? 0 : null, samples: 0, peakHeld: 0 }
      this.#sites.set(key, entry)
    }
    return entry
  }

  #release ({ entry, weight, epoch }) {
    if (epoch !== this.#epoch) return
    entry.heldBytes -= weight
    this.#totals.heldBytes -= weight
  }

  /** Each site's held now, kept where it is the most since the last window (a request's peak). */
  notePeak () {
    if (!this.#held) return
    for (const entry of this.#sites.values()) entry.peakHeld = Math.max(entry.peakHeld, entry.heldBytes)
    this.#peakHeld = Math.max(this.#peakHeld, this.#totals.heldBytes)
  }

  /**
   * The sites since the last window: what each allocated in it, what each holds now (or held at a `notePeak`, when that was
   * more); a site that holds nothing and allocated nothing leaves the table.
   */
  window () {
    const sites = []
    for (const [key, entry] of this.#sites) {
      // what is left of a float's sums once everything it added has been taken away
      if (entry.heldBytes !== null && entry.heldBytes < 1) entry.heldBytes = 0
      const { peakHeld, ...site } = entry
      if (site.heldBytes !== null) site.heldBytes = Math.max(site.heldBytes, peakHeld)
      if (site.allocatedBytes > 0 || site.heldBytes > 0) sites.push(site)
      if (!(entry.heldBytes > 0)) this.#sites.delete(key)
      entry.allocatedBytes = 0
      entry.samples = 0
      entry.peakHeld = 0
    }
    const held = this.#totals.heldBytes === null ? null : Math.max(0, this.#totals.heldBytes, this.#peakHeld)
    this.#peakHeld = 0
    const totals = { ...this.#totals, heldBytes: held }
    this.#totals.allocatedBytes = 0
    this.#totals.samples = 0
    return { sites, totals }
  }
}

/** Bytes to the next sample: exponential, of mean `interval`. */
function nextCountdown (interval) {
  return -Math.log(1 - Math.random()) * interval
}

/**
 * A recorder of one kind of allocation by site, from `start()` to `stop()`, for a module that wraps the calls making it
 * (buffers.js, strings.js): the module keeps its thread's recorders in `recorders`, and the calls stay wrapped while any of them
 * records.
 */
export class WrappingRecorder {
  #table
  #prefer
  #module

  constructor (intervalBytes, prefer, { kind, held, recorders, wrap, unwrap }) {
    this.#table = new SiteTable(intervalBytes, { kind, held })
    this.#prefer = prefer
    this.#module = { recorders, wrap, unwrap }
  }

  get prefer () {
    return this.#prefer
  }

  start () {
    const { recorders, wrap } = this.#module
    if (recorders.has(this)) return
    this.#table.reset()
    recorders.add(this)
    if (recorders.size === 1) wrap()
  }

  stop () {
    const { recorders, unwrap } = this.#module
    if (!recorders.delete(this)) return
    // its pending finalizations go with it
    this.#table.close()
    if (recorders.size === 0) unwrap()
  }

  count (bytes) {
    return this.#table.count(bytes)
  }

  record (site, bytes, holder = null, kind = undefined) {
    this.#table.record(site, bytes, holder, kind)
  }

  notePeak () {
    this.#table.notePeak()
  }

  window () {
    return this.#table.window()
  }

  newEpoch () {
    this.#table.newEpoch()
  }
}
