/** Two recorded runs laid over each other, with compare's delta table (README.md). */
import { compareRecords } from '/lib/runs/compare.js'
import { formatDifference, formatFigure, formatRatio, formatSpread, formatWithRange } from '/lib/runs/figure-text.js'
import { compareSites } from '/lib/runs/site-compare.js'
import { OKABE_ITO, ROUTE_COLORS, backgroundPlugin, baseOptions, lineDataset, routeSpans, GRID, GRID_PROJECTOR } from './charts.js'
import { clipToArea, make } from './dom.js'
import { MiB } from '../lib/util/units.js'
import { describeRecord, recordTitle, routeKey } from './run-view.js'

/** A sample's `key` in MiB, null where it has none. */
function inMiB (key) {
  return function valueInMiB (s) { return Number.isFinite(s[key]) ? s[key] / MiB : null }
}

/** What each chart draws of both runs: the same colour in A and B, B dashed. */
const MEMORY_LINES = Object.freeze([
  { key: 'rss', label: 'RSS', color: OKABE_ITO.blue, width: 3, value: inMiB('rss') },
  { key: 'heapUsed', label: 'heap used', color: OKABE_ITO.skyBlue, width: 2, value: inMiB('heapUsed') },
  { key: 'arrayBuffers', label: 'array buffers', color: OKABE_ITO.orange, width: 2, value: inMiB('arrayBuffers') }
])
const LOOP_LINES = Object.freeze([
  { key: 'loopP99', label: 'loop delay p99', color: OKABE_ITO.blue, width: 2, value: function p99 (s) { return s.eventLoop?.p99 ?? null } }
])
const DASH = Object.freeze([8, 5])
const SPAN_ALPHA = 0.14
const BAR_PX = 6

/** Shades each run's requests, merged per route: A's filled with a bar along the top, B's outlined dashed along the bottom. */
const overlaySpansPlugin = {
  id: 'streamlabOverlaySpans',
  beforeDatasetsDraw (chart, args, options) {
    const { ctx, chartArea: area, scales: { x } } = chart
    clipToArea(ctx, area)
    ctx.font = `600 ${Math.round(globalThis.Chart.defaults.font.size * 0.85)}px ${globalThis.Chart.defaults.font.family}`
    for (const [i, run] of (options.runs ?? []).entries()) {
      const second = i === 1
      for (const span of routeSpans(run.requests, x.min, x.max, x.max)) {
        const x0 = x.getPixelForValue(span.start)
        const width = Math.max(3, x.getPixelForValue(span.end) - x0)
        const color = Object.hasOwn(ROUTE_COLORS, span.route) ? ROUTE_COLORS[span.route] : OKABE_ITO.black
        ctx.fillStyle = color
        ctx.strokeStyle = color
        ctx.globalAlpha = second ? SPAN_ALPHA / 2 : SPAN_ALPHA
        ctx.fillRect(x0, area.top, width, area.height)
        ctx.globalAlpha = 1
        if (second) {
          ctx.lineWidth = 2
          ctx.setLineDash(DASH)
          ctx.strokeRect(x0, area.top + 1, width, area.height - 2)
          ctx.fillRect(x0, area.bottom - BAR_PX, width, BAR_PX / 2)
          ctx.setLineDash([])
        } else {
          ctx.fillRect(x0, area.top, width, BAR_PX)
        }
        if (options.labels) {
          ctx.textBaseline = second ? 'bottom' : 'top'
          ctx.fillText(`/${span.route} ${second ? 'B' : 'A'}`, x0 + 3, second ? area.bottom - BAR_PX - 2 : area.top + BAR_PX + 3)
        }
      }
    }
    ctx.restore()
  }
}

/** A run's samples as points, x in seconds since its start. */
function pointsOf (record, line) {
  const start = record.run.startedAt
  return record.timeline.samples.map(function point (s) {
    const y = line.value(s)
    return { x: (s.time - start) / 1000, y: Number.isFinite(y) ? y : null }
  })
}

/** A run's spans as the span plugin reads them, in seconds since its start. */
function requestsOf (record) {
  const start = record.run.startedAt
  return record.timeline.spans.map(function request (s) {
    return { route: s.route, start: (s.start - start) / 1000, end: ((s.end ?? s.start) - start) / 1000, status: s.status ?? null }
  })
}

