/**
 * A run record put together (lib/runs/format.js says its shape): where it ran, what it was, and its text within RECORD_MAX_BYTES.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { jsonText } from '../util/escape.js'
import { procAvailable } from '../util/platform.js'
import { PROJECT_ROOT } from '../util/project-root.js'
import { RECORD_MAX_BYTES, RUN_FORMAT, RUN_KIND, recordProblem } from './format.js'

/** The app options a run's figures depend on; nothing secret (the guard's token, a database URL) is among them. */
const OPTIONS_KEPT = Object.freeze(['limits', 'ingest', 'memoryBudget', 'parseThreads', 'unsafeBad', 'resetPeakPerRequest', 'diskQuota'])

let labVersion = null

/** The lab's name and version, from its package.json (read once). */
function lab () {
  if (labVersion === null) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8'))
      labVersion = { name: String(pkg.name), version: String(pkg.version) }
    } catch {
      labVersion = { name: 'streamlab', version: 'unknown' }
    }
  }
  return labVersion
}

/** Where a run ran: this process's Node, machine and lab, and its normalised app options (null: the bench CLI's flags). */
export function describeWhere (options) {
  let kept = null
  if (options !== null && typeof options === 'object') {
    kept = {}
    for (const key of OPTIONS_KEPT) if (options[key] !== undefined) kept[key] = options[key]
  }
  return {
    node: process.version,
    v8: process.versions.v8 ?? null,
    platform: process.platform,
    arch: process.arch,
    cores: os.availableParallelism(),
    memoryBytes: os.totalmem(),
    lab: { ...lab() },
    options: kept,
    // the portable paths (no /proc): peaks are sampled, not the kernel's (docs/install.md)
    portable: !procAvailable()
  }
}

/** The routes a run exercised, in the order first met: its results' route columns and cells, then its spans'. */
export function routesOf (results, spans) {
  const routes = []
  function add (route) { if (typeof route === 'string' && route !== '' && !routes.includes(route)) routes.push(route) }
  for (const table of results?.tables ?? []) for (const column of table?.columns ?? []) add(column?.route)
  for (const cell of results?.cells ?? []) add(cell?.route)
  for (const span of spans) add(span.route)
  return routes
}

/** A record of a run, with its timeline as `createTimeline().toRecord()` gives it. */
export function makeRecord (run, timeline) {
  const params = run.params ?? null
  return {
    format: RUN_FORMAT,
    kind: RUN_KIND,
    id: run.id,
    run: {
      experiment: run.experiment,
      title: run.title ?? null,
      params,
      seed: Number.isFinite(params?.seed) ? params.seed : null,
      routes: routesOf(run.results, timeline.spans),
      status: run.status,
      startedAt: run.startedAt,
      endedAt: run.endedAt ?? null,
      source: run.source
    },
    where: describeWhere(run.options),
    results: run.results ?? null,
    error: run.error ?? null,
    timeline
  }
}

/**
 * The record's text, within RECORD_MAX_BYTES: its timeline is thinned (site windows while they take over a quarter of it, else
 * whichever of samples, spans and collections holds most, halved each time) until it fits.
 * @param {(bounds: object) => object} build the record for the given bounds (`maxSamples`, `maxSpans`, `maxGcEvents`,
 *   `maxSiteWindows`; with `noSamples`, the samples are emptied here)
 * @throws {Error} when even a record with no timeline does not fit (its results alone are too large),
 *   or when the record would not read back (a bug: the lab writes only what it reads)
 */
export function recordText (build, maxBytes = RECORD_MAX_BYTES) {
  let bounds = {}
  let record = build(bounds)
  for (;;) {
    const text = jsonText(record)
    if (Buffer.byteLength(text) <= maxBytes) {
      const problem = recordProblem(JSON.parse(text))
      if (problem !== null) throw new Error(`the run record would not read back: ${problem.field} ${problem.problem}`)
      return text
    }
    const { samples, spans } = record.timeline
    const gc = record.timeline.gc ?? []
    const windows = record.timeline.siteWindows ?? []
    const empty = samples.length === 0 && spans.length === 0 && gc.length === 0 && windows.length === 0
    if (empty) throw new Error(`the run's results alone take over ${maxBytes} bytes`)
    // whichever holds more is halved; each turn takes something away, so the loop ends. A site window weighs as much as a score
    // of samples: counted by its text, not by its number
    if (windows.length > 0 && JSON.stringify(windows).length > maxBytes / 4) bounds = { ...bounds,
      maxSiteWindows: Math.floor(windows.length / 2) }
    else if (gc.length > samples.length && gc.length > spans.length) bounds = { ...bounds, maxGcEvents: Math.floor(gc.length / 2) }
    else if (samples.length > 5 && samples.length >= spans.length) bounds = { ...bounds,
      maxSamples: Math.max(5, Math.floor(samples.length / 2)) }
    else if (spans.length > 0) bounds = { ...bounds, maxSpans: Math.floor(spans.length / 2) }
    else if (samples.length > 0) bounds = { ...bounds, noSamples: true }
    else bounds = { ...bounds, maxSiteWindows: Math.floor(windows.length / 2) }
    record = build(bounds)
    if (bounds.noSamples) record.timeline.samples = []
  }
}
