/**
 * A record's figures, as `npm run runs -- compare` lines them up: every number its results report, by what it belongs to (a
 * route, or a cell of the bench) and by name. Read from the result contract's members alone (lib/experiments/result-contract.js):
 * `tables` (a route's column, a row's field) and `cells` (a cell's numeric members, its `server` and `latencyMs`), never from
 * what experiment made them. Where a cell has `measurements` (the bench's repeats), each figure also has the range of the
 * repeats. More: README.md, "figures.js".
 */

/** The three measures compare shows by default, each the first of its names a record has. */
export const MEASURES = Object.freeze([
  Object.freeze({ name: 'peak', label: 'peak above idle', fields: Object.freeze(['peakAboveIdle']) }),
  Object.freeze({ name: 'throughput', label: 'throughput', fields: Object.freeze(['mbPerSecond', 'reqPerSecond', 'mibPerSecond']) }),
  Object.freeze({ name: 'latency', label: 'latency p99', fields: Object.freeze(['latency.p99']) })
])

/** A cell's members that may say which cell it is, in the order its key gives them. */
const COORDINATES = Object.freeze(['route', 'mode', 'kind', 'format', 'size', 'hwm', 'batch', 'concurrency'])

/**
 * The coordinates that tell the cells of some records apart: those whose values differ between cells, and the route always. Two
 * runs are keyed alike when this is asked of both: a bench of one size at one concurrency is keyed by route alone, as a run of
 * the engine is.
 */
export function coordinatesOf (records) {
  const values = new Map(COORDINATES.map(function none (name) { return [name, new Set()] }))
  for (const record of records) {
    for (const cell of Array.isArray(record.results?.cells) ? record.results.cells : []) {
      for (const name of COORDINATES) if (cell !== null && typeof cell === 'object'
        && cell[name] !== undefined) values.get(name).add(JSON.stringify(cell[name]))
    }
  }
  return COORDINATES.filter(function tells (name) { return values.get(name).size > 1 || (name === 'route' && values.get(name).size > 0) })
}

/** A contract unit, or a member's name, as the unit its figure is compared in. */
function unitOf (name, contractUnit) {
  if (contractUnit === 'MiB' || contractUnit === 'MB') return 'bytes'
  if (contractUnit === 'ms' || contractUnit === 'MB/s' || contractUnit === 'count') return contractUnit
  if (/^latency\./.test(name) || /Ms$/.test(name)) return 'ms'
  if (/(AboveIdle|Rss|Bytes)$/.test(name) || name === 'bytes') return 'bytes'
  if (name === 'mbPerSecond') return 'MB/s'
  if (name === 'mibPerSecond') return 'MiB/s'
  if (name === 'reqPerSecond') return 'req/s'
  return 'count'
}

function cellNumbers (cell) {
  const out = new Map()
  for (const [key, value] of Object.entries(cell)) {
    if (COORDINATES.includes(key)) continue
    if (typeof value === 'number' && Number.isFinite(value)) {
      const latency = /^latency(\w+)Ms$/.exec(key)
      out.set(latency ? `latency.${latency[1].toLowerCase()}` : key, value)
    }
  }
  for (const [inner, prefix] of [['latencyMs', 'latency.'], ['server', '']]) {
    const figures = cell[inner]
    if (figures === null || typeof figures !== 'object') continue
    for (const [key, value] of Object.entries(figures)) {
      if (typeof value === 'number' && Number.isFinite(value) && !out.has(`${prefix}${key}`)) out.set(`${prefix}${key}`, value)
    }
  }
  return out
}

function cellKey (cell, index, coordinates) {
  const parts = []
  for (const name of coordinates) {
    const value = cell[name]
    const shown = typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))
    if (shown) parts.push(name === 'concurrency' ? `x${value}` : String(value))
  }
  return parts.length === 0 ? `cell ${index + 1}` : parts.join(' ')
}

