/** The memory and event-loop charts, with requests as spans by route; kept light on purpose (README.md). */
import { clockTicks, formatClock, formatMiBValue } from './format.js'
import { clipToArea } from './dom.js'
import { gcPlugin, gcTooltipLines } from './gc-marks.js'

const { Chart } = globalThis

/** Okabe-Ito: distinguishable with the common forms of colour blindness, and on a washed-out projector. */
export const OKABE_ITO = Object.freeze({
  black: '#000000',
  orange: '#E69F00',
  skyBlue: '#56B4E9',
  green: '#009E73',
  yellow: '#F0E442',
  blue: '#0072B2',
  vermillion: '#D55E00',
  purple: '#CC79A7'
})

/** Memory lines; a dash pattern as well as a colour tells the pairs apart. */
export const MEMORY_SERIES = Object.freeze([
  { key: 'rss', label: 'RSS', color: OKABE_ITO.blue, width: 3 },
  { key: 'heapTotal', label: 'Heap total', color: OKABE_ITO.skyBlue, width: 2, dash: [8, 4] },
  { key: 'heapUsed', label: 'Heap used', color: OKABE_ITO.skyBlue, width: 2 },
  { key: 'external', label: 'External', color: OKABE_ITO.purple, width: 2, dash: [8, 4] },
  { key: 'arrayBuffers', label: 'Array buffers', color: OKABE_ITO.orange, width: 2 },
  { key: 'peakRss', label: 'Peak RSS', color: OKABE_ITO.black, width: 2, dash: [2, 3] }
])

/** Event-loop delay lines (ms beyond the probe's tick). */
export const LOOP_SERIES = Object.freeze([
  { key: 'loopP99', label: 'Loop delay p99', color: OKABE_ITO.blue, width: 2 },
  { key: 'loopMax', label: 'Loop delay max', color: OKABE_ITO.purple, width: 2, dash: [8, 4] }
])

/**
 * Span colours per route: vermillion buffers, green streams, blue /express-json (buffered, with an inflated limit), reddish
 * purple /streamparser-json (sky blue or orange sit too close to /express-json's blue and /bad's vermillion).
 */
export const ROUTE_COLORS = Object.freeze({
  bad: OKABE_ITO.vermillion,
  good: OKABE_ITO.green,
  'express-json': OKABE_ITO.blue,
  'streamparser-json': OKABE_ITO.purple,
  // the upload experiment's routes: buffered and streamed again, in the same colours
  'upload-buffer': OKABE_ITO.vermillion,
  'upload-stream': OKABE_ITO.green
})

/** The line of its span's label each route writes on, so labels of routes run back to back stay readable. */
const LABEL_LINES = Object.freeze({ good: 1, 'upload-stream': 1, 'express-json': 2, 'streamparser-json': 3 })

const SPAN_ALPHA = 0.16
const FONT_PX = 14
const PROJECTOR_FONT_PX = 20
export const GRID = '#e4e4e4'
export const GRID_PROJECTOR = '#8c8c8c'
const SPAN_MIN_PX = 3
const BAR_PX = 6

