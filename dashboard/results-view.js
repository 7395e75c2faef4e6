/** A finished run's results, drawn from the result contract alone: the view knows no experiment. */
import { jsonText } from '/lib/util/escape.js'
import { breakAfterDots, make } from './dom.js'
import { formatCount, formatMB, formatMiB, formatMs } from './format.js'

/**
 * A run's results from the result contract alone: its `tables`, its `cells` as a table, `published` beside measured,
 * its `verdicts`, else the JSON. `compact` (a lesson's view): a few cells drawn turned, in two halves.
 */
export function renderResults (box, run, { compact = false } = {}) {
  const result = run.result ?? {}
  const parts = [make('h2', {}, 'Results')]
  for (const table of Array.isArray(result.tables) ? result.tables : []) parts.push(...tableParts(table, run, compact))
  const hasTables = parts.length > 1
  if (Array.isArray(result.cells) && result.cells.length > 0) {
    const cells = renderCells(result.cells, run, result.cellLabels, compact)
    // a compact view shows the experiment's own table; every cell's figures are one click away
    parts.push(compact && hasTables ? folded('Every figure of the run', cells) : cells)
  }
  if (Array.isArray(result.published) && result.published.length > 0) {
    const published = renderPublished(result.published)
    parts.push(compact ? folded('Published figures, and what this run measured', published) : published)
  }
  for (const v of Array.isArray(result.verdicts) ? result.verdicts : []) {
    const attributes = { class: 'verdict', 'data-agree': String(v.ok ?? null), 'data-verdict': String(v.verdict ?? '') }
    parts.push(make('p', attributes, String(v.text ?? '')))
  }
  if (parts.length === 1) {
    // jsonText: its strings' control characters and bidi marks escaped, its own line breaks kept
    const text = jsonText(result, 1)
    parts.push(make('pre', { class: 'result-json' }, document.createTextNode(text.length > 4000 ? `${text.slice(0, 4000)}…` : text)))
  }
  box.replaceChildren()
  for (const part of parts) box.append(part)
}

/** A part of the results behind a summary a reader opens. */
function folded (summary, part) {
  return make('details', { class: 'results-more' }, make('summary', {}, summary), part)
}

/** A number in a contract unit (lib/experiments/result-contract.js UNITS). */
function formatIn (unit, value) {
  if (unit === 'ms') return formatMs(value)
  if (unit === 'MiB') return formatMiB(value)
  if (unit === 'MB') return formatMB(value)
  if (unit === 'MB/s') return `${value} MB/s`
  if (unit === 'count') return formatCount(value)
  return String(value)
}

function formatTableValue (row, value) {
  if (value === null || value === undefined) return row.empty ?? '–'
  if (typeof value === 'string') return value
  if (Array.isArray(value)) return value.map(function inUnit (v) { return v === null ? '–' : formatIn(row.unit, v) }).join(' / ')
  return formatIn(row.unit, value)
}

/** A contract table; a compact view folds its rows marked `more` into a second table one click away. */
function tableParts (spec, run, compact) {
  const more = spec.rows.filter(function folds (row) { return row.more === true })
  if (!compact || more.length === 0) return [renderTable(spec, run)]
  const shown = { ...spec, rows: spec.rows.filter(function stays (row) { return row.more !== true }) }
  return [renderTable(shown, run), folded('More figures of this run', renderTable({ ...spec, caption: undefined, rows: more }, run))]
}

/** A contract table: a column per thing compared, a row per measure. */
function renderTable (spec, run) {
  const table = make('table', { class: `results ${spec.name}`, 'data-run-id': run.id })
  table.append(make('caption', {}, spec.caption ? `Run ${shortId(run.id)}: ${spec.caption}` : describeRun(run)))
  const head = make('tr', {}, make('th', { scope: 'col' }, 'Measure'))
  for (const c of spec.columns) {
    head.append(make('th', { scope: 'col', ...(c.route ? { class: `route-${c.route}` } : {}) }, ...breakAfterDots(c.label)))
  }
  table.append(make('thead', {}, head))
  const body = make('tbody')
  for (const row of spec.rows) {
    const tr = make('tr', {}, make('th', { scope: 'row' }, row.label))
    for (const c of spec.columns) {
      // a column's key is the record's: 'toString' names a column, not Object.prototype's method
      const held = row.values !== null && typeof row.values === 'object' && Object.hasOwn(row.values, c.key)
      const value = held ? row.values[c.key] : undefined
      tr.append(make('td', { 'data-route': c.route ?? c.key, 'data-field': row.field }, formatTableValue(row, value)))
    }
    body.append(tr)
  }
  table.append(body)
  return table
}

