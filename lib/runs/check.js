/**
 * The rules a run record is read by (docs/runs.md), with nothing of Node's in them: the lab reads records through them
 * (lib/runs/format.js `readRunRecord`), and so does the dashboard, which the lab serves this module to (routes/dashboard.js), for
 * a record dropped from disk or inlined in an exported page. One set of rules, so a file the CLI refuses the page refuses with
 * the same words. Checking is all it does: nothing in a record is run, imported or evaluated.
 */
import { validateResult } from '../experiments/result-contract.js'
import { SITE_KINDS } from '../allocation/site.js'

/** The format this lab writes and reads. A later lab that changes the shape writes 2. */
export const RUN_FORMAT = 1

/** What says a JSON file is a run record and not some other JSON that happens to have `format: 1`. */
export const RUN_KIND = 'streamlab.run'

/** The largest record written or read, bytes: the writer thins the timeline until it fits. */
export const RECORD_MAX_BYTES = 4 * 1024 * 1024

/** What is wrong with a file of `bytes` over RECORD_MAX_BYTES. */
export function oversize (bytes) {
  return `is ${bytes} bytes, over the ${RECORD_MAX_BYTES} a record may be`
}

/** A run's id, and so its file's name without `.json`: no dot, no slash, nothing a path could use. */
export const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/

export const RUN_STATUSES = Object.freeze(['done', 'failed', 'cancelled'])

/** Who wrote it: the experiment engine (dashboard, POST /experiments, the demo, most benches), the bench CLI or the grader. */
export const RUN_SOURCES = Object.freeze(['engine', 'bench', 'grade'])

/**
 * What a record may hold, so that every reader can show what the check accepts (a reader that recurses, JSON.stringify among
 * them, stays shallow): every time a date a `Date` holds, which toISOString prints.
 */
export const RECORD_MAX_DEPTH = 32
export const RECORD_MAX_ITEMS = 10_000
export const RECORD_MAX_STRING = 10_000
export const RECORD_MAX_KEY = 200
export const RECORD_MAX_TIME = 8.64e15

const isObject = function isObject (v) { return v !== null && typeof v === 'object' && !Array.isArray(v) }
const isFiniteNumber = function isFiniteNumber (v) { return typeof v === 'number' && Number.isFinite(v) }

/** The first problem found, as the field it is in and what is wrong with it. */
class Problem {
  constructor (field, problem) {
    this.field = field
    this.problem = problem
  }
}

function need (ok, field, problem) {
  if (!ok) throw new Problem(field, problem)
}

function checkString (value, field, { nullable = false, max = RECORD_MAX_STRING } = {}) {
  if (nullable && value === null) return
  need(typeof value === 'string', field, nullable ? 'is not a string or null' : 'is not a string')
  need(value.length <= max, field, `is longer than ${max} characters`)
}

function checkNumber (value, field, { nullable = false, optional = false } = {}) {
  if (optional && value === undefined) return
  if (nullable && value === null) return
  need(isFiniteNumber(value), field, nullable ? 'is not a number or null' : 'is not a number')
}

/** A count of bytes, items or ms: a number from 0 (a negative one is no figure the lab measured). */
function checkBytes (value, field, { nullable = false, optional = false } = {}) {
  checkNumber(value, field, { nullable, optional })
  if (typeof value === 'number') need(value >= 0, field, `is ${value}: a size or count is not negative`)
}

/** A time in ms since 1970 that a `Date` holds. */
function checkTime (value, field, { nullable = false } = {}) {
  checkNumber(value, field, { nullable })
  if (value !== null) need(Math.abs(value) <= RECORD_MAX_TIME, field, `is not a date (ms since 1970 within ±${RECORD_MAX_TIME})`)
}

/** How a path of member names and indexes reads in a message: `run.params.a.b…`, at most a few steps. */
function fieldOf (node) {
  const steps = []
  for (let at = node; at.parent !== null; at = at.parent) steps.push(at.key)
  steps.reverse()
  const shown = steps.length > 8 ? steps.slice(0, 6) : steps
  let text = ''
  for (const step of shown) {
    if (typeof step === 'number') text += `[${step}]`
    else if (/^[A-Za-z_$][\w$]{0,39}$/.test(step)) text += text === '' ? step : `.${step}`
    else text += `[${JSON.stringify(step.slice(0, 40))}${step.length > 40 ? '…' : ''}]`
  }
  return `${text === '' ? '(record)' : text}${shown.length < steps.length ? '…' : ''}`
}

