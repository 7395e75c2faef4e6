/**
 * Which code holds a run's bytes, by route: the allocation-site windows of the bus's `sites` events (docs/metrics.md, "Allocation
 * sites"), each given to the route that had requests in flight while it was taken, and each route's summary: its sites over the
 * run, the bytes each allocated summed across windows and the most it was seen to hold. A window during which two routes had
 * requests in flight goes to neither: its bytes cannot be told apart, and giving them to both would show one route's buffers in
 * the other's column. The recorder (timeline.js), the dashboard (live and replayed) and compare all read windows through here, so
 * nothing of Node's is in it. More: README.md, "sites.js".
 */
import { formatBytes } from '../util/units.js'
import { siteKey, windowAllocated } from '../allocation/site.js'

export const SITES_DEFAULTS = Object.freeze({
  /** Windows a record keeps. */
  maxWindows: 150,
  /** Sites a route's summary names. */
  topSites: 20,
  /** Sites a route's summary follows while it adds up, before it keeps the top of them. */
  tracked: 400
})

/**
 * The lab's own instruments, project-relative: the one list a site is classified by. Folders and files whose every frame is the
 * lab's; in each experiment's folder, the files that drive and measure it (its routes.js, stages.js and the like are the
 * route's); functions of a route's file that serve the lab (a parse thread's answer to the sampler).
 */
export const LAB_CODE = Object.freeze({
  folders: Object.freeze(['lib/allocation/', 'lib/metrics/', 'lib/runs/', 'lib/experiments/', 'lib/measure/']),
  files: Object.freeze(['routes/metrics.js', 'routes/runs.js', 'routes/experiments.js', 'routes/dashboard.js']),
  experimentFiles: Object.freeze(['index.js', 'run.js', 'client.js', 'bench.js', 'figures.js', 'result.js', 'tcp-queues.js',
    'measure.js', 'leftovers.js']),
  functions: Object.freeze([Object.freeze({ file: 'lib/parse/parse-thread.js', functionName: 'answerSites' })])
})

/** Whether a site is the lab's own code (LAB_CODE). */
export function isLabSite (site) {
  const file = site.file
  if (typeof file !== 'string') return false
  if (LAB_CODE.folders.some(function under (folder) { return file.startsWith(folder) })) return true
  if (LAB_CODE.files.includes(file)) return true
  const parts = file.split('/')
  if (parts.length === 3 && parts[0] === 'experiments' && LAB_CODE.experimentFiles.includes(parts[2])) return true
  return LAB_CODE.functions.some(function named (f) { return f.file === file && f.functionName === site.functionName })
}

/** Requests followed for attribution, in flight and ended: more than any load the lab runs. */
const MAX_OPEN = 10_000