function overlayChart (canvas, runs, lines, { yTitle, unit, labels }) {
  const yFormat = function inUnit (y) { return Number.isFinite(y) ? `${y.toFixed(1)} ${unit}` : '–' }
  const options = baseOptions({ yTitle, yFormat, marks: null, labels: false, legend: true })
  options.scales.x.ticks.callback = function seconds (value) { return `${value} s` }
  delete options.scales.x.afterBuildTicks
  options.scales.x.title = { display: true, text: 'seconds from each run\'s start' }
  options.plugins.tooltip.callbacks.title = function atSecond (items) {
    return items.length ? `${items[0].parsed.x.toFixed(1)} s from the start` : ''
  }
  options.plugins.streamlabOverlaySpans = { runs: runs.map(function spans (record) { return { requests: requestsOf(record) } }), labels }
  const datasets = []
  for (const [i, record] of runs.entries()) {
    for (const line of lines) {
      const label = `${i === 0 ? 'A' : 'B'} ${line.label}`
      datasets.push(lineDataset({ ...line, label, dash: i === 0 ? [] : [...DASH] }, pointsOf(record, line)))
    }
  }
  const seconds = runs.map(function length ({ run, timeline: t }) {
    return (run.endedAt ?? t.samples.at(-1)?.time ?? run.startedAt) - run.startedAt
  })
  options.scales.x.min = 0
  options.scales.x.max = Math.max(1, Math.ceil(Math.max(...seconds) / 1000))
  return new globalThis.Chart(canvas, { type: 'line', data: { datasets }, options, plugins: [overlaySpansPlugin, backgroundPlugin] })
}

function headRow (labels) {
  return make('thead', {}, make('tr', {}, ...labels.map(function th (text) { return make('th', { scope: 'col' }, text) })))
}

/** The delta table: a row per route and figure both runs have. */
function deltaTable (compared) {
  const repeats = compared.rows.some(function hasSpread (r) { return r.spread !== null })
  const table = make('table', { class: 'results deltas' })
  table.append(make('caption', {}, 'B against A: each route\'s figures in both runs (npm run runs -- compare says the same)'))
  table.append(headRow(['Route', 'Figure', 'A', 'B', 'B/A', 'B − A', ...(repeats ? ['Repeats'] : [])]))
  const body = make('tbody')
  for (const row of compared.rows) {
    const tr = make('tr', { 'data-key': row.key, 'data-figure': row.name },
      make('th', { scope: 'row' }, row.key),
      make('td', {}, row.label),
      make('td', { 'data-col': 'a' }, formatWithRange(row.a)),
      make('td', { 'data-col': 'b' }, formatWithRange(row.b)),
      make('td', { 'data-col': 'ratio' }, formatRatio(row.ratio)),
      make('td', { 'data-col': 'difference' }, formatDifference(row.unit, row.difference)))
    if (repeats) tr.append(make('td', { 'data-col': 'spread' }, formatSpread(row.spread)))
    body.append(tr)
  }
  table.append(body)
  return table
}

/** Each route's sites that moved most: MiB allocated and held in A and B, as compare prints them. */
function sitesTable (sites) {
  const mib = function mib (v) { return make('td', {}, v === null ? '–' : formatFigure('bytes', v)) }
  const delta = function delta (v) { return make('td', {}, formatDifference('bytes', v)) }
  const table = make('table', { class: 'results deltas sites-moved' })
  table.append(make('caption', {}, 'The sites that moved: MiB each line allocated over the run, and the most it held at once'))
  table.append(headRow(['Route', 'Site', 'Kind', 'Allocated A', 'Allocated B', 'B − A', 'Held A', 'Held B', 'B − A']))
  const body = make('tbody')
  for (const { route, rows } of sites.routes) {
    for (const r of rows) {
      body.append(make('tr', { 'data-route': route },
        make('th', { scope: 'row' }, `/${route}`), make('td', {}, make('code', {}, r.line)), make('td', {}, r.kinds),
        mib(r.allocated.a), mib(r.allocated.b), delta(r.allocated.difference), mib(r.held.a), mib(r.held.b), delta(r.held.difference)))
    }
  }
  table.append(body)
  return table
}

/** "params differ: bytes 10000000 → 20000000": what differs between the runs, as compare prints it. */
function differenceLine (label, differences) {
  if (differences.length === 0) return null
  const shown = function shown (value) {
    const text = value === undefined ? 'none' : String(JSON.stringify(value))
    return text.length > 40 ? `${text.slice(0, 39)}…` : text
  }
  const one = function one (d) { return `${d.name} ${shown(d.a)} → ${shown(d.b)}` }
  return make('p', { class: 'replay-about' }, `${label}: ${differences.map(one).join('; ')}`)
}