/**
 * Hold every value in a record to the bounds above, iteratively (a record may be nested far deeper than a stack goes), in the
 * order the text has them.
 */
function checkBounds (record) {
  const stack = [{ value: record, key: null, parent: null, depth: 1 }]
  while (stack.length > 0) {
    const node = stack.pop()
    const value = node.value
    if (typeof value === 'string') {
      need(value.length <= RECORD_MAX_STRING, fieldOf(node),
        `is ${value.length} characters, over the ${RECORD_MAX_STRING} a record's text may be`)
      continue
    }
    if (value === null || typeof value !== 'object') continue
    need(node.depth <= RECORD_MAX_DEPTH, fieldOf(node), `is nested more than ${RECORD_MAX_DEPTH} deep`)
    const keys = Array.isArray(value) ? null : Object.keys(value)
    const count = keys === null ? value.length : keys.length
    need(count <= RECORD_MAX_ITEMS, fieldOf(node),
      `has ${count} ${keys === null ? 'items' : 'members'}, over the ${RECORD_MAX_ITEMS} a record's array or object may hold`)
    for (let k = count - 1; k >= 0; k--) {
      const key = keys === null ? k : keys[k]
      if (keys !== null) need(key.length <= RECORD_MAX_KEY, fieldOf(node),
        `has a member's name of ${key.length} characters, over the ${RECORD_MAX_KEY} a name may be`)
      stack.push({ value: value[key], key, parent: node, depth: node.depth + 1 })
    }
  }
}

/** An object whose members are all sizes or counts (a sample's heap spaces, a request's stage bytes). */
function checkBytesMap (value, field, { optional = true } = {}) {
  if (optional && (value === undefined || value === null)) return
  need(isObject(value), field, 'is not an object')
  for (const [key, n] of Object.entries(value)) checkBytes(n, `${field}.${key}`)
}

function checkArray (value, field) {
  need(Array.isArray(value), field, 'is not an array')
}

/** Sample members that are numbers whenever present (the sampler's, lib/metrics/sampler.js). */
const SAMPLE_NUMBERS = Object.freeze(['heapTotal', 'heapUsed', 'external', 'arrayBuffers', 'peakRss'])

function checkSample (sample, field, previousTime) {
  need(isObject(sample), field, 'is not an object')
  checkTime(sample.time, `${field}.time`)
  need(sample.time >= previousTime, `${field}.time`, 'is earlier than the sample before it')
  checkBytes(sample.rss, `${field}.rss`)
  for (const key of SAMPLE_NUMBERS) checkBytes(sample[key], `${field}.${key}`, { nullable: true, optional: true })
  checkBytesMap(sample.heapSpaces, `${field}.heapSpaces`)
  checkBytesMap(sample.requestsOmitted, `${field}.requestsOmitted`)
  if (sample.eventLoop !== undefined) {
    need(isObject(sample.eventLoop), `${field}.eventLoop`, 'is not an object')
    for (const [key, n] of Object.entries(sample.eventLoop)) checkNumber(n, `${field}.eventLoop.${key}`, { nullable: true })
  }
  if (sample.requests !== undefined) {
    checkArray(sample.requests, `${field}.requests`)
    sample.requests.forEach(function checkRequest (r, k) {
      const at = `${field}.requests[${k}]`
      need(isObject(r), at, 'is not an object')
      checkString(r.route, `${at}.route`, { max: 200 })
      checkBytesMap(r.held, `${at}.held`)
      checkBytesMap(r.bounds, `${at}.bounds`)
      if (r.unread !== undefined) {
        checkArray(r.unread, `${at}.unread`)
        r.unread.forEach(function checkPhrase (text, j) { checkString(text, `${at}.unread[${j}]`, { max: 1000 }) })
      }
    })
  }
  return sample.time
}

