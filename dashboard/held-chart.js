/** The per-request bars: one bar per ingest request, split by the stage that holds the bytes (README.md). */
import { ROUTE_COLORS, OKABE_ITO, GRID, GRID_PROJECTOR, backgroundPlugin } from './charts.js'
import { withAlpha } from './bytes-chart.js'
import { formatBytes } from './format.js'
import { GiB, KiB, MiB } from '../lib/util/units.js'
import { INGEST_STAGES } from '../lib/ingest/stage-names.js'
import { wrapWords } from '/lib/util/wrap.js'

/** One colour per stage, the same on every bar and in the legend. */
export const STAGE_COLORS = Object.freeze({
  negotiate: '#bdbdbd',
  admit: '#8c8c8c',
  read: OKABE_ITO.skyBlue,
  inflate: OKABE_ITO.orange,
  records: OKABE_ITO.yellow,
  parse: OKABE_ITO.vermillion,
  tally: OKABE_ITO.purple,
  answer: '#5a5a5a'
})

const PEAK_ALPHA = 0.4
const SEGMENT_EDGE = '#333333'
const LOG_STEP = 4 // the log axis's ticks are powers of this, from 16 B up
const LOG_FLOOR = 16
const TITLES = Object.freeze({
  linear: ['bytes held, linear scale'],
  logarithmic: ['bytes held, log scale: a bar ends', 'at its total, its parts not to scale']
})

/** Draws each bar's label above it, stage bounds as ticks, totals at the ends, a line when there is no bar; counts ticks. */
const heldMarksPlugin = {
  id: 'streamlabHeld',
  afterDatasetsDraw (chart, args, options) {
    const bars = options.bars?.() ?? []
    const { ctx, chartArea: area, scales: { x } } = chart
    const font = `600 ${Math.round(globalThis.Chart.defaults.font.size * 0.85)}px ${globalThis.Chart.defaults.font.family}`
    ctx.save()
    ctx.font = font
    let ticks = 0
    if (bars.length === 0) {
      ctx.fillStyle = '#555555'
      ctx.textAlign = 'center'
      ctx.textBaseline = 'middle'
      // in lines that fit the canvas, centred on it: a narrow chart must not clip the words
      const lines = fitLines(ctx, 'No ingest request in flight or recently ended', chart.width - 16)
      const lineHeight = parseInt(ctx.font.match(/(\d+)px/)?.[1] ?? '12', 10) * 1.3
      const middle = chart.width / 2
      for (const [i, line] of lines.entries()) {
        ctx.fillText(line, middle, (area.top + area.bottom) / 2 + (i - (lines.length - 1) / 2) * lineHeight)
      }
    }
    const element = firstElements(chart)
    for (const [i, bar] of bars.entries()) {
      const el = element[i]
      if (el === undefined) continue
      const half = el.height / 2 + 3
      ctx.textAlign = 'left'
      ctx.textBaseline = 'bottom'
      ctx.fillStyle = Object.hasOwn(ROUTE_COLORS, bar.route) ? ROUTE_COLORS[bar.route] : '#1a1a1a'
      ctx.fillText(barLabel(bar), area.left, el.y - el.height / 2 - 6)
      let offset = 0
      for (const stage of INGEST_STAGES) {
        const bound = bar.bounds[stage]
        if (Number.isFinite(bound)) {
          const px = x.getPixelForValue(Math.max(offset + bound, x.min))
          if (px >= area.left && px <= area.right) {
            // a dark line under a coloured one: the stage's colour says whose bound it is
            for (const [style, width] of [[SEGMENT_EDGE, options.tickWidth + 2], [STAGE_COLORS[stage], options.tickWidth]]) {
              ctx.strokeStyle = style
              ctx.lineWidth = width
              ctx.beginPath()
              ctx.moveTo(px, el.y - half)
              ctx.lineTo(px, el.y + half)
              ctx.stroke()
            }
            ticks++
          }
        }
        offset += bar.held[stage] ?? 0
      }
      const end = x.getPixelForValue(Math.max(offset, x.min))
      ctx.fillStyle = '#1a1a1a'
      ctx.textBaseline = 'middle'
      const text = formatBytes(bar.total)
      const width = ctx.measureText(text).width
      // beside the bar's end, or inside it when the end is at the edge
      if (end + 6 + width <= area.right) {
        ctx.textAlign = 'left'
        ctx.fillText(text, end + 6, el.y)
      } else {
        // on a white patch, so it reads over any stage's colour
        const right = Math.min(end, area.right) - 4
        ctx.fillStyle = 'rgba(255, 255, 255, 0.85)'
        ctx.fillRect(right - width - 4, el.y - el.height / 2 + 2, width + 4, el.height - 4)
        ctx.fillStyle = '#1a1a1a'
        ctx.textAlign = 'right'
        ctx.fillText(text, right - 2, el.y)
      }
    }
    ctx.restore()
    chart.$streamlabBoundTicks = ticks
  }
}

