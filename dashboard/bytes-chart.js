/** "Where the bytes are": V8's heap spaces and the array buffers stacked over time, RSS a line over them (README.md). */
import { OKABE_ITO, GRID, GRID_PROJECTOR, backgroundPlugin, baseOptions, markPlugin } from './charts.js'
import { formatClock, formatMiBValue } from './format.js'
import { heapKey } from './sample-parts.js'

/** How a layer looks, by V8 space name; a space not named here is a pale grey. */
const SPACE_LOOKS = Object.freeze({
  new_space: { color: OKABE_ITO.skyBlue },
  old_space: { color: OKABE_ITO.blue },
  code_space: { color: OKABE_ITO.green },
  new_large_object_space: { color: OKABE_ITO.yellow, strong: true },
  large_object_space: { color: OKABE_ITO.vermillion, strong: true }
})

const PALE_GREY = '#9a9a9a'
const PALE_ALPHA = 0.3
const STRONG_ALPHA = 0.85

/** The layers after the heap spaces, bottom to top, and the line over them. */
export const EXTERNAL_LAYERS = Object.freeze([
  { key: 'arrayBuffers', label: 'array buffers', color: OKABE_ITO.orange, strong: true },
  { key: 'otherExternal', label: 'other external', color: OKABE_ITO.purple }
])
const RSS_LINE = Object.freeze({ key: 'rss', label: 'RSS', color: OKABE_ITO.black, width: 3 })

/** Build the chart. `spaces`: the heap spaces seen, in V8's order. */
export function createBytesChart ({ canvas, store, marks, spaces }) {
  const options = baseOptions({ yTitle: 'MiB', yFormat: formatMiBValue, marks, labels: false, legend: true })
  options.plugins.decimation = { enabled: false }
  options.plugins.title = { display: true, align: 'start', text: 'Where the bytes are (stacked; RSS a line)' }
  options.interaction = { mode: 'index', axis: 'x', intersect: false }
  options.plugins.tooltip.callbacks.title = function tooltipTitle (items) { return items.length ? formatClock(items[0].parsed.x) : '' }
  // a layer's point is { x, y: the stack's top there, own: the layer's value }
  options.plugins.tooltip.callbacks.label = function layerValue (item) {
    return `${item.dataset.label}: ${formatMiBValue(item.raw.own ?? item.raw.y)}`
  }
  options.plugins.tooltip.callbacks.footer = function stackedTotal (items) {
    const top = items.filter(function isLayer (item) { return Object.hasOwn(item.raw, 'own') }).at(-1)
    return top ? `stacked: ${formatMiBValue(top.raw.y)}` : ''
  }
  // hiding a layer takes it out of the stack, not only out of sight
  options.plugins.legend.onClick = function toggleLayer (event, item) {
    const key = keyAt[item.datasetIndex]
    if (hidden.has(key)) hidden.delete(key)
    else hidden.add(key)
    update()
  }
  const chart = new globalThis.Chart(canvas, {
    type: 'line',
    data: { datasets: [] },
    options,
    plugins: [markPlugin, backgroundPlugin]
  })
  const datasets = new Map()
  const widths = new Map() // line widths out of projector mode, by key
  const hidden = new Set() // layers hidden from the legend, by key
  let keyAt = []
  let projector = false
  let shown = []

  function datasetFor (layer) {
    let ds = datasets.get(layer.key)
    if (ds === undefined) {
      ds = {
        label: layer.label,
        data: [],
        borderColor: layer.color,
        backgroundColor: layer.line ? layer.color : withAlpha(layer.color, layer.strong ? STRONG_ALPHA : PALE_ALPHA),
        pointRadius: 0,
        pointHoverRadius: 3,
        tension: 0,
        fill: false,
        spanGaps: true
      }
      datasets.set(layer.key, ds)
      widths.set(layer.key, layer.width ?? (layer.strong ? 2 : 1))
    }
    ds.borderWidth = widths.get(layer.key) * (projector ? 2 : 1)
    ds.hidden = hidden.has(layer.key)
    return ds
  }

  /** The layers to draw now: spaces that held something in the window, the external layers, RSS. */
  function layersNow () {
    const layers = []
    for (const space of spaces()) {
      const key = heapKey(space)
      if (!((store.maxOf(key) ?? 0) > 0)) continue
      const look = SPACE_LOOKS[space] ?? { color: PALE_GREY }
      layers.push({ key, label: space, color: look.color, strong: look.strong === true })
    }
    for (const layer of EXTERNAL_LAYERS) if (store.has(layer.key)) layers.push(layer)
    layers.push({ ...RSS_LINE, line: true })
    return layers
  }

  function update () {
    const layers = layersNow()
    const series = layers.map(function points (layer) { return store.series(layer.key) })
    const keep = keptIndices(series, layers, chart.width, hidden)
    const count = keep === null ? (series[0]?.length ?? 0) : keep.length
    const top = new Float64Array(count)
    let below = 'origin'
    chart.data.datasets = layers.map(function layerData (layer, i) {
      const ds = datasetFor(layer)
      const points = series[i]
      const data = new Array(count)
      if (layer.line) {
        for (let j = 0; j < count; j++) data[j] = points[keep === null ? j : keep[j]]
      } else {
        const stacked = !ds.hidden
        for (let j = 0; j < count; j++) {
          const point = points[keep === null ? j : keep[j]]
          if (stacked && point.y !== null) top[j] += point.y
          data[j] = { x: point.x, y: top[j], own: point.y }
        }
        // filled down to the visible layer below, or to 0
        ds.fill = below
        if (stacked) below = i
      }
      ds.data = data
      return ds
    })
    keyAt = layers.map(function key (layer) { return layer.key })
    shown = layers.map(function describe (layer) { return { key: layer.key, label: layer.label, stacked: layer.line !== true } })
    chart.update('none')
  }

  return {
    chart,
    setRange: function setRange (min, max) {
      chart.options.scales.x.min = min
      chart.options.scales.x.max = max
    },
    update,
    setProjector: function setProjector (on) {
      projector = on
      for (const [key, ds] of datasets) ds.borderWidth = widths.get(key) * (on ? 2 : 1)
      for (const axis of ['x', 'y']) chart.options.scales[axis].grid.color = on ? GRID_PROJECTOR : GRID
      chart.update('none')
    },
    shown: function shownLayers () {
      return shown.map(function copy (layer) { return { ...layer, width: datasets.get(layer.key)?.borderWidth ?? null } })
    }
  }
}

