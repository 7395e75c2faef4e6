/**
 * The points the charts draw, kept bounded. A class leaves the page open
 * for a whole lesson at 10 samples a second: every series holds at most
 * the rolling window's worth of points, and never more than a hard cap,
 * whatever the sample rate. Each series is a ring of `{ x, y }` points (as
 * Chart.js reads them with `parsing: false`), so adding a point at the cap
 * costs the same as below it: no array is shifted per sample.
 */

/** Points per series, whatever the window and the sample rate. */
const HARD_CAP = 6000

/** A fixed-capacity ring, oldest first. */
class Ring {
  constructor (capacity) {
    this.items = new Array(capacity)
    this.start = 0
    this.size = 0
  }

  push (item) {
    const capacity = this.items.length
    if (this.size === capacity) {
      this.items[this.start] = item
      this.start = (this.start + 1) % capacity
    } else {
      this.items[(this.start + this.size) % capacity] = item
      this.size++
    }
  }

  at (i) {
    return this.items[(this.start + i) % this.items.length]
  }

  dropOldest (count) {
    const n = Math.min(count, this.size)
    // let go of the points, not only of the indexes
    for (let i = 0; i < n; i++) this.items[(this.start + i) % this.items.length] = undefined
    this.start = (this.start + n) % this.items.length
    this.size -= n
  }

  clear () {
    this.items.fill(undefined)
    this.start = 0
    this.size = 0
  }

  toArray () {
    const out = new Array(this.size)
    for (let i = 0; i < this.size; i++) out[i] = this.at(i)
    return out
  }
}

/**
 * Series with a shared x (the sample's time, ms) that forget what falls
 * out of the window.
 */
export class SeriesStore {
  /**
   * @param {string[]} keys one series per key
   * @param {{ windowMs: number, intervalMs: number, hardCap?: number }} settings
   */
  constructor (keys, settings) {
    this.keys = Object.freeze([...keys])
    this.hardCap = settings.hardCap ?? HARD_CAP
    this.windowMs = settings.windowMs
    this.intervalMs = settings.intervalMs
    /** @type {Record<string, Ring>} */
    this.rings = {}
    for (const key of this.keys) this.rings[key] = new Ring(this.hardCap)
    /** Samples refused because they were older than the newest point. */
    this.outOfOrder = 0
  }

  /** The most points a series keeps: the window at the sample rate, within the hard cap. */
  get maxPoints () {
    return Math.min(this.hardCap, Math.ceil(this.windowMs / this.intervalMs) + 1)
  }

  /** Points per series (they all have the same count). */
  get length () {
    return this.#first.size
  }

  /** Time of the newest point, or null. */
  get latest () {
    const first = this.#first
    return first.size === 0 ? null : first.at(first.size - 1).x
  }

  /** Time of the oldest point, or null. */
  get oldest () {
    const first = this.#first
    return first.size === 0 ? null : first.at(0).x
  }

  get #first () {
    return this.rings[this.keys[0]]
  }

  /**
   * Add one point to every series; a series missing from `values` gets a gap.
   * @param {number} time ms since the epoch
   * @param {Record<string, number | null>} values
   * @returns {boolean} false when refused (older than the newest point)
   */
  push (time, values) {
    const latest = this.latest
    // Chart.js draws with `normalized: true`, which trusts that x only grows
    if (latest !== null && time < latest) {
      this.outOfOrder++
      return false
    }
    for (const key of this.keys) {
      const y = values[key]
      this.rings[key].push({ x: time, y: Number.isFinite(y) ? y : null })
    }
    this.trim()
    return true
  }

  /** Drop what is older than the window, then what passes the point cap. */
  trim () {
    const first = this.#first
    if (first.size === 0) return
    const cutoff = first.at(first.size - 1).x - this.windowMs
    let drop = 0
    while (drop < first.size && first.at(drop).x < cutoff) drop++
    drop = Math.max(drop, first.size - this.maxPoints)
    if (drop <= 0) return
    for (const key of this.keys) this.rings[key].dropOldest(drop)
  }

  /** Change the window (ms); a shorter one drops points at once. */
  setWindow (windowMs) {
    this.windowMs = windowMs
    this.trim()
  }

  /** Forget every point. */
  clear () {
    for (const key of this.keys) this.rings[key].clear()
  }

  /**
   * A series as a new array of its points, oldest first (what a chart draws).
   * @param {string} key
   * @returns {Array<{ x: number, y: number | null }>}
   */
  series (key) {
    return this.rings[key].toArray()
  }

  /**
   * The largest value of a series in the window, or null.
   * @param {string} key
   */
  maxOf (key) {
    const ring = this.rings[key]
    let max = null
    for (let i = 0; i < ring.size; i++) {
      const y = ring.at(i).y
      if (y !== null && (max === null || y > max)) max = y
    }
    return max
  }

  /**
   * One row per point: `{ time, [key]: y }`, oldest first (for exports).
   * @returns {Generator<Record<string, number | null>>}
   */
  * rows () {
    const count = this.length
    for (let i = 0; i < count; i++) {
      const row = { time: this.#first.at(i).x }
      for (const key of this.keys) row[key] = this.rings[key].at(i).y
      yield row
    }
  }
}
