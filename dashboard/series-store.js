/** The points the charts draw, in bounded rings (README.md). */

const HARD_CAP = 6000 // points per series, whatever the window and the sample rate
const MAX_KEYS = 64 // series per store, whatever the server names

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

/** Series with a shared x (the sample's time, ms) that forget what falls out of the window. */
export class SeriesStore {
  #notes
  constructor (keys, settings) {
    this.keys = []
    this.hardCap = settings.hardCap ?? HARD_CAP
    this.maxKeys = settings.maxKeys ?? MAX_KEYS
    this.windowMs = settings.windowMs
    this.intervalMs = settings.intervalMs
    this.rings = new Map() // a Map: keys come from the server, and '__proto__' must stay a key
    this.#notes = new Ring(this.hardCap) // what each point carries besides its values (null for most), aligned with the rings
    for (const key of keys) this.addKey(key)
    this.outOfOrder = 0 // samples refused because they were older than the newest point
  }

  /** Add a series with a gap at every point kept so far; false past `maxKeys`. */
  addKey (key) {
    if (this.rings.has(key)) return true
    if (this.keys.length >= this.maxKeys) return false
    const ring = new Ring(this.hardCap)
    const count = this.keys.length === 0 ? 0 : this.length
    for (let i = 0; i < count; i++) ring.push({ x: this.#first.at(i).x, y: null })
    this.keys.push(key)
    this.rings.set(key, ring)
    return true
  }

  has (key) {
    return this.rings.has(key)
  }

  /** The most points a series keeps: the window at the sample rate, within the hard cap. */
  get maxPoints () {
    return Math.min(this.hardCap, Math.ceil(this.windowMs / this.intervalMs) + 1)
  }

  /** Points per series (they all have the same count). */
  get length () {
    return this.#first.size
  }

  get latest () {
    const first = this.#first
    return first.size === 0 ? null : first.at(first.size - 1).x
  }

  get oldest () {
    const first = this.#first
    return first.size === 0 ? null : first.at(0).x
  }

  get #first () {
    return this.rings.get(this.keys[0])
  }

  /** Add a point (time in ms) to every series, a gap where `values` has none; false when older than the newest point. */
  push (time, values, note = null) {
    const latest = this.latest
    // Chart.js draws with `normalized: true`, which trusts that x only grows
    if (latest !== null && time < latest) {
      this.outOfOrder++
      return false
    }
    const byMap = values instanceof Map
    for (const key of this.keys) {
      const y = byMap ? values.get(key) : Object.hasOwn(values, key) ? values[key] : undefined
      this.rings.get(key).push({ x: time, y: Number.isFinite(y) ? y : null })
    }
    this.#notes.push(note)
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
    for (const key of this.keys) this.rings.get(key).dropOldest(drop)
    this.#notes.dropOldest(drop)
  }

  /** Change the window (ms); a shorter one drops points at once. */
  setWindow (windowMs) {
    this.windowMs = windowMs
    this.trim()
  }

  clear () {
    for (const key of this.keys) this.rings.get(key).clear()
    this.#notes.clear()
  }

  /** A series as a new array of its points, oldest first (what a chart draws). */
  series (key) {
    return this.rings.get(key)?.toArray() ?? []
  }

  /** Each kept point's note, oldest first (null where it has none). */
  notes () {
    return this.#notes.toArray()
  }

  maxOf (key) {
    const ring = this.rings.get(key)
    if (ring === undefined) return null
    let max = null
    for (let i = 0; i < ring.size; i++) {
      const y = ring.at(i).y
      if (y !== null && (max === null || y > max)) max = y
    }
    return max
  }

  /** One row per point, oldest first (for exports): its time, its values by key and its note. */
  * rows () {
    const count = this.length
    for (let i = 0; i < count; i++) {
      const values = new Map()
      for (const key of this.keys) values.set(key, this.rings.get(key).at(i).y)
      yield { time: this.#first.at(i).x, values, note: this.#notes.at(i) }
    }
  }
}
