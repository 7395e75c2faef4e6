/** What the charts mark on top of the lines (requests, peak resets, crashes), bounded like the series. */
import { GcLog } from './gc-marks.js'

const MARK_CAP = 2000
const MAX_ROUTES = 16

/** Requests, peak resets and crashes, by server time. */
export class MarkLog {
  constructor (settings = {}) {
    this.cap = settings.cap ?? MARK_CAP
    this.requests = [] // `{ id, route, start, end, status, errorType }`, oldest first (end, status and errorType null until it ends)
    this.open = new Map() // requests started and not yet ended, by id
    this.peakResets = []
    this.crashes = []
    this.gc = new GcLog() // garbage collections, drawn on the memory chart
    /** starts seen per route since the page opened (the four ingest routes always listed) */
    this.seen = { bad: 0, good: 0, 'express-json': 0, 'streamparser-json': 0 }
  }

  onRequest (event) {
    if (event === null || typeof event !== 'object' || !Number.isFinite(event.time)) return
    if (event.phase === 'start') {
      // ids restart with the server: a start under an id still open means the old one never ended for us
      this.#lose(event.id)
      const mark = { id: event.id, route: event.route, start: event.time, end: null, status: null, errorType: null }
      this.requests.push(mark)
      this.open.set(event.id, mark)
      if (typeof event.route === 'string') {
        // a few routes at most; a key per route, not per request
        if (Object.hasOwn(this.seen, event.route)) this.seen[event.route]++
        else if (Object.keys(this.seen).length < MAX_ROUTES) this.seen[event.route] = 1
      }
      this.#cap(this.requests)
    } else if (event.phase === 'end') {
      let mark = this.open.get(event.id)
      if (mark === undefined) {
        // it started before this page connected: its duration says where
        const ms = Number.isFinite(event.ms) ? event.ms : 0
        mark = { id: event.id, route: event.route, start: event.time - ms, end: null, status: null, errorType: null }
        this.#insertByStart(mark)
      }
      this.open.delete(event.id)
      mark.end = event.time
      mark.status = event.status ?? null
      mark.errorType = event.errorType ?? null
    }
  }

  /** A `peak` event: only resets are marked, and not those the lab made for its own measurement (`by: 'lab'`). */
  onPeak (event) {
    if (event?.reset !== true || event.by === 'lab' || !Number.isFinite(event.time)) return
    this.peakResets.push(event.time)
    this.#cap(this.peakResets)
  }

  onCrash (event) {
    const time = Number.isFinite(event?.time) ? event.time : Date.now()
    this.crashes.push({ time, reason: String(event?.reason ?? 'unknown'), route: event?.route ?? null })
    this.#cap(this.crashes)
  }

  /** The server restarted: what was in flight will never end. */
  serverRestarted () {
    for (const id of [...this.open.keys()]) this.#lose(id)
  }

  /** Forget what ended before `from` (ms). Open requests stay: they still run, however long ago they started. */
  trim (from) {
    let drop = 0
    // ordered by start, so stop at the first one still needed
    while (drop < this.requests.length) {
      const mark = this.requests[drop]
      if (mark.end === null || mark.end >= from) break
      drop++
    }
    if (drop > 0) this.requests.splice(0, drop)
    dropBefore(this.peakResets, from, function resetTime (t) { return t })
    dropBefore(this.crashes, from, function crashTime (c) { return c.time })
    this.gc.trim(from)
  }

  /** Marks kept now, for the debug object. */
  counts () {
    return {
      requests: this.requests.length,
      open: this.open.size,
      peakResets: this.peakResets.length,
      crashes: this.crashes.length,
      gc: this.gc.counts()
    }
  }

  #lose (id) {
    const mark = this.open.get(id)
    if (mark === undefined) return
    this.open.delete(id)
    mark.end = mark.start
    mark.errorType = 'lost'
  }

  #insertByStart (mark) {
    let at = this.requests.length
    while (at > 0 && this.requests[at - 1].start > mark.start) at--
    this.requests.splice(at, 0, mark)
    this.#cap(this.requests)
  }

  #cap (list) {
    if (list.length <= this.cap) return
    const gone = list.splice(0, list.length - this.cap)
    if (list !== this.requests) return
    for (const mark of gone) {
      if (this.open.get(mark.id) === mark) this.open.delete(mark.id)
    }
  }
}

function dropBefore (list, from, timeOf) {
  let drop = 0
  while (drop < list.length && timeOf(list[drop]) < from) drop++
  if (drop > 0) list.splice(0, drop)
}
