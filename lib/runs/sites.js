/**
 * Which code holds a run's bytes, by route: the allocation-site windows its samples carry
 * (docs/metrics.md, "Allocation sites"), each given to the route that had requests in flight
 * while it was taken, and each route's summary: its sites over the run, the bytes each
 * allocated summed across windows and the most it was seen to hold. A window during which two
 * routes had requests in flight goes to neither: its bytes cannot be told apart, and giving
 * them to both would show one route's buffers in the other's column. The recorder
 * (timeline.js), the dashboard (live and replayed) and compare all read windows through here,
 * so nothing of Node's is in it.
 */
import { figuresOf } from './figures.js'

export const SITES_DEFAULTS = Object.freeze({
  /** Windows a record keeps: five minutes of them at the sampler's 2 s. */
  maxWindows: 150,
  /** Sites a route's summary names. */
  topSites: 20,
  /** Sites a route's summary follows while it adds up, before it keeps the top of them. */
  tracked: 400
})

export const SITE_KINDS = Object.freeze(['heap', 'buffer'])

/** Sites read from one window: more than the sampler names (20). */
const MAX_WINDOW_SITES = 50
/** Requests followed for attribution, in flight and ended: more than any load the lab runs. */
const MAX_OPEN = 10_000

function isObject (v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

function bytes (v) {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null
}

function text (v, max) {
  return typeof v === 'string' ? v.slice(0, max) : null
}

/** A site's identity across windows: thread, kind, place and function. */
export function siteKey (site) {
  return [site.thread, site.kind, site.file, site.line, site.column, site.functionName].join('\u0000')
}

/** A site's line as the page and compare name it: "lib/ingest/read.js:42 readWhole". */
export function siteLine (site) {
  return `${site.file ?? '(no file)'}:${site.line ?? '?'} ${site.functionName}`
}

/** A site read from the server or a record: its known members, or null. */
function readSite (site) {
  if (!isObject(site) || !SITE_KINDS.includes(site.kind)) return null
  const allocatedBytes = bytes(site.allocatedBytes)
  if (allocatedBytes === null) return null
  const line = Number.isSafeInteger(site.line) ? site.line : null
  const column = Number.isSafeInteger(site.column) ? site.column : null
  return {
    thread: text(site.thread, 200) ?? 'main',
    functionName: text(site.functionName, 1000) || '(anonymous)',
    file: text(site.file, 2000),
    line,
    column,
    kind: site.kind,
    allocatedBytes,
    heldBytes: bytes(site.heldBytes),
    samples: Number.isSafeInteger(site.samples) && site.samples >= 0 ? site.samples : 0
  }
}

function readTotals (totals) {
  if (!isObject(totals)) return null
  return { allocatedBytes: bytes(totals.allocatedBytes) ?? 0, heldBytes: bytes(totals.heldBytes), samples: Number.isSafeInteger(totals.samples) ? totals.samples : 0 }
}

/**
 * A sample's `allocationSites` as a window of a run: `{ time, windowMs, routes: [], sites, totals }`,
 * only the members known, every string bounded; null for anything else. `time` is when it
 * closed (its `at`), `routes` is for the reader to fill in (`routesInWindow`).
 * @param {unknown} allocationSites
 * @param {number} time the sample's time: when the window closed, where it does not say
 */
export function readWindow (allocationSites, time) {
  if (!isObject(allocationSites) || !Array.isArray(allocationSites.sites) || !Number.isFinite(time)) return null
  const sites = []
  for (const site of allocationSites.sites.slice(0, MAX_WINDOW_SITES)) {
    const read = readSite(site)
    if (read !== null) sites.push(read)
  }
  const totals = isObject(allocationSites.totals) ? allocationSites.totals : {}
  return {
    time: Number.isFinite(allocationSites.at) ? allocationSites.at : time,
    windowMs: bytes(allocationSites.windowMs) ?? 0,
    routes: [],
    sites,
    totals: { heap: readTotals(totals.heap), buffer: readTotals(totals.buffer) }
  }
}

/**
 * Which routes had requests in flight during a window: fed the bus's `request` events (in any
 * order against the windows), asked with each window's span of time, windows in time order.
 */
export function createRouteTracker () {
  /** id -> { route, start } of a request in flight */
  const open = new Map()
  /** requests that ended, while a later window may still overlap them */
  let ended = []
  return {
    onRequest: function onRequest (event) {
      if (!isObject(event) || typeof event.route !== 'string' || !Number.isFinite(event.time)) return
      if (typeof event.id !== 'number' && typeof event.id !== 'string') return
      const route = event.route.slice(0, 200)
      if (event.phase === 'start') {
        open.set(event.id, { route, start: event.time })
        // an end never heard of (a lost event) must not keep its request in flight for ever
        if (open.size > MAX_OPEN) open.delete(open.keys().next().value)
      } else if (event.phase === 'end') {
        const start = open.get(event.id)?.start ?? event.time - (Number.isFinite(event.ms) ? event.ms : 0)
        open.delete(event.id)
        ended.push({ route, start, end: event.time })
        if (ended.length > MAX_OPEN) ended = ended.slice(-MAX_OPEN / 2)
      }
    },
    /**
     * The routes with a request in flight at some time in [from, to), in the order met.
     * @param {number} from the window's start
     * @param {number} to its end
     */
    routesDuring: function routesDuring (from, to) {
      ended = ended.filter(function mayOverlapLater (r) { return r.end > from })
      const routes = []
      for (const r of [...ended, ...open.values()]) {
        if (r.start < to && (r.end === undefined || r.end > from) && !routes.includes(r.route)) routes.push(r.route)
      }
      return routes
    }
  }
}

/** Allocated plus held: how a summary ranks its sites, as the sampler ranks a window's. */
function weight (site) {
  return site.allocatedBytes + (site.heldBytes ?? 0)
}

function byWeight (a, b) {
  return weight(b) - weight(a)
}

/**
 * Each route's sites over a run, added window by window (`add`), bounded: a route follows at
 * most `tracked` sites and names its `topSites`.
 * @param {{ topSites?: number, tracked?: number }} [bounds]
 */
export function createSiteSummary ({ topSites = SITES_DEFAULTS.topSites, tracked = SITES_DEFAULTS.tracked } = {}) {
  /** route -> { windows, sites: Map<key, site> } */
  const routes = new Map()
  let spanning = 0
  let idle = 0

  function addTo (route, window) {
    if (!routes.has(route)) routes.set(route, { windows: 0, sites: new Map() })
    const entry = routes.get(route)
    entry.windows++
    for (const site of window.sites) {
      const key = siteKey(site)
      const sum = entry.sites.get(key)
      if (sum === undefined) {
        entry.sites.set(key, { ...site })
        continue
      }
      sum.allocatedBytes += site.allocatedBytes
      sum.samples += site.samples
      if (site.heldBytes !== null) sum.heldBytes = Math.max(sum.heldBytes ?? 0, site.heldBytes)
    }
    if (entry.sites.size > tracked * 1.25) {
      entry.sites = new Map([...entry.sites].sort(function heaviest (a, b) { return byWeight(a[1], b[1]) }).slice(0, tracked))
    }
  }

  return {
    /** A window (readWindow) whose `routes` are filled in. */
    add: function add (window) {
      if (window.routes.length === 0) idle++
      else if (window.routes.length > 1) spanning++
      else addTo(window.routes[0], window)
    },
    /** `{ routes: [{ route, windows, sites }], spanning, idle }`: each route's top sites, heaviest first. */
    toJSON: function toJSON () {
      return {
        routes: [...routes].map(function summary ([route, entry]) {
          return { route, windows: entry.windows, sites: [...entry.sites.values()].sort(byWeight).slice(0, topSites).map(function copy (s) { return { ...s } }) }
        }),
        spanning,
        idle
      }
    }
  }
}

/** The summary of some windows at once (a record's, for a reader that has only them). */
export function summariseWindows (windows, bounds) {
  const summary = createSiteSummary(bounds)
  for (const window of windows) summary.add(window)
  return summary.toJSON()
}

/** A window's allocated bytes, its sites' in all. */
function windowBytes (window) {
  let sum = 0
  for (const site of window.sites) sum += site.allocatedBytes
  return sum
}

/**
 * Thin windows to at most `max`: each route's window that allocated the most, then evenly spaced
 * ones, in time order. The summary is made from every window, so thinning leaves it as it is.
 * @param {Array<{ routes: string[], sites: object[] }>} windows in time order
 * @param {number} max
 */
export function thinWindows (windows, max) {
  if (windows.length <= max) return windows
  const keep = new Set()
  const heaviest = new Map()
  for (const window of windows) {
    const route = window.routes.join(' ')
    const best = heaviest.get(route)
    if (best === undefined || windowBytes(window) > windowBytes(best)) heaviest.set(route, window)
  }
  for (const window of heaviest.values()) if (keep.size < max) keep.add(window)
  const rest = windows.filter(function notKept (w) { return !keep.has(w) })
  const room = max - keep.size
  const step = rest.length / Math.max(1, room)
  for (let k = 0; k < room; k++) keep.add(rest[Math.floor(k * step)])
  return windows.filter(function kept (w) { return keep.has(w) })
}

/**
 * What each route grew by, bytes, as a site's share reads it: the most one of its requests held at
 * once (its spans' `heldPeak`: live bytes, as a site's held bytes are), else, for a route whose
 * requests do not say, its peak above idle where the results say it and it is above 0. A peak of
 * RSS also counts memory freed and still resident, which no site holds (docs/metrics.md).
 * @param {{ results: object|null, timeline?: { spans?: object[] } }} record
 * @returns {Map<string, { bytes: number, from: 'results'|'requests' }>}
 */
export function growthByRoute (record) {
  const growth = new Map()
  for (const span of record.timeline?.spans ?? []) {
    if (Number.isFinite(span.heldPeak) && span.heldPeak > (growth.get(span.route)?.bytes ?? 0)) growth.set(span.route, { bytes: span.heldPeak, from: 'requests' })
  }
  if (record.results !== null && record.results !== undefined) {
    for (const figure of figuresOf(record).values()) {
      if (figure.route !== null && figure.name === 'peakAboveIdle' && figure.value > 0 && !growth.has(figure.route)) growth.set(figure.route, { bytes: figure.value, from: 'results' })
    }
  }
  return growth
}

/**
 * The routes of a window: those with a request in flight while it was taken.
 * @param {ReturnType<typeof createRouteTracker>} tracker
 * @param {{ time: number, windowMs: number }} window
 */
export function routesInWindow (tracker, window) {
  return tracker.routesDuring(window.time - window.windowMs, window.time)
}