function checkSpan (span, field) {
  need(isObject(span), field, 'is not an object')
  need(typeof span.id === 'number' || typeof span.id === 'string', `${field}.id`, 'is not a number or a string')
  checkString(span.route, `${field}.route`, { max: 200 })
  checkTime(span.start, `${field}.start`)
  checkTime(span.end, `${field}.end`, { nullable: true })
  for (const key of ['status', 'ms', 'compressedBytes', 'inflatedBytes', 'heldPeak']) checkBytes(span[key], `${field}.${key}`,
    { nullable: true, optional: true })
  if (span.errorType !== undefined) checkString(span.errorType, `${field}.errorType`, { nullable: true, max: 200 })
  checkBytesMap(span.held, `${field}.held`)
  checkBytesMap(span.bounds, `${field}.bounds`)
}

function checkMark (mark, field) {
  need(isObject(mark), field, 'is not an object')
  checkTime(mark.time, `${field}.time`)
  checkString(mark.kind, `${field}.kind`, { max: 100 })
  checkString(mark.label, `${field}.label`, { max: 1000 })
}

/** A garbage collection: `{ at, kind, ms, heapBefore, heapAfter, cause }` (lib/metrics/gc-events.js; `cause` absent from older records). */
function checkGcEvent (event, field) {
  need(isObject(event), field, 'is not an object')
  checkTime(event.at, `${field}.at`)
  checkString(event.kind, `${field}.kind`, { max: 100 })
  checkBytes(event.ms, `${field}.ms`)
  checkBytes(event.heapBefore, `${field}.heapBefore`, { nullable: true })
  checkBytes(event.heapAfter, `${field}.heapAfter`, { nullable: true })
  if (event.cause !== undefined) need(GC_CAUSES.includes(event.cause), `${field}.cause`, `is not one of ${GC_CAUSES.join(', ')}`)
}

/** Who caused a collection: the lab, reading a heap profile, or the run. */
export const GC_CAUSES = Object.freeze(['lab', 'run'])

/** A site of code: `{ thread, functionName, file, line, column, kind, allocatedBytes, heldBytes, samples }` (lib/allocation/site.js). */
function checkSite (site, field) {
  need(isObject(site), field, 'is not an object')
  checkString(site.thread, `${field}.thread`, { max: 200 })
  checkString(site.functionName, `${field}.functionName`, { max: 1000 })
  checkString(site.file, `${field}.file`, { nullable: true, max: 2000 })
  checkBytes(site.line, `${field}.line`, { nullable: true })
  checkBytes(site.column, `${field}.column`, { nullable: true })
  need(SITE_KINDS.includes(site.kind), `${field}.kind`, `is not one of ${SITE_KINDS.join(', ')}`)
  checkBytes(site.allocatedBytes, `${field}.allocatedBytes`)
  checkBytes(site.heldBytes, `${field}.heldBytes`, { nullable: true })
  checkBytes(site.samples, `${field}.samples`)
}

function checkSites (sites, field) {
  checkArray(sites, field)
  sites.forEach(function checkEach (s, k) { checkSite(s, `${field}[${k}]`) })
}

function checkRoutes (routes, field) {
  checkArray(routes, field)
  routes.forEach(function checkRoute (route, k) { checkString(route, `${field}[${k}]`, { max: 200 }) })
}

/** An allocation-site window: `{ time, windowMs, routes, sites, totals }`. */
function checkSiteWindow (window, field) {
  need(isObject(window), field, 'is not an object')
  checkTime(window.time, `${field}.time`)
  checkBytes(window.windowMs, `${field}.windowMs`)
  checkRoutes(window.routes, `${field}.routes`)
  checkSites(window.sites, `${field}.sites`)
  need(isObject(window.totals), `${field}.totals`, 'is not an object')
  for (const kind of SITE_KINDS) {
    const totals = window.totals[kind]
    if (totals === null || totals === undefined) continue
    need(isObject(totals), `${field}.totals.${kind}`, 'is not an object or null')
    checkBytes(totals.allocatedBytes, `${field}.totals.${kind}.allocatedBytes`)
    checkBytes(totals.heldBytes, `${field}.totals.${kind}.heldBytes`, { nullable: true })
  }
}

/**
 * Each route's sites over the run (lib/runs/sites.js `toJSON`; `allocatedBytes`, `lab` and `intervalBytes` may be absent). A
 * route's sites never allocated more than the route: their shares are of it.
 */