/** An array row's parts: "Latency avg / p99" with two values gives `latency.avg` and `latency.p99`. */
function partNames (row, count) {
  const parts = row.label.split(' / ')
  if (parts.length !== count) return Array.from({ length: count }, function nth (_, k) { return `${row.field}.${k + 1}` })
  return parts.map(function lastWord (part) {
    return `${row.field}.${part.trim().split(/\s+/).at(-1).toLowerCase().replace(/[^a-z0-9]/g, '')}`
  })
}

/** The least and the greatest of some numbers, by a loop: a record's repeats are too many to spread into arguments. */
function lowest (values) {
  let min = Infinity
  for (const v of values) if (v < min) min = v
  return min
}

function highest (values) {
  let max = -Infinity
  for (const v of values) if (v > max) max = v
  return max
}

/**
 * Every figure of a checked record's results, by `key|name`: `{ key, route, name, unit, value, min, max, n }`, `min`, `max` and
 * `n` of the repeats (n 1: none). `coordinates` key its cells (coordinatesOf: of both records, to compare two).
 */
export function figuresOf (record, coordinates = coordinatesOf([record])) {
  const figures = new Map()
  function add (key, route, name, unit, value, repeats = []) {
    const id = `${key}|${name}`
    if (figures.has(id)) return
    const n = repeats.length
    figures.set(id, {
      key,
      route,
      name,
      unit,
      value,
      min: n > 1 ? lowest(repeats) : null,
      max: n > 1 ? highest(repeats) : null,
      n: Math.max(1, n)
    })
  }
  const results = record.results ?? {}
  const keys = new Map()
  for (const [index, cell] of (Array.isArray(results.cells) ? results.cells : []).entries()) {
    if (cell === null || typeof cell !== 'object') continue
    let key = cellKey(cell, index, coordinates)
    // two cells alike in every coordinate are told apart by their place
    const seen = (keys.get(key) ?? 0) + 1
    keys.set(key, seen)
    if (seen > 1) key = `${key} #${seen}`
    const repeats = Array.isArray(cell.measurements)
      ? cell.measurements.filter(function isObject (m) { return m !== null && typeof m === 'object' }).map(cellNumbers) : []
    for (const [name, value] of cellNumbers(cell)) {
      const values = repeats.map(function valueOf (m) { return m.get(name) }).filter(Number.isFinite)
      const route = typeof cell.route === 'string' ? cell.route : null
      add(key, route, name, unitOf(name), value, values.length === repeats.length ? values : [])
    }
  }
  for (const table of Array.isArray(results.tables) ? results.tables : []) {
    for (const column of table.columns) {
      const key = column.route ?? column.key
      for (const row of table.rows) {
        // a column's key is the record's: 'toString' is a column's name, not Object.prototype's
        const value = Object.hasOwn(row.values, column.key) ? row.values[column.key] : undefined
        const unit = unitOf(row.field, row.unit)
        if (typeof value === 'number' && Number.isFinite(value)) add(key, column.route ?? null, row.field, unit, value)
        if (Array.isArray(value)) {
          const names = partNames(row, value.length)
          value.forEach(function part (v, k) {
            if (typeof v === 'number' && Number.isFinite(v)) add(key, column.route ?? null, names[k], unitOf(names[k], row.unit), v)
          })
        }
      }
    }
  }
  return figures
}

/**
 * The figure a name stands for in one key's figures: a measure (`peak`, `throughput`, `latency`) is the first of its fields
 * there; any other name is itself.
 */
export function figureFor (figures, key, name) {
  const measure = MEASURES.find(function named (m) { return m.name === name })
  for (const field of measure?.fields ?? [name]) {
    const figure = figures.get(`${key}|${field}`)
    if (figure !== undefined) return figure
  }
  return null
}

/** The keys of a record's figures, in the order met. */
export function keysOf (figures) {
  return [...new Set([...figures.values()].map(function key (f) { return f.key }))]
}