function isObject (v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

/**
 * Which routes had requests in flight during a window: fed the bus's `request` events (in any order against the windows), asked
 * with each window's span of time, windows in time order.
 */
export function createRouteTracker () {
  /** id -> { route, start } of a request in flight */
  const open = new Map()
  /** requests that ended, while a later window may still overlap them */
  let ended = []
  return {
    onRequest: function onRequest (event) {
      if (!isObject(event) || typeof event.route !== 'string' || !Number.isFinite(event.time)) return
      // an experiment's warm-up upload is no part of the run: its window is nobody's, as on the page
      if (event.warmUp === true) return
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
    /** The routes with a request in flight at some time in the window [from, to), in the order met. */
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

/** A site added into a map of sums by key: allocated and samples summed, the most held kept; returns the sum. */
function addSite (map, site) {
  const key = siteKey(site)
  const sum = map.get(key)
  if (sum === undefined) {
    map.set(key, { ...site })
    return map.get(key)
  }
  sum.allocatedBytes += site.allocatedBytes
  sum.samples += site.samples
  if (site.heldBytes !== null) sum.heldBytes = Math.max(sum.heldBytes ?? 0, site.heldBytes)
  return sum
}

/**
 * A route's site holds at most what it allocated in the route's windows: an object from a window two routes shared (or
 * none) is no route's, though it lives on into this route's windows (docs/metrics.md, "Allocation sites").
 */
function heldOfItsOwn (sum) {
  if (sum.heldBytes !== null && sum.heldBytes > sum.allocatedBytes) sum.heldBytes = sum.allocatedBytes
}

/** The heaviest `tracked` of a map grown past a quarter more. */
function bounded (map, tracked) {
  if (map.size <= tracked * 1.25) return map
  return new Map([...map].sort(function heaviest (a, b) { return byWeight(a[1], b[1]) }).slice(0, tracked))
}

/**
 * Each route's sites over a run, added window by window (`add`), bounded: a route follows at most `tracked` sites and names its
 * `topSites`. A route's `allocatedBytes` is what its windows allocated, less its lab sites: the whole its sites' shares are of,
 * so they never sum past it. The lab's sites, from every window, are in `lab`.
 */
export function createSiteSummary ({ topSites = SITES_DEFAULTS.topSites, tracked = SITES_DEFAULTS.tracked } = {}) {
  /** route -> { windows, allocatedBytes, sites: Map<key, site> } */
  const routes = new Map()
  const lab = { allocatedBytes: 0, sites: new Map() }
  let spanning = 0
  let idle = 0
  let intervalBytes = null

  function addTo (route, window, labBytes) {
    if (!routes.has(route)) routes.set(route, { windows: 0, allocatedBytes: 0, sites: new Map() })
    const entry = routes.get(route)
    entry.windows++
    entry.allocatedBytes += windowAllocated(window) - labBytes
    for (const site of window.sites) if (!isLabSite(site)) heldOfItsOwn(addSite(entry.sites, site))
    entry.sites = bounded(entry.sites, tracked)
  }

  function top (map) {
    return [...map.values()].sort(byWeight).slice(0, topSites).map(function copy (site) { return { ...site } })
  }

  return {
    /** A window (readWindow) whose `routes` are filled in. */
    add: function add (window) {
      intervalBytes ??= window.intervalBytes ?? null
      let labBytes = 0
      for (const site of window.sites) {
        if (!isLabSite(site)) continue
        labBytes += site.allocatedBytes
        addSite(lab.sites, site)
      }
      lab.allocatedBytes += labBytes
      lab.sites = bounded(lab.sites, tracked)
      if (window.routes.length === 0) idle++
      else if (window.routes.length > 1) spanning++
      else addTo(window.routes[0], window, labBytes)
    },
    /**
     * `{ routes: [{ route, windows, allocatedBytes, sites }], lab: { allocatedBytes, sites }, spanning, idle, intervalBytes }`:
     * each route's top sites, heaviest first, and the lab's.
     */
    toJSON: function toJSON () {
      return {
        routes: [...routes].map(function summary ([route, entry]) {
          return { route, windows: entry.windows, allocatedBytes: entry.allocatedBytes, sites: top(entry.sites) }
        }),
        lab: { allocatedBytes: lab.allocatedBytes, sites: top(lab.sites) },
        spanning,
        idle,
        intervalBytes
      }
    }
  }
}

/** A site's share of its route's (summary entry's) sampled allocation, 0 to 1, or null where the route's is not known. */
export function siteShare (site, route) {
  if (!(route?.allocatedBytes > 0)) return null
  return site.allocatedBytes / route.allocatedBytes
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
 * Thin windows to at most `max`: each route's window that allocated the most, then evenly spaced ones, in time order. The summary
 * is made from every window, so thinning leaves it as it is.
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

/** A share as the page writes it: "53%", "<1%"; '' for none. */
export function shareText (share) {
  if (share === null || !Number.isFinite(share)) return ''
  return share > 0 && share < 0.01 ? '<1%' : `${Math.round(share * 100)}%`
}

/** What the sites view says it shows, with the sampling interval the windows quote (none where no window said). */
export function sitesHelp (intervalBytes) {
  const every = intervalBytes > 0 ? `, sampled about every ${formatBytes(intervalBytes)} allocated` : ''
  return `Each route's lines that allocated the most${every}: the bar is what the line allocated over the route's windows, ` +
    'the darker part the most it held at once of that; the share is of all the route allocated in the same windows, ' +
    'so a route\'s shares never sum past 100%. The lab\'s own code (its meters and recorders) is listed apart.'
}

/** The routes of a window: those with a request in flight while it was taken. */
export function routesInWindow (tracker, window) {
  return tracker.routesDuring(window.time - window.windowMs, window.time)
}