function checkSiteSummary (summary) {
  need(isObject(summary), 'timeline.sites', 'is not an object')
  checkArray(summary.routes, 'timeline.sites.routes')
  summary.routes.forEach(function checkEach (entry, k) {
    const at = `timeline.sites.routes[${k}]`
    need(isObject(entry), at, 'is not an object')
    checkString(entry.route, `${at}.route`, { max: 200 })
    checkBytes(entry.windows, `${at}.windows`)
    checkSites(entry.sites, `${at}.sites`)
    checkBytes(entry.allocatedBytes, `${at}.allocatedBytes`, { optional: true })
    if (entry.allocatedBytes === undefined) return
    const sum = entry.sites.reduce(function add (total, site) { return total + site.allocatedBytes }, 0)
    // a byte for the float sums of many windows
    need(sum <= entry.allocatedBytes + 1, `${at}.allocatedBytes`, 'is less than its sites allocated')
  })
  if (summary.lab !== undefined) {
    need(isObject(summary.lab), 'timeline.sites.lab', 'is not an object')
    checkBytes(summary.lab.allocatedBytes, 'timeline.sites.lab.allocatedBytes')
    checkSites(summary.lab.sites, 'timeline.sites.lab.sites')
  }
  checkBytes(summary.spanning, 'timeline.sites.spanning')
  checkBytes(summary.idle, 'timeline.sites.idle')
  checkBytes(summary.intervalBytes, 'timeline.sites.intervalBytes', { nullable: true, optional: true })
}

function checkRun (run) {
  need(isObject(run), 'run', 'is not an object')
  checkString(run.experiment, 'run.experiment', { max: 200 })
  checkString(run.title, 'run.title', { nullable: true, max: 1000 })
  need(run.params === null || isObject(run.params), 'run.params', 'is not an object or null')
  checkNumber(run.seed, 'run.seed', { nullable: true })
  checkRoutes(run.routes, 'run.routes')
  need(RUN_STATUSES.includes(run.status), 'run.status', `is not one of ${RUN_STATUSES.join(', ')}`)
  need(RUN_SOURCES.includes(run.source), 'run.source', `is not one of ${RUN_SOURCES.join(', ')}`)
  checkTime(run.startedAt, 'run.startedAt')
  checkTime(run.endedAt, 'run.endedAt', { nullable: true })
}

function checkWhere (where) {
  need(isObject(where), 'where', 'is not an object')
  for (const key of ['node', 'platform', 'arch']) checkString(where[key], `where.${key}`, { max: 200 })
  checkString(where.v8, 'where.v8', { nullable: true, max: 200 })
  need(Number.isSafeInteger(where.cores) && where.cores > 0, 'where.cores', 'is not a positive integer')
  checkBytes(where.memoryBytes, 'where.memoryBytes')
  need(isObject(where.lab), 'where.lab', 'is not an object')
  checkString(where.lab.name, 'where.lab.name', { max: 200 })
  checkString(where.lab.version, 'where.lab.version', { max: 200 })
  need(where.options === null || isObject(where.options), 'where.options', 'is not an object or null')
  need(typeof where.portable === 'boolean', 'where.portable', 'is not true or false')
}

function checkResults (results) {
  if (results === null) return
  need(isObject(results), 'results', 'is not an object or null')
  // a bench's results may have nothing the page can draw as a table: that is not a fault of the record
  const problems = validateResult(results).filter(function fault (p) { return !p.startsWith('the result has neither') })
  need(problems.length === 0, 'results', problems[0])
}

/** What the writer left out: `{ samples, spans, marks, gc, siteWindows }` each `{ seen, kept }` where thinned, and `requestsCut`. */
function checkThinned (thinned) {
  if (thinned === null) return
  need(isObject(thinned), 'timeline.thinned', 'is not an object or null')
  for (const key of ['samples', 'spans', 'marks', 'gc', 'siteWindows']) {
    if (!Object.hasOwn(thinned, key)) continue
    need(isObject(thinned[key]), `timeline.thinned.${key}`, 'is not { seen, kept }')
    checkBytes(thinned[key].seen, `timeline.thinned.${key}.seen`)
    checkBytes(thinned[key].kept, `timeline.thinned.${key}.kept`)
  }
  checkBytes(thinned.requestsCut, 'timeline.thinned.requestsCut', { optional: true })
}

