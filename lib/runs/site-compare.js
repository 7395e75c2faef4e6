/**
 * The sites that moved between two runs (`npm run runs -- compare`, the dashboard's overlay): each route's top sites of A and of
 * B (their records' `timeline.sites`, sites.js) matched by line and function, whatever thread or kind took them, with what each
 * allocated and the most it held in both runs, the largest change first. Nothing of Node's: the page imports it.
 */
import { siteLine } from '../allocation/site.js'

/** Sites listed per route; `all` lists more. */
export const SITE_ROWS = Object.freeze({ some: 5, all: 20 })

/** A route's sites as one entry per line and function: bytes added up over threads and kinds. */
function byLine (entry) {
  const lines = new Map()
  for (const site of entry?.sites ?? []) {
    const line = siteLine(site)
    const sum = lines.get(line) ?? { line, kinds: new Set(), allocatedBytes: 0, heldBytes: null }
    sum.kinds.add(site.kind)
    sum.allocatedBytes += site.allocatedBytes
    if (site.heldBytes !== null) sum.heldBytes = (sum.heldBytes ?? 0) + site.heldBytes
    lines.set(line, sum)
  }
  return lines
}

function routeEntry (record, route) {
  return record.timeline.sites?.routes.find(function named (r) { return r.route === route }) ?? null
}

/** How far a line moved: the larger of its two changes, bytes. */
function moved (row) {
  return Math.max(Math.abs(row.allocated.difference), Math.abs(row.held.difference ?? 0))
}

/**
 * Two checked records' sites: `{ routes: [{ route, rows: [{ line, kinds, allocated, held }], more }], without }`, where
 * `allocated` and `held` are `{ a, b, difference }`, `more` the rows not listed and `without` the runs with no sites.
 */
export function compareSites (a, b, { all = false } = {}) {
  const siteRoutes = function siteRoutes (record) { return record.timeline.sites?.routes ?? [] }
  const without = [['A', a], ['B', b]].filter(function none ([, r]) { return siteRoutes(r).length === 0 })
    .map(function label ([name]) { return name })
  const routes = []
  for (const record of [a, b]) for (const entry of siteRoutes(record)) if (!routes.includes(entry.route)) routes.push(entry.route)
  const out = []
  for (const route of routes) {
    const linesA = byLine(routeEntry(a, route))
    const linesB = byLine(routeEntry(b, route))
    const rows = []
    for (const line of new Set([...linesA.keys(), ...linesB.keys()])) {
      const sa = linesA.get(line) ?? null
      const sb = linesB.get(line) ?? null
      const heldA = sa?.heldBytes ?? null
      const heldB = sb?.heldBytes ?? null
      rows.push({
        line,
        kinds: [...new Set([...(sa?.kinds ?? []), ...(sb?.kinds ?? [])])].sort().join(', '),
        allocated: { a: sa?.allocatedBytes ?? null, b: sb?.allocatedBytes ?? null,
          difference: (sb?.allocatedBytes ?? 0) - (sa?.allocatedBytes ?? 0) },
        held: { a: heldA, b: heldB, difference: heldA === null && heldB === null ? null : (heldB ?? 0) - (heldA ?? 0) }
      })
    }
    rows.sort(function mostMoved (x, y) { return moved(y) - moved(x) || (x.line < y.line ? -1 : 1) })
    const shown = all ? SITE_ROWS.all : SITE_ROWS.some
    out.push({ route, rows: rows.slice(0, shown), more: Math.max(0, rows.length - shown) })
  }
  return { routes: out, without }
}
