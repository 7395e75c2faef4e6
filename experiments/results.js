/** Pieces of the result contract (lib/experiments/result-contract.js) that several experiments build alike. */

/** A chart line per group: the cells whose `key` is the group's value, as { x, y } points sorted by x; empty groups left out. */
export function linesBy (cells, key, groups, x, y) {
  const lines = []
  for (const [value, label] of groups) {
    const points = cells.filter(function inGroup (c) { return c[key] === value })
      .map(function point (c) { return { x: x(c), y: y(c) } })
      .sort(function byX (a, b) { return a.x - b.x })
    if (points.length) lines.push({ label, points })
  }
  return lines
}

/** The published figures, each with the measured one beside it from `measured[pub.figure]` (null: not run). */
export function publishedWith (published, measured) {
  return published.map(function withMeasured (pub) {
    return { label: pub.label, value: pub.value, unit: pub.unit, source: pub.source, measured: measured[pub.figure] ?? null }
  })
}

/** The routes side by side: a column per route, a row per spec ({ field, label, unit, empty?, value(route, ...args) }). */
export function routesSideBySide (name, routes, specs, heading, ...args) {
  return {
    name,
    columns: routes.map(function column (r) { return { key: r.route, label: heading(r.route), route: r.route } }),
    rows: specs.map(function row (spec) {
      const values = {}
      for (const r of routes) values[r.route] = spec.value(r, ...args)
      const extras = { ...(spec.empty ? { empty: spec.empty } : {}), ...(spec.more ? { more: true } : {}) }
      return { field: spec.field, label: spec.label, unit: spec.unit, ...extras, values }
    })
  }
}

/** A fresh server's memory figures (lib/measure/fresh-server.js) as a cell's `server`. */
export function serverFigures ({ idleRss, peakRss, peakAboveIdle, peakSource }) {
  return { idleRss, peakRss, peakAboveIdle, peakSource }
}

/** Failed requests counted by error type. */
export function errorsByType (results) {
  const errors = {}
  for (const r of results) {
    if (r.status !== 200) errors[r.errorType] = (errors[r.errorType] ?? 0) + 1
  }
  return errors
}