/** Draws the mark log behind the lines (spans, peak resets dashed grey, crashes vermillion) and counts what it drew. */
export const markPlugin = {
  id: 'streamlabMarks',
  beforeDatasetsDraw (chart, args, options) {
    const marks = options.marks
    if (!marks) return
    const { ctx, chartArea: area } = chart
    const x = chart.scales.x
    const now = x.max
    clipToArea(ctx, area)
    let drawn = 0
    const lastLabel = new Map()
    ctx.font = `600 ${Math.round(Chart.defaults.font.size * 0.85)}px ${Chart.defaults.font.family}`
    ctx.textBaseline = 'top'
    // a route's concurrent requests as one span (their union): overlapping translucent spans would stack into a solid block
    for (const span of routeSpans(marks.requests, x.min, x.max, now)) {
      const x0 = x.getPixelForValue(span.start)
      const width = Math.max(SPAN_MIN_PX, x.getPixelForValue(span.end) - x0)
      const color = Object.hasOwn(ROUTE_COLORS, span.route) ? ROUTE_COLORS[span.route] : OKABE_ITO.black
      ctx.globalAlpha = SPAN_ALPHA
      ctx.fillStyle = color
      ctx.fillRect(x0, area.top, width, area.height)
      ctx.globalAlpha = 1
      ctx.fillRect(x0, area.top, width, BAR_PX)
      drawn += span.requests
      if (options.labels && x0 - (lastLabel.get(span.route) ?? -Infinity) > 60) {
        const count = span.requests > 1 ? ` ×${span.requests}` : ''
        const failed = span.failed === 0 ? '' : ` ${span.failed === 1 ? span.status ?? '' : `${span.failed} failed`} ✕`
        const text = `/${span.route}${count}${failed}`
        ctx.fillStyle = color
        const line = LABEL_LINES[span.route] ?? 0
        ctx.fillText(text, x0 + 3, area.top + BAR_PX + 3 + line * (Chart.defaults.font.size + 2))
        lastLabel.set(span.route, x0)
      }
    }
    drawVerticals(ctx, area, x, marks.peakResets, '#666666', 1.5, [4, 4])
    drawVerticals(ctx, area, x, marks.crashes.map(function crashTime (c) { return c.time }), OKABE_ITO.vermillion, 4, [])
    ctx.restore()
    chart.$streamlabMarks = drawn
  }
}

/** Requests in [min, max] merged per route: { route, start, end, requests, failed, status }; an open one ends at `now`. */
export function routeSpans (requests, min, max, now) {
  const byRoute = new Map()
  for (const mark of requests) {
    const end = mark.end ?? now
    if (end < min || mark.start > max) continue
    if (!byRoute.has(mark.route)) byRoute.set(mark.route, [])
    byRoute.get(mark.route).push({ start: mark.start, end, status: mark.status })
  }
  const spans = []
  for (const [route, list] of byRoute) {
    list.sort(function byStart (a, b) { return a.start - b.start })
    let span = null
    for (const r of list) {
      const failed = r.status !== null && r.status !== 200
      if (span !== null && r.start <= span.end) {
        span.end = Math.max(span.end, r.end)
        span.requests++
      } else {
        span = { route, start: r.start, end: r.end, requests: 1, failed: 0, status: null }
        spans.push(span)
      }
      if (failed) {
        span.failed++
        span.status = r.status
      }
    }
  }
  return spans
}

export function drawVerticals (ctx, area, x, times, color, width, dash) {
  ctx.strokeStyle = color
  ctx.lineWidth = width
  ctx.setLineDash(dash)
  for (const time of times) {
    if (time < x.min || time > x.max) continue
    const px = x.getPixelForValue(time)
    ctx.beginPath()
    ctx.moveTo(px, area.top)
    ctx.lineTo(px, area.bottom)
    ctx.stroke()
  }
  ctx.setLineDash([])
}

/** Paint the canvas white first, so an exported PNG is not transparent. */
export const backgroundPlugin = {
  id: 'streamlabBackground',
  beforeDraw (chart) {
    const { ctx, width, height } = chart
    ctx.save()
    ctx.globalCompositeOperation = 'destination-over'
    ctx.fillStyle = '#ffffff'
    ctx.fillRect(0, 0, width, height)
    ctx.restore()
  }
}

/** A line series as a Chart.js dataset: no points drawn, gaps spanned. */
export function lineDataset (series, data = []) {
  return {
    label: series.label,
    data,
    borderColor: series.color,
    backgroundColor: series.color,
    borderWidth: series.width,
    borderDash: series.dash ?? [],
    pointRadius: 0,
    pointHoverRadius: 4,
    tension: 0,
    fill: false,
    spanGaps: true
  }
}

