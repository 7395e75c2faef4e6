/**
 * A run's timeline as it happens: the sampler's samples, the request spans from the bus's `request` events and the marks (peak
 * resets, the run's stages), kept within bounds so that neither a long run's record nor the lab's own heap while it records grows
 * with the run's length (docs/runs.md, "How big"; README.md, "timeline.js").
 */

import { readWindow } from '../allocation/site.js'
import { SITES_DEFAULTS, createRouteTracker, createSiteSummary, routesInWindow, thinWindows } from './sites.js'

export const TIMELINE_DEFAULTS = Object.freeze({
  /** Samples a record keeps. */
  maxSamples: 2400,
  /** Ingest requests in flight kept in each sample. */
  maxRequests: 8,
  /** Request spans a record keeps. */
  maxSpans: 2000,
  /** Marks a record keeps. */
  maxMarks: 500,
  /** Garbage collections a record keeps. */
  maxGcEvents: 2000,
  /** Allocation-site windows a record keeps. */
  maxSiteWindows: SITES_DEFAULTS.maxWindows
})

/** Members copied from a `request` event into its span: figures and short texts only. */
const SPAN_NUMBERS = Object.freeze(['status', 'ms', 'compressedBytes', 'inflatedBytes', 'items', 'heldPeak', 'peakRss'])

/**
 * Thin samples to at most `max`: time buckets between the first and the last, and in each the samples of the lowest RSS, the
 * highest RSS and the most heap used (one sample may be all three). The first and the last are kept. Works on samples and on `{
 * time, rss, heapUsed }` entries alike, in time order; `max` at least 5.
 */
export function thinSamples (samples, max) {
  if (samples.length <= max) return samples
  const buckets = Math.max(1, Math.floor((max - 2) / 3))
  const first = samples[0]
  const last = samples.at(-1)
  const width = Math.max(1, (last.time - first.time) / buckets)
  const keep = new Set([first, last])
  let bucket = null
  let low = null
  let high = null
  let heap = null
  function close () {
    if (low !== null) keep.add(low).add(high).add(heap)
  }
  for (const s of samples) {
    const k = Math.min(buckets - 1, Math.floor((s.time - first.time) / width))
    if (k !== bucket) {
      close()
      bucket = k
      low = high = heap = s
    }
    if (s.rss < low.rss) low = s
    if (s.rss > high.rss) high = s
    if ((s.heapUsed ?? -Infinity) > (heap.heapUsed ?? -Infinity)) heap = s
  }
  close()
  return samples.filter(function kept (s) { return keep.has(s) })
}

/**
 * Thin spans to at most `max`: each route's slowest and largest (by `heldPeak`), then evenly spaced ones from the rest, in the
 * order they started.
 */
export function thinSpans (spans, max) {
  if (spans.length <= max) return spans
  const keep = new Set()
  const byRoute = new Map()
  for (const span of spans) {
    const best = byRoute.get(span.route) ?? { slowest: span, largest: span }
    if ((span.ms ?? -1) > (best.slowest.ms ?? -1)) best.slowest = span
    if ((span.heldPeak ?? -1) > (best.largest.heldPeak ?? -1)) best.largest = span
    byRoute.set(span.route, best)
  }
  for (const { slowest, largest } of byRoute.values()) {
    if (keep.size < max) keep.add(slowest)
    if (keep.size < max) keep.add(largest)
  }
  const room = max - keep.size
  const step = spans.length / Math.max(1, room)
  for (let k = 0; k < room; k++) keep.add(spans[Math.floor(k * step)])
  return spans.filter(function kept (s) { return keep.has(s) })
}

/** Which collections a thinned record keeps first: mark-compacts, then the others, young ones last. */
function gcRank (event) {
  if (event.kind === 'mark-compact') return 0
  return event.kind === 'scavenge' || event.kind === 'minor-mark-sweep' ? 2 : 1
}

/**
 * Thin garbage collections to at most `max`: by rank (gcRank), all of a rank while they fit, evenly spaced ones of the rank that
 * does not; in time order.
 */