function checkTimeline (timeline) {
  need(isObject(timeline), 'timeline', 'is not an object')
  need(timeline.interval === null || (Number.isSafeInteger(timeline.interval) && timeline.interval > 0), 'timeline.interval',
    'is not a positive integer of ms or null')
  checkArray(timeline.samples, 'timeline.samples')
  let previous = -Infinity
  timeline.samples.forEach(function checkEach (s, k) { previous = checkSample(s, `timeline.samples[${k}]`, previous) })
  checkArray(timeline.spans, 'timeline.spans')
  timeline.spans.forEach(function checkEach (s, k) { checkSpan(s, `timeline.spans[${k}]`) })
  checkArray(timeline.marks, 'timeline.marks')
  timeline.marks.forEach(function checkEach (m, k) { checkMark(m, `timeline.marks[${k}]`) })
  // collections and sites may be absent
  if (timeline.gc !== undefined) {
    checkArray(timeline.gc, 'timeline.gc')
    timeline.gc.forEach(function checkEach (e, k) { checkGcEvent(e, `timeline.gc[${k}]`) })
  }
  if (timeline.siteWindows !== undefined) {
    checkArray(timeline.siteWindows, 'timeline.siteWindows')
    timeline.siteWindows.forEach(function checkEach (w, k) { checkSiteWindow(w, `timeline.siteWindows[${k}]`) })
  }
  if (timeline.sites !== undefined) checkSiteSummary(timeline.sites)
  checkThinned(timeline.thinned)
}

/**
 * @returns {{ field: string, problem: string } | null} the first problem, or null when it is a record of this format
 */
export function recordProblem (record) {
  try {
    need(isObject(record), '(record)', 'is not a JSON object')
    need(record.kind === RUN_KIND, 'kind', `is not "${RUN_KIND}": not a streamlab run record`)
    need(Number.isSafeInteger(record.format), 'format', 'is not a whole number')
    need(record.format === RUN_FORMAT, 'format', `is ${record.format}; this lab reads format ${RUN_FORMAT}`)
    need(typeof record.id === 'string' && RUN_ID.test(record.id), 'id', 'is not a run id (letters, digits, - and _, at most 100)')
    checkBounds(record)
    checkRun(record.run)
    checkWhere(record.where)
    checkResults(record.results)
    need(record.error === null
      || (isObject(record.error) && typeof record.error.type === 'string' && typeof record.error.message === 'string'),
      'error', 'is not null or { type, message, ... }')
    checkTimeline(record.timeline)
    return null
  } catch (err) {
    if (err instanceof Problem) return { field: err.field, problem: err.problem }
    throw err
  }
}

/**
 * The message a record refused for `problem` gets, as lib/errors `runInvalid` words it.
 * @param {string} where what was read (a file, an id)
 */
export function problemMessage (where, found) {
  return `${where} is not a run record this lab reads: ${found.field} ${found.problem}`
}

/** A text's length in UTF-8 bytes; past the bound, any length past it (no need to count them all). */
function utf8Length (text) {
  if (text.length > RECORD_MAX_BYTES) return text.length
  return new TextEncoder().encode(text).length
}

/**
 * Check a record's text: its size, that it is JSON, then its members.
 * @param {number} [bytes] its size in bytes, when known (a file's): the text is not read past the bound
 *   `(file)` for the size, `(json)` for the syntax, else the first member at fault
 */
export function checkRecordText (text, bytes = typeof text === 'string' ? utf8Length(text) : NaN) {
  if (typeof text !== 'string') return { record: null, problem: { field: '(record)', problem: 'is not text' } }
  if (bytes > RECORD_MAX_BYTES) return { record: null, problem: { field: '(file)', problem: oversize(bytes) } }
  let record
  try {
    record = JSON.parse(text)
  } catch (err) {
    return { record: null, problem: { field: '(json)', problem: `is not JSON: ${String(err.message).slice(0, 200)}` } }
  }
  const found = recordProblem(record)
  return found === null ? { record, problem: null } : { record: null, problem: found }
}