/** Options shared by the charts over time: a clock on a linear x axis, no animation, min-max decimation, the mark log behind the lines. */
export function baseOptions ({ yTitle, yFormat, marks, labels, legend }) {
  return {
    animation: false,
    parsing: false,
    normalized: true,
    responsive: true,
    maintainAspectRatio: false,
    interaction: { mode: 'nearest', axis: 'x', intersect: false },
    scales: {
      x: {
        type: 'linear',
        // whole seconds, minutes, as many as fit: labels never collide nor read the same twice
        afterBuildTicks: function clockAxisTicks (axis) {
          const labelPx = 8 * 0.62 * globalThis.Chart.defaults.font.size + 24
          axis.ticks = clockTicks(axis.min, axis.max, axis.width, labelPx).map(function tick (value) { return { value } })
        },
        ticks: {
          maxRotation: 0,
          autoSkipPadding: 24,
          callback: function clockTick (value) { return formatClock(value) }
        },
        grid: { color: GRID }
      },
      y: {
        beginAtZero: true,
        title: { display: true, text: yTitle },
        grid: { color: GRID }
      }
    },
    plugins: {
      legend: { display: legend, position: 'top', align: 'start', labels: { boxWidth: 28, boxHeight: 3 } },
      decimation: { enabled: true, algorithm: 'min-max' },
      tooltip: {
        callbacks: {
          title: function tooltipTitle (items) { return items.length ? formatClock(items[0].parsed.x) : '' },
          label: function tooltipLabel (item) { return `${item.dataset.label}: ${yFormat(item.parsed.y)}` }
        }
      },
      streamlabMarks: { marks, labels }
    }
  }
}

export function createCharts ({ memoryCanvas, loopCanvas, store, marks }) {
  Chart.defaults.font.family = 'system-ui, "Segoe UI", Roboto, Helvetica, Arial, sans-serif'
  Chart.defaults.color = '#1a1a1a'
  const memoryOptions = baseOptions({ yTitle: 'MiB', yFormat: formatMiBValue, marks, labels: true, legend: true })
  memoryOptions.plugins.streamlabGc = { log: marks.gc }
  memoryOptions.plugins.tooltip.callbacks.footer = gcTooltipLines
  const memory = new Chart(memoryCanvas, {
    type: 'line',
    data: { datasets: MEMORY_SERIES.map(function memoryLine (s) { return lineDataset(s) }) },
    options: memoryOptions,
    plugins: [markPlugin, gcPlugin, backgroundPlugin]
  })
  const loop = new Chart(loopCanvas, {
    type: 'line',
    data: { datasets: LOOP_SERIES.map(function loopLine (s) { return lineDataset(s) }) },
    options: baseOptions({ yTitle: 'ms', yFormat: formatMsValue, marks, labels: false, legend: true }),
    plugins: [markPlugin, backgroundPlugin]
  })

  return {
    memory,
    loop,
    setRange: function setRange (min, max) {
      for (const chart of [memory, loop]) {
        chart.options.scales.x.min = min
        chart.options.scales.x.max = max
      }
    },
    update: function updateCharts () {
      copyData(memory, MEMORY_SERIES, store)
      copyData(loop, LOOP_SERIES, store)
      memory.update('none')
      loop.update('none')
    },
    markersDrawn: function markersDrawn () {
      return memory.$streamlabMarks ?? 0
    },
    setProjector: function setProjector (on) {
      Chart.defaults.font.size = on ? PROJECTOR_FONT_PX : FONT_PX
      Chart.defaults.font.weight = on ? 'bold' : 'normal'
      Chart.defaults.color = on ? '#000000' : '#1a1a1a'
      for (const [chart, series] of [[memory, MEMORY_SERIES], [loop, LOOP_SERIES]]) {
        // thicker lines and a darker grid survive a washed-out projector
        for (const [i, s] of series.entries()) chart.data.datasets[i].borderWidth = on ? s.width * 2 : s.width
        for (const axis of ['x', 'y']) chart.options.scales[axis].grid.color = on ? GRID_PROJECTOR : GRID
        chart.update('none')
      }
    }
  }
}

function copyData (chart, series, store) {
  for (const [i, s] of series.entries()) chart.data.datasets[i].data = store.series(s.key)
}

function formatMsValue (y) { return Number.isFinite(y) ? `${y.toFixed(1)} ms` : '–' }