export function thinGcEvents (events, max) {
  if (events.length <= max) return events
  const keep = new Set()
  for (const rank of [0, 1, 2]) {
    const ofRank = events.filter(function sameRank (e) { return gcRank(e) === rank })
    const room = max - keep.size
    const step = ofRank.length / Math.max(1, room)
    if (ofRank.length <= room) for (const e of ofRank) keep.add(e)
    else for (let k = 0; k < room; k++) keep.add(ofRank[Math.floor(k * step)])
  }
  return events.filter(function kept (e) { return keep.has(e) })
}

function heldSum (request) {
  let sum = 0
  for (const n of Object.values(request?.held ?? {})) if (Number.isFinite(n)) sum += n
  return sum
}

/** A span's figures and texts from a bus event: only members of known kinds are copied. */
function spanFields (span, event) {
  for (const key of SPAN_NUMBERS) if (typeof event[key] === 'number' && Number.isFinite(event[key])) span[key] = event[key]
  if (typeof event.errorType === 'string') span.errorType = event.errorType.slice(0, 200)
  for (const key of ['held', 'bounds']) {
    if (event[key] !== null && typeof event[key] === 'object') {
      const figures = {}
      for (const [stage, n] of Object.entries(event[key])) if (typeof n === 'number' && Number.isFinite(n)) figures[stage] = n
      span[key] = figures
    }
  }
}