/** The drawn element of each bar (any stage's: they share their y and height). */
function firstElements (chart) {
  const out = []
  for (let d = 0; d < chart.data.datasets.length; d++) {
    const meta = chart.getDatasetMeta(d)
    for (const [i, el] of meta.data.entries()) if (out[i] === undefined && el) out[i] = el
  }
  return out
}

export function createHeldChart ({ canvas, held }) {
  let bars = []
  let scale = 'linear'
  let projector = false
  /** Stages seen on a bar since the page opened: the legend lists these, and does not jump. */
  const stagesSeen = new Set()

  function barAt (context) {
    return bars[context.dataIndex ?? context.index]
  }

  const chart = new globalThis.Chart(canvas, {
    type: 'bar',
    data: {
      labels: [],
      datasets: INGEST_STAGES.map(function stageDataset (stage) {
        return {
          label: stage,
          data: [],
          backgroundColor: function segmentColor (context) {
            return barAt(context)?.peak ? withAlpha(STAGE_COLORS[stage], PEAK_ALPHA) : STAGE_COLORS[stage]
          },
          borderColor: SEGMENT_EDGE,
          borderWidth: 1,
          borderSkipped: false,
          maxBarThickness: 28,
          // the upper part of each bar's band is its label's
          categoryPercentage: 1,
          barPercentage: 0.5
        }
      })
    },
    options: {
      indexAxis: 'y',
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      interaction: { mode: 'index', axis: 'y', intersect: false },
      scales: {
        x: {
          type: 'linear',
          stacked: true,
          min: 0,
          title: { display: true, text: TITLES.linear },
          ticks: { maxRotation: 0, autoSkipPadding: 12, callback: function bytesTick (value) { return formatTick(value) } },
          afterBuildTicks: function binaryTicks (axis) {
            if (axis.type === 'logarithmic') axis.ticks = logTicks(axis.min, axis.max)
          },
          grid: { color: GRID }
        },
        y: {
          stacked: true,
          title: { display: false, text: '' },
          // each bar's label is drawn above it (heldMarksPlugin)
          ticks: { display: false },
          grid: { display: false }
        }
      },
      plugins: {
        legend: {
          position: 'top',
          align: 'start',
          labels: {
            boxWidth: 14,
            generateLabels: function stageLabels (c) {
              return INGEST_STAGES.flatMap(function stageLabel (stage, i) {
                if (!stagesSeen.has(stage)) return []
                const colors = { fillStyle: STAGE_COLORS[stage], strokeStyle: SEGMENT_EDGE, fontColor: globalThis.Chart.defaults.color }
                return [{ text: stage, ...colors, lineWidth: 1, hidden: !c.isDatasetVisible(i), datasetIndex: i }]
              })
            }
          }
        },
        title: { display: true, align: 'start', text: 'Held per request, by stage' },
        decimation: { enabled: false },
        tooltip: {
          filter: function holdsBytes (item) { return Number.isFinite(item.raw) },
          callbacks: {
            title: function barTitle (items) {
              const bar = items.length ? bars[items[0].dataIndex] : null
              return bar ? `POST /${bar.route}, request ${bar.id}: ${bar.peak ? 'its peak (ended)' : 'in flight'}` : ''
            },
            label: function stageLine (item) {
              const bar = bars[item.dataIndex]
              const bound = bar?.bounds[item.dataset.label]
              const of = Number.isFinite(bound) ? ` of its ${formatBytes(bound)} bound` : ', unbounded'
              return `${item.dataset.label}: ${formatBytes(item.raw)}${of}`
            },
            footer: function unreadLines (items) {
              const bar = items.length ? bars[items[0].dataIndex] : null
              if (!bar) return []
              const lines = [`total ${formatBytes(bar.total)}`]
              if (bar.unread.length > 0) {
                lines.push('Also held, not counted here:')
                for (const phrase of bar.unread) for (const line of wrapWords(`• ${phrase}`, 52, { indent: '  ' })) lines.push(line)
              }
              return lines
            }
          }
        },
        streamlabHeld: { bars: function currentBars () { return bars }, tickWidth: 2 }
      }
    },
    plugins: [heldMarksPlugin, backgroundPlugin]
  })

  function fitAxis () {
    const x = chart.options.scales.x
    let extent = 0
    let smallest = Infinity
    for (const bar of bars) {
      let offset = 0
      for (const stage of INGEST_STAGES) {
        if (Number.isFinite(bar.bounds[stage])) extent = Math.max(extent, offset + bar.bounds[stage])
        const bytes = bar.held[stage] ?? 0
        if (bytes > 0) smallest = Math.min(smallest, bytes)
        offset += bytes
      }
      extent = Math.max(extent, offset)
    }
    x.type = scale
    x.title.text = TITLES[scale]
    if (scale === 'logarithmic') {
      // room past the longest bar, for its total
      x.min = powerBelow(Number.isFinite(smallest) ? smallest / 2 : KiB)
      x.max = powerBelow(Math.max(extent, x.min)) * LOG_STEP ** 3
      delete x.ticks.stepSize
    } else {
      const step = niceStep(Math.max(extent, KiB) * 1.3 / 4)
      x.min = 0
      x.max = Math.ceil(Math.max(extent, KiB) * 1.3 / step) * step
      x.ticks.stepSize = step
    }
  }

  function update () {
    bars = held.bars()
    for (const bar of bars) for (const stage of Object.keys(bar.held)) stagesSeen.add(stage)
    chart.data.labels = bars.map(barLabel)
    for (const [i, stage] of INGEST_STAGES.entries()) {
      chart.data.datasets[i].data = bars.map(function heldBy (bar) { return Object.hasOwn(bar.held, stage) ? bar.held[stage] : null })
    }
    const y = chart.options.scales.y
    y.title.display = held.hidden > 0
    y.title.text = `${held.hidden} more in flight, not drawn`
    fitAxis()
    chart.update('none')
  }

  return {
    chart,
    update,
    setScale: function setScale (type) {
      scale = type === 'logarithmic' ? 'logarithmic' : 'linear'
      update()
    },
    setProjector: function setProjector (on) {
      projector = on
      chart.options.plugins.streamlabHeld.tickWidth = on ? 4 : 2
      for (const ds of chart.data.datasets) ds.borderWidth = on ? 2 : 1
      chart.options.scales.x.grid.color = on ? GRID_PROJECTOR : GRID
      chart.update('none')
    },
    state: function heldState () {
      return {
        scale,
        projector,
        title: chart.options.scales.x.title.text,
        boundTicks: chart.$streamlabBoundTicks ?? 0,
        hiddenInFlight: held.hidden,
        bars: bars.map(function copy (bar) {
          return { ...structuredClone(bar), label: barLabel(bar) }
        })
      }
    }
  }
}

