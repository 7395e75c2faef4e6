/**
 * The allocation site and its window, the one shape every reader of sites shares: the samplers (this folder), the metrics, a run
 * record (lib/runs/), the dashboard, the grader and the scripts. A site is `{ thread, kind, file, line, column, functionName,
 * allocatedBytes, heldBytes, samples }`; a window is the sites one sampler interval found, with each kind's totals. This module
 * owns their kinds, key, reader and line as text. It imports nothing, so the dashboard loads it as it is.
 */

/** What allocated: V8's heap, a buffer, a string decoded from bytes, a text parsed whole (strings.js). */
export const SITE_KINDS = Object.freeze(['heap', 'buffer', 'string', 'parsed'])

/** A site no frame could name. */
export const UNKNOWN_SITE = Object.freeze({ functionName: '(unknown)', file: null, line: null, column: null })

/** Sites read from one window: more than the sampler names (20). */
const MAX_WINDOW_SITES = 50

/**
 * A site's identity: its thread (where it has one), kind, place and function.
 * @param {string} [kind] the site's kind, for a site that does not carry it yet
 */
export function siteKey (site, kind = site.kind) {
  return [site.thread ?? '', kind, site.file, site.line, site.column, site.functionName].join('\u0000')
}

/** A line's identity, whatever allocated there and on which thread. */
export function lineKey (site) {
  return `${site.file}\u0000${site.line}`
}

/** A site's line as the page, compare and the scripts name it: "lib/ingest/read.js:42 readWhole". */
export function siteLine (site) {
  return `${site.file ?? '(no file)'}:${site.line ?? '?'} ${site.functionName}`
}

function isObject (v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

function bytes (v) {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null
}

function text (v, max) {
  return typeof v === 'string' ? v.slice(0, max) : null
}

/**
 * A site read from anywhere it travels (a window, a record, a table a graded process wrote): its known members, every string
 * bounded, or null when it is not a site.
 */
export function readSite (site) {
  if (!isObject(site) || !SITE_KINDS.includes(site.kind)) return null
  const allocatedBytes = bytes(site.allocatedBytes)
  if (allocatedBytes === null) return null
  return {
    thread: text(site.thread, 200) ?? 'main',
    functionName: text(site.functionName, 1000) || '(anonymous)',
    file: text(site.file, 2000),
    line: Number.isSafeInteger(site.line) ? site.line : null,
    column: Number.isSafeInteger(site.column) ? site.column : null,
    kind: site.kind,
    allocatedBytes,
    heldBytes: bytes(site.heldBytes),
    samples: Number.isSafeInteger(site.samples) && site.samples >= 0 ? site.samples : 0
  }
}

function readTotals (totals) {
  if (!isObject(totals)) return null
  const samples = Number.isSafeInteger(totals.samples) ? totals.samples : 0
  return { allocatedBytes: bytes(totals.allocatedBytes) ?? 0, heldBytes: bytes(totals.heldBytes), samples }
}

/**
 * A window as the metrics send it (lib/allocation/sampler.js mergeWindows, with `at`), read as a run keeps it: `{ time, windowMs,
 * intervalBytes?, routes: [], sites, totals }`, null for anything else. `time` is when it closed; `routes` is for the reader to
 * fill in (lib/runs/sites.js).
 * @param {number} [time] when it closed, where it does not say
 */
export function readWindow (window, time = window?.at) {
  if (!isObject(window) || !Array.isArray(window.sites)) return null
  const at = Number.isFinite(window.at) ? window.at : time
  if (!Number.isFinite(at)) return null
  const sites = window.sites.slice(0, MAX_WINDOW_SITES).map(readSite).filter(function known (s) { return s !== null })
  const totals = isObject(window.totals) ? window.totals : {}
  return {
    time: at,
    windowMs: bytes(window.windowMs) ?? 0,
    ...(bytes(window.intervalBytes) > 0 ? { intervalBytes: window.intervalBytes } : {}),
    routes: [],
    sites,
    totals: Object.fromEntries(SITE_KINDS.map(function kindTotals (kind) { return [kind, readTotals(totals[kind])] }))
  }
}

/**
 * What a window allocated in all, bytes sampled: its totals' bytes of every kind and thread, or its sites' sum where the totals
 * say less (a window read from a record the lab did not write).
 */
export function windowAllocated (window) {
  let totals = 0
  for (const kind of SITE_KINDS) totals += window.totals?.[kind]?.allocatedBytes ?? 0
  let sites = 0
  for (const site of window.sites) sites += site.allocatedBytes
  return Math.max(totals, sites)
}
