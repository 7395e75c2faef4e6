// The result contract: what an experiment's run(ctx) resolves to, which every consumer renders from alone.
// validateResult lists what is wrong with one; README.md says why.

/**
 * A chart, as lib/measure/report.js draws it (Chart.js and SVG) and the dashboard could.
 * @typedef {{ title: string, x: string, y: string, logX?: boolean, file?: string,
 *   xTicks?: Array<{ x: number, label: string }>,
 *   series: Array<{ label: string, dashed?: boolean, points: Array<{ x: number, y: number|null }> }> }} ChartSpec
 *   `file`: the SVG's name without `.svg` (default chart-<n>); `xTicks`: the SVG's x ticks, named
 *   (e.g. the body sizes of a run), in place of round numbers; `dashed`: a reference line, such as a target
 */

/**
 * A published figure beside the one this run measured (null: the cells to compute it were not run).
 * @typedef {{ label: string, value: number, unit: string, source: string, measured: number|null }} PublishedFigure
 */

/**
 * What the run shows, in a sentence. `ok`: true when the lesson held (answers agree, nothing left behind,
 * the bomb refused), false when it did not, null when there was nothing to judge.
 * @typedef {{ verdict: string, text: string, ok: boolean|null }} Verdict
 */

/**
 * A table shown as it is: a column per thing compared (a route, say), a row per measure.
 * A value is a number shown in the row's `unit`, a string shown as is, an array of numbers
 * (shown in the unit, joined by " / "), or null (shown as the row's `empty`, else "–").
 * `route` on a column: the page colours it as that route; `more` on a row: a lesson's view folds it away.
 * @typedef {{ key: string, label: string, route?: string }} TableColumn
 * @typedef {{ field: string, label: string, unit: Unit, empty?: string, more?: true,
 *   values: Record<string, number|string|null|Array<number|null>> }} TableRow
 * @typedef {{ name: string, caption?: string, columns: TableColumn[], rows: TableRow[] }} ResultTable
 */

/**
 * How a table's numbers are shown.
 * @typedef {'text'|'count'|'ms'|'MiB'|'MB'|'MB/s'} Unit
 */
const UNITS = Object.freeze(['text', 'count', 'ms', 'MiB', 'MB', 'MB/s'])

/**
 * A run's progress, as `ctx.progress` reports it: integer `done` of `total`, what is happening
 * (`stage`), on which route and in which cell, each a short text. Other members may ride along
 * for an experiment's own use; renderers show these.
 * @typedef {{ done: number, total: number, stage?: string, route?: string, cell?: string }} Progress
 */

/**
 * An experiment's result: `cells` or `tables` (or both), something to show. What each member holds: README.md.
 * @typedef {{ cells?: object[], cellLabels?: Record<string, string>, tables?: ResultTable[], charts?: ChartSpec[],
 *   published?: PublishedFigure[], verdicts?: Verdict[], caption?: string, server?: object }} ExperimentResult
 */

const isObject = function isObject (v) { return v !== null && typeof v === 'object' && !Array.isArray(v) }
const isNumberOrNull = function isNumberOrNull (v) { return v === null || (typeof v === 'number' && !Number.isNaN(v)) }

/**
 * What is wrong with a chart.
 * @param {string} [where] how the problems name it
 */
function validateChart (chart, where = 'chart') {
  if (!isObject(chart)) return [`${where} is not an object`]
  const problems = []
  for (const key of ['title', 'x', 'y']) if (typeof chart[key] !== 'string') problems.push(`${where}.${key} is not a string`)
  const plainName = typeof chart.file === 'string' && /^[\w.-]+$/.test(chart.file)
  if (chart.file !== undefined && !plainName) problems.push(`${where}.file is not a plain file name`)
  if (chart.xTicks !== undefined) {
    if (!Array.isArray(chart.xTicks)) problems.push(`${where}.xTicks is not an array`)
    else {
      chart.xTicks.forEach(function checkTick (t, i) {
        if (!isObject(t) || typeof t.x !== 'number' || typeof t.label !== 'string') {
          problems.push(`${where}.xTicks[${i}] is not { x: number, label: string }`)
        }
      })
    }
  }
  if (!Array.isArray(chart.series) || chart.series.length === 0) {
    problems.push(`${where}.series is not a non-empty array`)
    return problems
  }
  chart.series.forEach(function checkSeries (s, i) {
    const at = `${where}.series[${i}]`
    if (!isObject(s) || typeof s.label !== 'string') { problems.push(`${at}.label is not a string`); return }
    if (!Array.isArray(s.points)) { problems.push(`${at}.points is not an array`); return }
    s.points.forEach(function checkPoint (p, k) {
      const point = isObject(p) && typeof p.x === 'number' && isNumberOrNull(p.y)
      if (!point) problems.push(`${at}.points[${k}] is not { x: number, y: number|null }`)
    })
  })
  return problems
}