/** A timeline being recorded: `settings` are its `interval` and any of TIMELINE_DEFAULTS. */
export function createTimeline (settings) {
  const { interval } = settings
  const bounds = { ...TIMELINE_DEFAULTS }
  for (const key of Object.keys(TIMELINE_DEFAULTS)) {
    if (settings[key] === undefined) continue
    const least = key === 'maxSamples' ? 5 : 0
    if (!Number.isSafeInteger(settings[key]) || settings[key] < least) {
      throw new TypeError(`timeline option ${key} must be a whole number, got ${settings[key]}`)
    }
    bounds[key] = settings[key]
  }
  let samples = []
  let samplesSeen = 0
  let requestsCut = 0
  /** id -> span of a request in flight */
  const open = new Map()
  let spans = []
  let spansSeen = 0
  const marks = []
  let marksSeen = 0
  let gcEvents = []
  let gcSeen = 0
  const routes = createRouteTracker()
  const siteSummary = createSiteSummary()
  let siteWindows = []
  let siteWindowsSeen = 0

  return Object.freeze({
    /** A window of allocation sites, as the bus's `sites` event brings it (lib/metrics/alloc-sites.js). */
    addSiteWindow: function addSiteWindow (sites) {
      const window = readWindow(sites)
      if (window === null) return
      window.routes = routesInWindow(routes, window)
      siteWindowsSeen++
      siteSummary.add(window)
      siteWindows.push(window)
      if (siteWindows.length > bounds.maxSiteWindows * 1.25) siteWindows = thinWindows(siteWindows, bounds.maxSiteWindows)
    },
    addSample: function addSample (sample) {
      samplesSeen++
      const { gcEvents: collections, gcEventsOmitted, ...rest } = sample
      if (Array.isArray(collections)) {
        gcSeen += collections.length + (Number.isSafeInteger(gcEventsOmitted) ? gcEventsOmitted : 0)
        for (const e of collections) gcEvents.push(e)
        if (gcEvents.length > bounds.maxGcEvents * 1.25) gcEvents = thinGcEvents(gcEvents, bounds.maxGcEvents)
      }
      let kept = rest
      if (Array.isArray(sample.requests) && sample.requests.length > bounds.maxRequests) {
        const sorted = [...sample.requests].sort(function mostHeld (a, b) { return heldSum(b) - heldSum(a) })
        const cut = sorted.slice(bounds.maxRequests)
        requestsCut += cut.length
        const omitted = sample.requestsOmitted ?? { count: 0, bytes: 0 }
        kept = {
          ...rest,
          requests: sorted.slice(0, bounds.maxRequests),
          requestsOmitted: { count: omitted.count + cut.length,
            bytes: omitted.bytes + cut.reduce(function add (sum, r) { return sum + heldSum(r) }, 0) }
        }
      }
      samples.push({ time: sample.time, rss: sample.rss, heapUsed: sample.heapUsed ?? null, text: JSON.stringify(kept) })
      // thinned a quarter past the bound, to the bound: a thinning per quarter of it, not per sample
      if (samples.length > bounds.maxSamples * 1.25) samples = thinSamples(samples, bounds.maxSamples)
    },

    /** A bus `request` event. */
    addRequest: function addRequest (event) {
      // an event the record could not keep as it is would make the whole record unreadable: left out
      if (event === null || typeof event !== 'object' || typeof event.route !== 'string' || !Number.isFinite(event.time)) return
      if (typeof event.id !== 'number' && typeof event.id !== 'string') return
      routes.onRequest(event)
      if (event.phase === 'start') {
        const span = { id: event.id, route: event.route.slice(0, 200), start: event.time, end: null }
        spanFields(span, event)
        open.set(event.id, span)
        spans.push(span)
        spansSeen++
      } else if (event.phase === 'end') {
        let span = open.get(event.id)
        open.delete(event.id)
        if (span === undefined) {
          // it began before the run did: its start is its end less its time
          span = { id: event.id, route: event.route.slice(0, 200), start: event.time - (event.ms ?? 0), end: null }
          spans.push(span)
          spansSeen++
        }
        span.end = event.time
        spanFields(span, event)
      }
      if (spans.length > bounds.maxSpans * 1.25) spans = thinSpans(spans, bounds.maxSpans)
    },

    /** A mark: `kind` 'peak-reset', 'lab-peak-reset' (the lab's own) or 'stage'; `label` what a chart writes beside it. */
    addMark: function addMark (time, kind, label) {
      if (!Number.isFinite(time)) return
      marksSeen++
      if (marks.length < bounds.maxMarks) marks.push({ time, kind, label: String(label).slice(0, 1000) })
    },

    /**
     * The timeline as a record holds it, its samples thinned to at most `maxSamples`, its spans to `maxSpans`, its collections to
     * `maxGcEvents` and its site windows to `maxSiteWindows` (the writer asks for fewer when a record would be too large).
     */
    toRecord: function toRecord ({ maxSamples = bounds.maxSamples, maxSpans = bounds.maxSpans, maxGcEvents = bounds.maxGcEvents,
      maxSiteWindows = bounds.maxSiteWindows } = {}) {
      const keptSamples = thinSamples(samples, maxSamples)
      const keptSpans = thinSpans(spans, maxSpans)
      const thinned = {}
      if (keptSamples.length < samplesSeen) thinned.samples = { seen: samplesSeen, kept: keptSamples.length }
      if (keptSpans.length < spansSeen) thinned.spans = { seen: spansSeen, kept: keptSpans.length }
      if (marks.length < marksSeen) thinned.marks = { seen: marksSeen, kept: marks.length }
      const keptGc = thinGcEvents(gcEvents, maxGcEvents)
      if (keptGc.length < gcSeen) thinned.gc = { seen: gcSeen, kept: keptGc.length }
      const keptWindows = thinWindows(siteWindows, maxSiteWindows)
      if (keptWindows.length < siteWindowsSeen) thinned.siteWindows = { seen: siteWindowsSeen, kept: keptWindows.length }
      if (requestsCut > 0) thinned.requestsCut = requestsCut
      return {
        interval,
        samples: keptSamples.map(function parsed (s) { return JSON.parse(s.text) }),
        spans: keptSpans.map(function copy (s) { return { ...s } }),
        marks: marks.map(function copy (m) { return { ...m } }),
        gc: keptGc.map(function copy (e) { return { at: e.at, kind: e.kind, ms: e.ms, heapBefore: e.heapBefore, heapAfter: e.heapAfter,
          ...(e.cause === 'lab' || e.cause === 'run' ? { cause: e.cause } : {}) } }),
        siteWindows: keptWindows.map(function copy (w) { return structuredClone(w) }),
        sites: siteSummary.toJSON(),
        thinned: Object.keys(thinned).length === 0 ? null : thinned
      }
    }
  })
}