/** A view of two runs in `container`; `show(a, b)` draws them. */
export function createOverlayView (container, { idPrefix = 'overlay' } = {}) {
  let drawn = null

  function destroy () {
    if (drawn !== null) for (const chart of drawn.charts) chart.destroy()
    drawn = null
    container.replaceChildren()
  }

  function show (a, b) {
    destroy()
    const compared = compareRecords(a, b)
    const sites = compareSites(a, b)
    const canvas = function canvas (name, label) {
      return make('canvas', { id: `${idPrefix}-${name}-chart`, role: 'img', 'aria-label': label })
    }
    const memoryCanvas = canvas('memory', 'Memory of run A (solid lines) and run B (dashed) in MiB, in seconds from each run\'s start, ' +
      'with each run\'s requests shaded by route')
    const loopCanvas = canvas('loop', 'Event-loop delay p99 of run A (solid) and run B (dashed), in seconds from each run\'s start')
    const about = function about (label, record) {
      const lines = describeRecord(record).map(function line (text) { return make('p', { class: 'replay-about' }, text) })
      return make('div', { class: 'overlay-run' }, make('h3', {}, `${label} ${recordTitle(record)}`), ...lines)
    }
    const note = function note (text, warn = false) { return make('p', { class: warn ? 'replay-about warn' : 'replay-about' }, text) }
    const notes = [
      a.run.experiment !== b.run.experiment ? note(`different experiments: ${a.run.experiment} and ${b.run.experiment}`, true) : null,
      differenceLine('params differ', compared.params),
      differenceLine('machines differ', compared.where),
      compared.onlyA.length > 0 ? note(`only in A: ${compared.onlyA.join(', ')}`) : null,
      compared.onlyB.length > 0 ? note(`only in B: ${compared.onlyB.join(', ')}`) : null
    ].filter(Boolean)
    const routes = [...new Set([...a.run.routes, ...b.run.routes])]
    container.replaceChildren(
      make('h2', { class: 'replay-title' }, 'Two runs laid over each other, aligned at their starts'),
      about('A (solid):', a),
      about('B (dashed):', b),
      ...notes,
      make('div', { class: 'overlay-grid' },
        make('div', { class: 'chart-box memory' }, memoryCanvas),
        make('div', { class: 'chart-box loop' }, loopCanvas)),
      routeKey(routes, [' · A solid, its requests shaded along the top; B dashed, its requests outlined along the bottom']),
      compared.rows.length > 0
        ? deltaTable(compared)
        : make('p', { class: 'help' }, 'No route has figures in both runs: nothing to set side by side.'),
      ...(sites.routes.length > 0 ? [sitesTable(sites)] : []))
    const runs = [a, b]
    drawn = {
      a, b, compared, sites,
      charts: [
        overlayChart(memoryCanvas, runs, MEMORY_LINES, { yTitle: 'MiB', unit: 'MiB', labels: true }),
        overlayChart(loopCanvas, runs, LOOP_LINES, { yTitle: 'ms', unit: 'ms', labels: false })
      ]
    }
  }

  function setProjector (on) {
    if (drawn === null) return
    for (const chart of drawn.charts) {
      for (const ds of chart.data.datasets) ds.borderWidth = (/RSS$/.test(ds.label) ? 3 : 2) * (on ? 2 : 1)
      for (const axis of ['x', 'y']) chart.options.scales[axis].grid.color = on ? GRID_PROJECTOR : GRID
      chart.update('none')
    }
  }

  /** What is drawn, for the page's debug view: each line's highest point (bytes for memory) and the delta rows. */
  function state () {
    if (drawn === null) return null
    const lines = drawn.charts[0].data.datasets.map(function summary (ds) {
      const highest = ds.data.reduce(function max (m, p) { return p.y !== null && p.y > m ? p.y : m }, -Infinity)
      const max = Number.isFinite(highest) ? highest * MiB : null
      return { label: ds.label, dashed: ds.borderDash.length > 0, points: ds.data.length, max, firstX: ds.data[0]?.x ?? null }
    })
    return {
      a: drawn.a.id,
      b: drawn.b.id,
      lines,
      rows: drawn.compared.rows.map(function row ({ key, name, unit, a, b, ratio, difference }) {
        return { key, name, unit, a: a?.value ?? null, b: b?.value ?? null, ratio, difference }
      }),
      params: drawn.compared.params.map(function name (d) { return d.name }),
      sites: drawn.sites.routes.map(function route (r) { return { route: r.route, lines: r.rows.map(function at (s) { return s.line }) } })
    }
  }

  return { show, destroy, setProjector, state }
}
