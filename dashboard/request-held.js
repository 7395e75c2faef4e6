/** What each ingest request holds, by stage, for the per-request bars; bounded (README.md). */
import { INGEST_STAGES } from '../lib/ingest/stage-names.js'

const MAX_BARS = 8
const MAX_FINISHED = 8
const FINISHED_PER_ROUTE = 2 // ended requests kept per route: /good's many must not push /bad's peak off the chart
/** Phrases kept per request, and characters per phrase: a tooltip, not a document. */
const MAX_UNREAD = 6
const MAX_PHRASE = 160

/** The in-flight and recently ended requests' held bytes. */
export class RequestHeld {
  constructor (settings = {}) {
    this.maxBars = settings.maxBars ?? MAX_BARS
    this.maxFinished = settings.maxFinished ?? MAX_FINISHED
    this.perRoute = settings.perRoute ?? FINISHED_PER_ROUTE
    this.inFlight = new Map() // in flight, by id, as the latest sample had them
    this.finished = [] // ended, newest first
    this.hidden = 0 // in flight but not drawn: more than `maxBars`, or left out of the sample by the server
  }

  /** A sample's `requests`, in flight now (one missing has ended or was lost); `omitted`: those the server left out. */
  onSample (requests, time, omitted) {
    this.inFlight.clear()
    const left = Number.isSafeInteger(omitted?.count) && omitted.count > 0 ? omitted.count : 0
    this.hidden = left
    if (!Array.isArray(requests)) return
    const live = []
    for (const entry of requests) {
      const bar = readBar(entry, time, false)
      if (bar === null) continue
      // a sample taken before the end event, delivered after it (a replay): the peak is known already
      if (this.finished.some(function sameRequest (f) { return f.id === bar.id && f.route === bar.route })) continue
      live.push(bar)
    }
    live.sort(function byId (a, b) { return a.id - b.id })
    this.hidden = left + Math.max(0, live.length - this.maxBars)
    for (const bar of live.slice(0, this.maxBars)) this.inFlight.set(bar.id, bar)
  }

  /** A `request` event; an end that says what the request held at its peak becomes a faded "peak" bar. */
  onRequest (event) {
    if (event === null || typeof event !== 'object' || event.phase !== 'end') return
    const live = this.inFlight.get(event.id)
    this.inFlight.delete(event.id)
    const bar = readBar({ ...event, unread: event.unread ?? live?.unread }, event.time, true)
    if (bar === null) return
    if (Number.isFinite(event.heldPeak)) bar.total = event.heldPeak
    this.finished.unshift(bar)
    const perRoute = new Map()
    const perRouteCap = this.perRoute
    this.finished = this.finished.filter(function latestOfRoute (f) {
      const n = (perRoute.get(f.route) ?? 0) + 1
      perRoute.set(f.route, n)
      return n <= perRouteCap
    }).slice(0, this.maxFinished)
  }

  /** The server restarted: what was in flight will never end. */
  serverRestarted () {
    this.inFlight.clear()
    this.hidden = 0
  }

  trim (from) {
    this.finished = this.finished.filter(function inWindow (bar) { return bar.time >= from })
  }

  /** The bars to draw, at most `maxBars`: those in flight by id, then the ended ones, newest first. */
  bars () {
    return [...this.inFlight.values(), ...this.finished].slice(0, this.maxBars)
  }
}

/** A request entry (a sample's or an end event's) as a bar, or null when it holds nothing readable. */
function readBar (entry, time, peak) {
  if (entry === null || typeof entry !== 'object') return null
  if (!Number.isFinite(entry.id) || typeof entry.route !== 'string') return null
  const held = byStage(entry.held)
  if (held === null) return null
  let total = 0
  for (const bytes of Object.values(held)) total += bytes
  const phrases = Array.isArray(entry.unread) ? entry.unread.filter(function isText (p) { return typeof p === 'string' }) : []
  const unread = phrases.slice(0, MAX_UNREAD).map(function cut (p) { return p.slice(0, MAX_PHRASE) })
  return { id: entry.id, route: entry.route.slice(0, 40), held, bounds: byStage(entry.bounds) ?? {}, unread, total, peak, time }
}

/** `{ stage: bytes }` with the known stages only, in stage order; null when not an object. */
function byStage (value) {
  if (value === null || typeof value !== 'object') return null
  const out = {}
  for (const stage of INGEST_STAGES) {
    if (Object.hasOwn(value, stage) && Number.isFinite(value[stage]) && value[stage] >= 0) out[stage] = value[stage]
  }
  return out
}
