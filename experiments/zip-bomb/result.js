/** The zip-bomb result's presentation (lib/experiments/result-contract.js): each route's answer and cost, and the verdict. */
import { formatDecimalBytes, formatMB } from '../../lib/util/units.js'
import { routesSideBySide } from '../results.js'

/** "10 GB of JSON in 10.2 MB of gzip", sizes by `format`. */
export function bombInWords (bomb, format = formatDecimalBytes) {
  return `${format(bomb.inflatedBytes)} of JSON in ${format(bomb.compressedBytes)} of ${bomb.codec ?? 'gzip'}`
}

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
  {
    field: 'inflated',
    label: 'Inflated before the answer',
    unit: 'MB',
    empty: 'not reported',
    value: function inflatedValue (r) { return Number.isFinite(r.inflatedBytesReached) ? r.inflatedBytesReached : null }
  },
  {
    field: 'peakAboveIdle',
    label: 'Server peak above idle',
    unit: 'MiB',
    value: function peakValue (r) { return r.server?.peakAboveIdle ?? r.server?.peakRss ?? null }
  }
])

/** The routes side by side, the bomb in the caption. */
export function bombTable (bomb, byRoute) {
  const ratio = Number.isFinite(bomb.ratio) ? ` (${Math.round(bomb.ratio).toLocaleString('en')}:1)` : ''
  const { columns, rows } = routesSideBySide('bomb', Object.values(byRoute), ROWS, function heading (route) { return `POST /${route}` })
  return { name: 'bomb', caption: `a ${bomb.variant} bomb, ${bombInWords(bomb, formatMB)}${ratio}`, columns, rows }
}

/** Survived or not: every route refused the bomb, or which did not and how. */
export function bombVerdict (byRoute) {
  const routes = Object.values(byRoute)
  const refused = routes.filter(function wasRefused (r) { return r.outcome === 'refused' })
  if (refused.length === routes.length) {
    const by = routes.map(function name (r) { return `/${r.route}` }).join(' and ')
    return { verdict: 'refused', ok: true, text: `✔ Refused by ${by}: the server survived the bomb.` }
  }
  const text = routes.filter(function notRefused (r) { return r.outcome !== 'refused' }).map(function why (r) {
    if (r.outcome === 'accepted') return `✘ /${r.route} accepted the bomb.`
    return `✘ /${r.route} never answered: the worker was killed (see the banner on the chart).`
  }).join(' ')
  return { verdict: 'not refused', ok: false, text }
}
