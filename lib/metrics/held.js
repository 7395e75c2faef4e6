/**
 * What each ingest request in flight holds, stage by stage: the ledger behind every sample's `requests` and the dashboard's
 * per-request bars (docs/metrics.md, "Where the bytes are"). More: README.md, "held.js".
 */

/** Stage readers and figures of one request. */
export class Holding {
  #readers = new Map()
  #fixed = new Map()
  #order
  #ledger
  #closed = false
  /** The stage bytes when their sum was highest so far, and that sum. */
  peak = { held: {}, total: 0 }

  #onPeak

  constructor (ledger, id, route, order, onPeak) {
    this.#ledger = ledger
    this.#onPeak = onPeak
    this.#order = order
    this.id = id
    this.route = route
    /** the most each bounded stage may hold, and what the route holds that no reader can see */
    this.bounds = {}
    this.unread = []
  }

  /** Read a stage's bytes with `reader` at each sample, until `set` or `release` replaces it; `bound`: the most it may hold. */
  watch (stage, reader, bound) {
    this.#fixed.delete(stage)
    this.#readers.set(stage, reader)
    if (bound !== undefined) this.bounds[stage] = bound
    return this
  }

  /**
   * The stage holds `bytes` now, and until told otherwise (a Buffer or string kept whole). The peak is checked here too: a
   * synchronous stage is never seen by a sample. A raised peak calls the peak listeners before this returns: while sites are
   * sampled, that reads V8's heap profile (lib/allocation/heap.js), a full collection on this request's time.
   */
  set (stage, bytes) {
    this.#readers.delete(stage)
    this.#fixed.set(stage, bytes)
    if (!this.#closed && this.#notePeak(this.#readFixedOnly())) this.#onPeak(this)
    return this
  }

  release (stage) {
    this.#readers.delete(stage)
    this.#fixed.delete(stage)
    return this
  }

  /** What each stage holds now, in stage order; checks the peak. */
  read () {
    const held = {}
    for (const stage of this.#order) {
      const reader = this.#readers.get(stage)
      if (reader !== undefined) held[stage] = readSafely(reader)
      else if (this.#fixed.has(stage)) held[stage] = this.#fixed.get(stage)
    }
    this.#notePeak(held)
    return held
  }

  /** The stages set whole, without running a reader: a stage still streaming counts nothing here. */
  #readFixedOnly () {
    const held = {}
    for (const stage of this.#order) {
      if (this.#fixed.has(stage)) held[stage] = this.#fixed.get(stage)
    }
    return held
  }

  /** Whether `held` is the highest sum so far: it is kept as the peak. */
  #notePeak (held) {
    let total = 0
    for (const stage in held) total += held[stage]
    if (total <= this.peak.total) return false
    this.peak = { held, total }
    return true
  }

  /** The request is over: it leaves the ledger, its peak stays readable here. */
  close () {
    if (this.#closed) return
    this.#closed = true
    this.#ledger.delete(this.id)
  }
}

/** The ledger of one app: every ingest request in flight and its holding; `stages` in order (INGEST_STAGES). */
export function createHeldLedger (stages) {
  return new HeldLedger(stages)
}

export class HeldLedger {
  #holdings = new Map()
  #stages
  #peakListeners = new Set()

  constructor (stages) {
    if (!Array.isArray(stages) || stages.length === 0) throw new TypeError('stages must be a list of stage names')
    this.#stages = Object.freeze([...stages])
  }

  get stages () {
    return this.#stages
  }

  get size () {
    return this.#holdings.size
  }

  /** A holding for a request (its bus events' `id`) that starts now; `close()` it when the request ends. */
  open (id, route) {
    const listeners = this.#peakListeners
    const holding = new Holding(this.#holdings, id, route, this.#stages, function tellPeak (raised) {
      for (const listener of listeners) listener(raised)
    })
    this.#holdings.set(id, holding)
    return holding
  }

  /**
   * Call `listener(holding)` whenever a stage's `set` raises a request's peak, synchronously (its whole Buffer or string is alive
   * then), until the returned function is called.
   */
  onPeak (listener) {
    const listeners = this.#peakListeners
    listeners.add(listener)
    return function stopListening () { listeners.delete(listener) }
  }

  /**
   * The requests in flight that hold the most, and what their stages hold now: `{ requests: [{ id, route, held, bounds, unread
   * }], omitted: { count, bytes } }`, at most `most` of them, largest first; the rest are counted in `omitted`, so that a sample
   * stays small however many requests are in flight (each sample is kept in the /metrics history). Runs the readers: call it when
   * a sample is taken, not otherwise.
   */
  read (most = MOST_REQUESTS) {
    const all = []
    for (const holding of this.#holdings.values()) {
      const held = holding.read()
      let bytes = 0
      for (const stage in held) bytes += held[stage]
      all.push({ bytes, entry: { id: holding.id, route: holding.route, held, bounds: holding.bounds, unread: holding.unread } })
    }
    if (all.length > most) all.sort(function largestFirst (a, b) { return b.bytes - a.bytes })
    const omitted = { count: 0, bytes: 0 }
    for (const left of all.slice(most)) {
      omitted.count++
      omitted.bytes += left.bytes
    }
    return { requests: all.slice(0, most).map(function entryOf (r) { return r.entry }), omitted }
  }
}

/**
 * A reader's figure, or 0 if it fails: a sample is taken on a timer, where a throw would end the process, and a stage torn down
 * between two samples is one that holds nothing.
 */
function readSafely (reader) {
  try {
    const bytes = reader()
    return Number.isFinite(bytes) && bytes > 0 ? bytes : 0
  } catch {
    return 0
  }
}

/** Requests a sample names one by one; the dashboard draws fewer bars than this. */
const MOST_REQUESTS = 16

/**
 * Bytes buffered in streams right now: each one's readable and writable sides (a Transform has both). What `pipeline` holds
 * between its pieces. A pass-through's chunk that waits for room on its readable side is in both (each side keeps a reference):
 * counted twice, one chunk at most.
 */
export function bufferedIn (...streams) {
  let bytes = 0
  for (const stream of streams) {
    if (stream == null) continue
    bytes += (stream.readableLength ?? 0) + (stream.writableLength ?? 0)
  }
  return bytes
}

/**
 * The most those streams may buffer: each side's high-water mark, and one chunk past it on each (a stream takes the write or push
 * that crosses its mark, then says stop); `chunk`: the largest that reaches them.
 */
export function boundOf (chunk, ...streams) {
  let bytes = 0
  for (const stream of streams) {
    if (stream.readableHighWaterMark !== undefined) bytes += stream.readableHighWaterMark + chunk
    if (stream.writableHighWaterMark !== undefined) bytes += stream.writableHighWaterMark + chunk
  }
  return bytes
}