/** Figures worth a column when a cell has them, beyond its own scalar members. */
const CELL_EXTRAS = Object.freeze([
  {
    label: 'server RSS above idle, peak',
    value: function peakAbove (c) { return Number.isFinite(c.server?.peakAboveIdle) ? formatMiB(c.server.peakAboveIdle) : null }
  },
  { label: 'latency avg', value: function latencyAvg (c) { return Number.isFinite(c.latencyMs?.avg) ? formatMs(c.latencyMs.avg) : null } }
])

const COMPACT_TURNED_CELLS = 3 // cells a compact view draws turned, a column each: more would not fit half its width
const COMPACT_HALF_ROWS = 6 // quantities a turned table holds before a compact view splits it into two halves side by side
const COMPACT_COLUMNS = 7 // columns a compact view's table of many cells shows (its first): the rest are one click away

/**
 * The cells: a row each, a column per scalar member and figure worth one; one cell is drawn turned (a row per
 * quantity), so twenty fit the page; a compact view turns up to three, in two halves side by side.
 */
function renderCells (cells, run, labels, compact) {
  const keys = new Set()
  for (const cell of cells) {
    for (const [key, value] of Object.entries(cell)) {
      if (value !== null && typeof value !== 'object') keys.add(key)
    }
  }
  const heading = function heading (key) { return isObject(labels) && typeof labels[key] === 'string' ? labels[key] : fieldHeading(key) }
  const columns = [...keys].map(function column (key) {
    const value = function scalar (cell) { return formatCell(key, Object.hasOwn(cell, key) ? cell[key] : undefined) }
    return { label: heading(key), value, key }
  })
  const extras = CELL_EXTRAS.filter(function present (x) { return cells.some(function has (c) { return x.value(c) !== null }) })
  for (const x of extras) columns.push({ label: x.label, value: function extra (cell) { return x.value(cell) ?? '–' }, key: null })
  if (compact && cells.length <= COMPACT_TURNED_CELLS) return turnedHalves(cells, columns, run)
  if (compact) return manyCells(cells, columns, run)
  const table = make('table', { class: cells.length === 1 ? 'results cell-turned' : 'results', 'data-run-id': run.id })
  table.append(make('caption', {}, describeRun(run)))
  const body = make('tbody')
  if (cells.length === 1) {
    table.append(make('thead', {}, make('tr', {}, make('th', { scope: 'col' }, 'Measure'), make('th', { scope: 'col' }, 'This run'))))
    for (const c of columns) body.append(make('tr', {}, make('th', { scope: 'row' }, c.label), valueCell(c, cells[0])))
  } else {
    const head = columns.map(function head (c) {
      return make('th', c.key ? { scope: 'col', 'data-key': c.key } : { scope: 'col' }, c.label)
    })
    table.append(make('thead', {}, make('tr', {}, ...head)))
    for (const cell of cells) {
      body.append(make('tr', {}, ...columns.map(function value (c) { return valueCell(c, cell) })))
    }
  }
  table.append(body)
  // many columns: the table scrolls sideways in its box rather than run under the side panel
  return make('div', { class: 'table-scroll' }, table)
}

/** A few cells turned, a column each headed by what sets them apart, its quantities in two tables side by side. */
function turnedHalves (cells, columns, run) {
  const { names, keys } = cellNames(cells)
  // what names each cell's column is not a row again
  const rows = columns.filter(function notAName (c) { return !keys.includes(c.key) })
  const half = rows.length > COMPACT_HALF_ROWS ? Math.ceil(rows.length / 2) : rows.length
  const tables = [rows.slice(0, half), rows.slice(half)].filter(function any (part) { return part.length > 0 })
    .map(function turned (part) {
      const named = names.map(function name (n) { return make('th', { scope: 'col' }, n) })
      const head = make('tr', {}, make('th', { scope: 'col' }, 'Measure'), ...named)
      const rows = part.map(function row (c) {
        return make('tr', {}, make('th', { scope: 'row' }, c.label), ...cells.map(function value (cell) { return valueCell(c, cell) }))
      })
      return make('table', { class: 'results cell-turned', 'data-run-id': run.id }, make('thead', {}, head), make('tbody', {}, ...rows))
    })
  return make('div', { class: 'cells-compact' }, make('p', { class: 'cells-caption' }, describeRun(run)),
    make('div', { class: 'cells-halves' }, ...tables))
}

/** Many cells in a compact view: a row each, less the columns all hold the same value in (named once in the caption). */
function manyCells (cells, columns, run) {
  const same = columns.filter(function constant (c) { return new Set(cells.map(c.value)).size === 1 })
  const shown = columns.filter(function varies (c) { return !same.includes(c) })
  const alike = same.map(function named (c) { return `${c.label} ${c.value(cells[0])}` }).join(', ')
  const caption = same.length > 0 ? `${describeRun(run)}; the same in every row: ${alike}` : describeRun(run)
  const table = cellRows(cells, shown.slice(0, COMPACT_COLUMNS), run, caption)
  if (shown.length <= COMPACT_COLUMNS) return make('div', { class: 'table-scroll' }, table)
  const every = make('div', { class: 'table-scroll' }, cellRows(cells, shown, run, caption))
  return make('div', {}, make('div', { class: 'table-scroll' }, table), folded('Every column of the run', every))
}