function validateTable (table, where) {
  if (!isObject(table)) return [`${where} is not an object`]
  const problems = []
  if (typeof table.name !== 'string' || !/^[a-z][a-z0-9-]*$/.test(table.name)) problems.push(`${where}.name is not a kebab-case name`)
  if (table.caption !== undefined && typeof table.caption !== 'string') problems.push(`${where}.caption is not a string`)
  if (!Array.isArray(table.columns) || table.columns.length === 0) return [...problems, `${where}.columns is not a non-empty array`]
  const keys = new Set()
  table.columns.forEach(function checkColumn (c, i) {
    const column = isObject(c) && typeof c.key === 'string' && typeof c.label === 'string'
    if (!column) problems.push(`${where}.columns[${i}] is not { key, label }`)
    else keys.add(c.key)
    if (c?.route !== undefined && typeof c.route !== 'string') problems.push(`${where}.columns[${i}].route is not a string`)
  })
  if (!Array.isArray(table.rows)) return [...problems, `${where}.rows is not an array`]
  table.rows.forEach(function checkRow (r, i) {
    const at = `${where}.rows[${i}]`
    if (!isObject(r)) { problems.push(`${at} is not an object`); return }
    if (typeof r.field !== 'string' || typeof r.label !== 'string') problems.push(`${at} has no field and label`)
    if (!UNITS.includes(r.unit)) problems.push(`${at}.unit "${r.unit}" is not one of ${UNITS.join(', ')}`)
    if (r.empty !== undefined && typeof r.empty !== 'string') problems.push(`${at}.empty is not a string`)
    if (r.more !== undefined && r.more !== true) problems.push(`${at}.more is not true`)
    if (!isObject(r.values)) { problems.push(`${at}.values is not an object`); return }
    for (const [key, value] of Object.entries(r.values)) {
      if (!keys.has(key)) problems.push(`${at}.values.${key} names no column`)
      const fine = typeof value === 'string' || isNumberOrNull(value) || (Array.isArray(value) && value.every(isNumberOrNull))
      if (!fine) problems.push(`${at}.values.${key} is not a number, a string, null or an array of numbers`)
    }
  })
  return problems
}

/**
 * What is wrong with an experiment's result, as a list of sentences naming the member.
 * @returns {string[]} empty when the result keeps the contract
 */
export function validateResult (result) {
  if (!isObject(result)) return ['the result is not an object']
  const problems = []
  const hasCells = Array.isArray(result.cells) && result.cells.length > 0
  const hasTables = Array.isArray(result.tables) && result.tables.length > 0
  if (!hasCells && !hasTables) problems.push('the result has neither cells nor tables: nothing to show')
  if (result.cells !== undefined) {
    if (!Array.isArray(result.cells)) problems.push('cells is not an array')
    else {
      result.cells.forEach(function checkCell (c, i) {
        if (!isObject(c)) problems.push(`cells[${i}] is not an object`)
        else if (c.server !== undefined && c.server !== null && !isObject(c.server)) problems.push(`cells[${i}].server is not an object`)
      })
    }
  }
  const labels = result.cellLabels
  if (labels !== undefined && (!isObject(labels) || !Object.values(labels).every(function text (l) { return typeof l === 'string' }))) {
    problems.push('cellLabels is not an object of strings')
  }
  if (result.tables !== undefined) {
    if (!Array.isArray(result.tables)) problems.push('tables is not an array')
    else result.tables.forEach(function checkTable (t, i) { for (const p of validateTable(t, `tables[${i}]`)) problems.push(p) })
  }
  if (result.charts !== undefined) {
    if (!Array.isArray(result.charts)) problems.push('charts is not an array')
    else result.charts.forEach(function checkChart (c, i) { for (const p of validateChart(c, `charts[${i}]`)) problems.push(p) })
  }
  if (result.published !== undefined) {
    if (!Array.isArray(result.published)) problems.push('published is not an array')
    else {
      result.published.forEach(function checkPublished (p, i) {
        const at = `published[${i}]`
        if (!isObject(p)) { problems.push(`${at} is not an object`); return }
        for (const key of ['label', 'unit', 'source']) if (typeof p[key] !== 'string') problems.push(`${at}.${key} is not a string`)
        if (typeof p.value !== 'number') problems.push(`${at}.value is not a number`)
        if (!isNumberOrNull(p.measured)) problems.push(`${at}.measured is not a number or null`)
      })
    }
  }
  if (result.verdicts !== undefined) {
    if (!Array.isArray(result.verdicts)) problems.push('verdicts is not an array')
    else {
      result.verdicts.forEach(function checkVerdict (v, i) {
        const at = `verdicts[${i}]`
        if (!isObject(v)) { problems.push(`${at} is not an object`); return }
        if (typeof v.verdict !== 'string' || typeof v.text !== 'string') problems.push(`${at} is not { verdict, text }`)
        if (v.ok !== true && v.ok !== false && v.ok !== null) problems.push(`${at}.ok is not true, false or null`)
      })
    }
  }
  if (result.caption !== undefined && typeof result.caption !== 'string') problems.push('caption is not a string')
  if (result.server !== undefined && !isObject(result.server)) problems.push('server is not an object')
  return problems
}

/** What is wrong with a progress report. */
export function validateProgress (progress) {
  if (!isObject(progress)) return ['the progress is not an object']
  const problems = []
  if (!Number.isInteger(progress.done) || !Number.isInteger(progress.total) || progress.done < 0 || progress.done > progress.total) {
    problems.push(`done/total ${progress.done}/${progress.total} are not integers with 0 <= done <= total`)
  }
  for (const key of ['stage', 'route', 'cell']) {
    if (progress[key] !== undefined && progress[key] !== null && typeof progress[key] !== 'string') problems.push(`${key} is not a string`)
  }
  return problems
}