/** Indexes to draw when points outnumber pixels: per pixel, lowest and highest stacked total and highest RSS; null: all. */
function keptIndices (series, layers, width, hidden) {
  const count = series[0]?.length ?? 0
  const buckets = Math.max(1, Math.floor(width))
  if (count <= 2 * buckets) return null
  const stacked = []
  let line = null
  for (const [i, layer] of layers.entries()) {
    if (layer.line) line = series[i]
    else if (!hidden.has(layer.key)) stacked.push(series[i])
  }
  const keep = [0]
  const per = count / buckets
  for (let b = 0; b < buckets; b++) {
    const from = Math.floor(b * per)
    const to = Math.min(count, Math.floor((b + 1) * per))
    if (from >= to) continue
    let low = from
    let high = from
    let top = from
    let lowTotal = Infinity
    let highTotal = -Infinity
    let topLine = -Infinity
    for (let k = from; k < to; k++) {
      let total = 0
      for (const s of stacked) total += s[k].y ?? 0
      if (total < lowTotal) { lowTotal = total; low = k }
      if (total > highTotal) { highTotal = total; high = k }
      const y = line?.[k].y ?? -Infinity
      if (y > topLine) { topLine = y; top = k }
    }
    for (const k of [...new Set([low, high, top])].sort(function ascending (a, c) { return a - c })) {
      if (k > keep[keep.length - 1]) keep.push(k)
    }
  }
  if (keep[keep.length - 1] !== count - 1) keep.push(count - 1)
  return keep
}

export function withAlpha (hex, alpha) {
  const n = Number.parseInt(hex.slice(1), 16)
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`
}
