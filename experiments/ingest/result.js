/**
 * The ingest result's presentation (lib/experiments/result-contract.js): the routes side by side and the verdict on
 * their answers. Units are the contract's to format; only composite texts are made here.
 */
import { formatMiB } from '../../lib/util/units.js'
import { INGEST_ROUTES } from '../../lib/ingest/contenders.js'
import { routesSideBySide } from '../results.js'

/** A column's heading: the route and its label in the route table (a route not in it by name). */
function routeHeading (route) {
  return `POST /${route} (${Object.hasOwn(INGEST_ROUTES, route) ? INGEST_ROUTES[route].label : route})`
}

function describeErrors (errors) {
  const entries = Object.entries(errors ?? {})
  if (entries.length === 0) return ''
  return ` (${entries.map(function errorCount ([type, n]) { return `${type} ×${n}` }).join(', ')})`
}

function finite (n) {
  return Number.isFinite(n) ? n : null
}

/** A row of the routes table; `more`: a lesson's view folds it away (the lesson reads memory and speed). */
function row (field, label, unit, value, more = false) {
  return { field, label, unit, value, more }
}

const ROWS = Object.freeze([
  row('ok', 'Uploads answered 200', 'text', function okValue (r) { return `${r.ok} / ${r.requests}${describeErrors(r.errors)}` }),
  row('mbPerSecond', 'Throughput', 'MB/s', function mbValue (r) { return finite(r.mbPerSecond) }),
  row('boundShare', 'Share of this machine\'s bound (wall)', 'text', function shareValue (r, bound) {
    if (!Number.isFinite(bound?.mbPerSecond)) return `n/a (${bound?.reason ?? 'no bound measured'})`
    return Number.isFinite(r.boundShare) ? `${Math.round(100 * r.boundShare)} % of ${bound.mbPerSecond.toFixed(1)} MB/s` : null
  }),
  row('cpuPerGB', 'CPU per GB (the lab process, every thread)', 'text', function cpuValue (r) {
    return Number.isFinite(r.cpuPerGB) ? `${r.cpuPerGB.toFixed(2)} s` : null
  }, true),
  row('cpuShare', 'Share of the stages\' CPU', 'text', function cpuShareValue (r, bound) {
    if (!Number.isFinite(bound?.cpuPerGB)) return `n/a (${bound?.reason ?? 'no stages\' CPU measured'})`
    return Number.isFinite(r.cpuShare) ? `${Math.round(100 * r.cpuShare)} % (stages ${bound.cpuPerGB.toFixed(2)} s per GB)` : null
  }, true),
  row('peakAboveIdle', 'Server peak above idle', 'MiB', function peakValue (r) {
    const above = r.server?.peakAboveIdle
    return Number.isFinite(above) ? above : `n/a (peak ${formatMiB(r.server?.peakRss)})`
  }),
  row('heldPeak', 'Most one upload held (its stages)', 'MiB', function heldValue (r) { return finite(r.server?.heldPeak) }),
  row('latency', 'Latency avg / p99', 'ms', function latencyValue (r) { return [r.latencyMs?.avg ?? null, r.latencyMs?.p99 ?? null] }),
  row('items', 'Items counted', 'count', function itemsValue (r) { return r.summary?.items ?? null }),
  row('sha256', 'sha256 of the body', 'text', function shaValue (r) {
    return r.summary?.sha256 ? `${r.summary.sha256.slice(0, 16)}…` : null
  }, true),
  row('idSum', 'Sum of ids', 'text', function idSumValue (r) { return r.summary?.idSum == null ? null : String(r.summary.idSum) }, true)
])

/** The routes side by side; `bound`: the machine's bound on the body's shape, each route's throughput a share of it. */
export function routesTable (byRoute, bound = null) {
  return routesSideBySide('routes', Object.values(byRoute), ROWS, routeHeading, bound)
}

/** The verdict on the answers (`summariesAgree`): identical across every upload and route, or not. */
export function answersVerdict (agree, routeCount) {
  if (agree === true) {
    const which = routeCount === 2 ? 'both routes' : `all ${routeCount} routes`
    const text = routeCount > 1
      ? `✔ Answers identical: every upload to ${which} gave the same summary.`
      : '✔ Answers identical: every upload gave the same summary.'
    return { verdict: 'identical', ok: true, text }
  }
  if (agree === false) return { verdict: 'differ', ok: false, text: '✘ Answers differ: the routes (or uploads) gave other summaries.' }
  return { verdict: 'none', ok: null, text: 'No answers to compare: no upload succeeded.' }
}

/** The run's input in a few words, for the table's caption. */
export function inputCaption (input, params) {
  let what = ''
  if (input.bytes) what = `${input.bytes.toLocaleString('en')} bytes`
  else if (input.size != null) what = `${input.size.toLocaleString('en')} items`
  const uploads = `${params.requests} upload${params.requests === 1 ? '' : 's'} per route`
  return [what, input.format, `concurrency ${params.concurrency}`, uploads].filter(Boolean).join(', ')
}