/** Words in lines no wider than `width` px in the context's font. */
function fitLines (ctx, text, width) {
  const lines = []
  for (const word of text.split(' ')) {
    const last = lines.at(-1)
    if (last !== undefined && ctx.measureText(`${last} ${word}`).width <= width) lines[lines.length - 1] = `${last} ${word}`
    else lines.push(word)
  }
  return lines
}

/** A bar's label: its route and id, and whether it is in flight or the peak of one that ended. */
function barLabel (bar) {
  return `/${bar.route} #${bar.id} · ${bar.peak ? 'peak (ended)' : 'in flight'}`
}

/** A step of 1, 2 or 5 times a power of ten, in bytes, KiB or MiB, near `rough` bytes. */
function niceStep (rough) {
  const unit = rough >= MiB ? MiB : rough >= KiB ? KiB : 1
  const r = rough / unit
  const power = 10 ** Math.floor(Math.log10(r))
  const nice = [1, 2, 5, 10].find(function enough (m) { return m * power >= r })
  return nice * power * unit
}

/** The largest power of LOG_STEP at or below `bytes`, from 16 B up. */
function powerBelow (bytes) {
  let p = LOG_FLOOR
  while (p * LOG_STEP <= bytes) p *= LOG_STEP
  return p
}

/** Ticks at the powers of LOG_STEP from min to max: 16 B, 64 B, 256 B, 1 KiB, 4 KiB … */
function logTicks (min, max) {
  const ticks = []
  for (let p = powerBelow(min); p <= max; p *= LOG_STEP) if (p >= min) ticks.push({ value: p })
  return ticks
}

/** An axis tick in binary units, "512 KiB", "1.5 MiB", "0". */
function formatTick (bytes) {
  if (bytes === 0) return '0'
  for (const [size, unit] of [[GiB, 'GiB'], [MiB, 'MiB'], [KiB, 'KiB']]) {
    if (bytes >= size) return `${Number((bytes / size).toFixed(1))} ${unit}`
  }
  return `${bytes} B`
}
