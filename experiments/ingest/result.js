/**
 * The ingest result's presentation, as the result contract
 * (lib/experiments/result-contract.js) carries it: the routes side by side in one table
 * and the verdict on their answers. Formatting the page and the CLIs leave
 * to the contract's units; only composite texts are made here.
 */
import { formatMiB } from '../../lib/util/units.js'
import { INGEST_ROUTES } from '../../lib/ingest/contenders.js'

/**
 * A column's heading: the route and what it is, from the route table's label
 * (buffered, streamed, express.json, @streamparser/json); a route not in the
 * table is shown by name.
 */
function routeHeading (route) {
  return `POST /${route} (${Object.hasOwn(INGEST_ROUTES, route) ? INGEST_ROUTES[route].label : route})`
}

function describeErrors (errors) {
  const entries = Object.entries(errors ?? {})
  if (entries.length === 0) return ''
  return ` (${entries.map(function errorCount ([type, n]) { return `${type} ×${n}` }).join(', ')})`
}

const ROWS = Object.freeze([
  { field: 'ok', label: 'Uploads answered 200', unit: 'text', value: function okValue (r) { return `${r.ok} / ${r.requests}${describeErrors(r.errors)}` } },
  { field: 'mbPerSecond', label: 'Throughput', unit: 'MB/s', value: function mbValue (r) { return Number.isFinite(r.mbPerSecond) ? r.mbPerSecond : null } },
  {
    field: 'boundShare',
    label: 'Share of this machine\'s bound (wall)',
    unit: 'text',
    value: function shareValue (r, bound) {
      if (!Number.isFinite(bound?.mbPerSecond)) return `n/a (${bound?.reason ?? 'no bound measured'})`
      return Number.isFinite(r.boundShare) ? `${Math.round(100 * r.boundShare)} % of ${bound.mbPerSecond.toFixed(1)} MB/s` : null
    }
  },
  {
    field: 'cpuPerGB',
    label: 'CPU per GB (the lab process, every thread)',
    unit: 'text',
    value: function cpuValue (r) { return Number.isFinite(r.cpuPerGB) ? `${r.cpuPerGB.toFixed(2)} s` : null }
  },
  {
    field: 'cpuShare',
    label: 'Share of the stages\' CPU',
    unit: 'text',
    value: function cpuShareValue (r, bound) {
      if (!Number.isFinite(bound?.cpuPerGB)) return `n/a (${bound?.reason ?? 'no stages\' CPU measured'})`
      return Number.isFinite(r.cpuShare) ? `${Math.round(100 * r.cpuShare)} % (stages ${bound.cpuPerGB.toFixed(2)} s per GB)` : null
    }
  },
  {
    field: 'peakAboveIdle',
    label: 'Server peak above idle',
    unit: 'MiB',
    value: function peakValue (r) {
      const above = r.server?.peakAboveIdle
      return Number.isFinite(above) ? above : `n/a (peak ${formatMiB(r.server?.peakRss)})`
    }
  },
  {
    field: 'heldPeak',
    label: 'Most one upload held (its stages)',
    unit: 'MiB',
    value: function heldValue (r) { return Number.isFinite(r.server?.heldPeak) ? r.server.heldPeak : null }
  },
  { field: 'latency', label: 'Latency avg / p99', unit: 'ms', value: function latencyValue (r) { return [r.latencyMs?.avg ?? null, r.latencyMs?.p99 ?? null] } },
  { field: 'items', label: 'Items counted', unit: 'count', value: function itemsValue (r) { return r.summary?.items ?? null } },
  { field: 'sha256', label: 'sha256 of the body', unit: 'text', value: function shaValue (r) { return r.summary?.sha256 ? `${r.summary.sha256.slice(0, 16)}…` : null } },
  { field: 'idSum', label: 'Sum of ids', unit: 'text', value: function idSumValue (r) { return r.summary?.idSum === undefined || r.summary?.idSum === null ? null : String(r.summary.idSum) } }
])

/**
 * The routes side by side.
 * @param {Record<string, object>} byRoute the result's `routes`
 * @param {{ mbPerSecond: number|null, cores?: number, reason?: string }|null} [bound] the machine's bound
 *   on the body's shape (lib/measure/bound.js): each route's throughput as a share of it
 * @returns {import('../../lib/experiments/result-contract.js').ResultTable}
 */
export function routesTable (byRoute, bound = null) {
  const routes = Object.values(byRoute)
  return {
    name: 'routes',
    columns: routes.map(function column (r) { return { key: r.route, label: routeHeading(r.route), route: r.route } }),
    rows: ROWS.map(function row (spec) {
      const values = {}
      for (const r of routes) values[r.route] = spec.value(r, bound)
      return { field: spec.field, label: spec.label, unit: spec.unit, values }
    })
  }
}

/**
 * The verdict on the answers: identical across every upload and route, or not.
 * @param {boolean|null} agree the result's `summariesAgree`
 * @param {number} routeCount
 * @returns {import('../../lib/experiments/result-contract.js').Verdict}
 */
export function answersVerdict (agree, routeCount) {
  if (agree === true) {
    const which = routeCount === 2 ? 'both routes' : `all ${routeCount} routes`
    const text = routeCount > 1
      ? `✔ Answers identical: every upload to ${which} gave the same summary.`
      : '✔ Answers identical: every upload gave the same summary.'
    return { verdict: 'identical', ok: true, text }
  }
  if (agree === false) return { verdict: 'differ', ok: false, text: '✘ Answers differ: the routes (or uploads) did not give the same summary.' }
  return { verdict: 'none', ok: null, text: 'No answers to compare: no upload succeeded.' }
}

/**
 * The run's input in a few words, for the table's caption.
 * @param {{ bytes: number|null, size: number|null, format: string }} input
 * @param {{ concurrency: number, requests: number }} params
 */
export function inputCaption (input, params) {
  const what = input.bytes ? `${input.bytes.toLocaleString('en')} bytes` : input.size !== null && input.size !== undefined ? `${input.size.toLocaleString('en')} items` : ''
  return [what, input.format, `concurrency ${params.concurrency}`, `${params.requests} uploads per route`].filter(Boolean).join(', ')
}