/** A table of cells, a row each, in `columns`. */
function cellRows (cells, columns, run, caption) {
  return make('table', { class: 'results', 'data-run-id': run.id },
    make('caption', {}, caption),
    make('thead', {}, make('tr', {}, ...columns.map(function head (c) { return make('th', { scope: 'col' }, c.label) }))),
    make('tbody', {}, ...cells.map(function row (cell) {
      return make('tr', {}, ...columns.map(function value (c) { return valueCell(c, cell) }))
    })))
}

/** Each cell's name: its text members that differ from cell to cell ("batch", "stream"), else "This run" or "Cell 2". */
function cellNames (cells) {
  if (cells.length === 1) return { names: ['This run'], keys: [] }
  const keys = Object.keys(cells[0]).filter(function differs (key) {
    const texts = cells.every(function text (c) { return typeof c[key] === 'string' })
    return texts && new Set(cells.map(function of (c) { return c[key] })).size > 1
  })
  const names = cells.map(function name (cell, i) {
    return keys.length > 0 ? keys.map(function of (k) { return cell[k] }).join(', ') : `Cell ${i + 1}`
  })
  return { names, keys }
}

function valueCell (column, cell) {
  return make('td', column.key ? { 'data-field': column.key } : {}, column.value(cell))
}

function isObject (v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

/** The published figures beside what this run measured. */
function renderPublished (published) {
  const table = make('table', { class: 'results published' })
  table.append(make('caption', {}, 'Published figures, and what this run measured'))
  table.append(make('thead', {}, make('tr', {},
    make('th', { scope: 'col' }, 'Figure'), make('th', { scope: 'col' }, 'Published'), make('th', { scope: 'col' }, 'Measured'))))
  const body = make('tbody')
  for (const p of published) {
    const unit = p.unit ? ` ${p.unit}` : ''
    body.append(make('tr', {},
      make('th', { scope: 'row' }, String(p.label ?? '')),
      make('td', {}, `${p.value ?? '–'}${unit}`),
      make('td', {}, p.measured === null || p.measured === undefined ? 'not run' : `${p.measured}${unit}`)))
  }
  table.append(body)
  return table
}

/** A cell's scalar by what its name says it is: ms, bytes of memory, bytes sent, or a count. */
function formatCell (key, value) {
  if (value === undefined || value === null) return '–'
  if (typeof value !== 'number') return String(value)
  if (/(^ms|Ms)$/.test(key)) return formatMs(value)
  if (/^mbPerSecond$/.test(key)) return `${value} MB/s`
  if (/^mibPerSecond$/.test(key)) return `${value} MiB/s`
  if (/(Rss|AboveIdle)$/.test(key)) return formatMiB(value)
  if (/(^b|B)ytes$/.test(key)) return formatMB(value)
  return Number.isInteger(value) ? formatCount(value) : String(value)
}

/** "Run 1a2b3c4d: <what it was given>": the result's caption, else its parameters. */
function describeRun (run) {
  if (typeof run.result?.caption === 'string') return `Run ${shortId(run.id)}: ${run.result.caption}`
  const given = Object.entries(run.params ?? {}).filter(function shown ([, v]) { return v !== null && v !== '' && typeof v !== 'object' })
  const pairs = given.map(function pair ([k, v]) { return `${fieldHeading(k)} ${typeof v === 'number' ? formatCount(v) : v}` })
  return `Run ${shortId(run.id)}: ${pairs.join(', ')}`
}

/** Headings for a record's fields that words split at their capitals would not say well. */
const HEADINGS = Object.freeze({
  hwm: 'read size', mbPerSecond: 'throughput', mibPerSecond: 'throughput', wallMs: 'time', ms: 'time',
  cpuUserMs: 'CPU, user', cpuSystemMs: 'CPU, kernel', sinkReads: 'reads by the receiver', rssAboveIdle: 'RSS above idle',
  peakRss: 'peak RSS', peakRssAboveIdle: 'peak RSS above idle'
})

/** A field's name as a heading: "peakAboveIdle" reads "peak above idle", "latencyMs" "latency". */
export function fieldHeading (key) {
  if (Object.hasOwn(HEADINGS, key)) return HEADINGS[key]
  const words = String(key).replace(/Ms$/, '').replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase().replace(/\brss\b/g, 'RSS')
  return words === '' ? String(key) : words
}

/** A run id as the page shows it: a random id by its first eight characters, a name (`lesson-zip-bomb`) whole. */
export function shortId (id) {
  const text = String(id)
  return /^[0-9a-f]{8}-[0-9a-f]{4}-/.test(text) ? text.slice(0, 8) : text
}
