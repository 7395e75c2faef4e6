/**
 * The zip-bomb result's presentation, as the result contract
 * (lib/experiments/result-contract.js) carries it: what each route answered, how fast,
 * how much it inflated and what it cost, and whether the server survived.
 */
import { formatMB } from '../../lib/util/units.js'

const ROWS = Object.freeze([
  {
    field: 'answer',
    label: 'Answer',
    unit: 'text',
    value: function answerValue (r) {
      if (r.status === 0) return 'none: the connection was cut'
      return r.status === 200 ? '200: accepted' : `${r.status} ${r.errorType ?? ''}`.trim()
    }
  },
  { field: 'ms', label: 'Time to answer', unit: 'ms', value: function msValue (r) { return r.ms } },
  { field: 'inflated', label: 'Inflated before the answer', unit: 'MB', empty: 'not reported', value: function inflatedValue (r) { return Number.isFinite(r.inflatedBytesReached) ? r.inflatedBytesReached : null } },
  { field: 'peakAboveIdle', label: 'Server peak above idle', unit: 'MiB', value: function peakValue (r) { return r.server?.peakAboveIdle ?? r.server?.peakRss ?? null } }
])

/**
 * The routes side by side, the bomb in the caption.
 * @param {object} bomb the result's `bomb`
 * @param {Record<string, object>} byRoute the result's `routes`
 * @returns {import('../../lib/experiments/result-contract.js').ResultTable}
 */
export function bombTable (bomb, byRoute) {
  const routes = Object.values(byRoute)
  const ratio = Number.isFinite(bomb.ratio) ? ` (${Math.round(bomb.ratio).toLocaleString('en')}:1)` : ''
  return {
    name: 'bomb',
    caption: `a ${bomb.variant} bomb, ${formatMB(bomb.inflatedBytes)} of JSON in ${formatMB(bomb.compressedBytes)} of ${bomb.codec ?? 'gzip'}${ratio}`,
    columns: routes.map(function column (r) { return { key: r.route, label: `POST /${r.route}`, route: r.route } }),
    rows: ROWS.map(function row (spec) {
      const values = {}
      for (const r of routes) values[r.route] = spec.value(r)
      return { field: spec.field, label: spec.label, unit: spec.unit, ...(spec.empty ? { empty: spec.empty } : {}), values }
    })
  }
}

/**
 * Survived or not: every route refused the bomb, or which did not and how.
 * @param {Record<string, object>} byRoute
 * @returns {import('../../lib/experiments/result-contract.js').Verdict}
 */
export function bombVerdict (byRoute) {
  const routes = Object.values(byRoute)
  const refused = routes.filter(function wasRefused (r) { return r.outcome === 'refused' })
  if (refused.length === routes.length) {
    return { verdict: 'refused', ok: true, text: `✔ Refused by ${routes.map(function name (r) { return `/${r.route}` }).join(' and ')}: the server survived the bomb.` }
  }
  const text = routes.filter(function notRefused (r) { return r.outcome !== 'refused' }).map(function why (r) {
    return r.outcome === 'accepted' ? `✘ /${r.route} accepted the bomb.` : `✘ /${r.route} never answered: the worker was killed (see the banner on the chart).`
  }).join(' ')
  return { verdict: 'not refused', ok: false, text }
}
