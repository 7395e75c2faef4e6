/** A pipeline drawn left to right, client to consumer, from any progress or record (README.md). */
import { breakAfterDots, make } from './dom.js'
import { formatBytes } from './format.js'
import { isPipelineSample } from '../lib/experiments/pipeline-sample.js'
import { pipelineBars, pipelineFigures } from './pipeline-bars.js'

const SCALE_FLOOR = 1024 // the foot of the shared scale: a bar holding less sits at the bottom
const BOUND_ROOM = 1.25 // room above the largest bound, so its line sits below the tubes' top until a peak passes it
const MARK_TOP = 97 // the highest a bound or peak mark is drawn (% of the tube), inside its frame
const TICK_FACTOR = 16 // the scale's marks: every factor of 16 from its foot (1 KiB, 16 KiB, 256 KiB, 4 MiB, 64 MiB, 1 GiB)
const REPLAY_MAX_MS = 60_000 // the longest a replay plays: a long run's record plays faster than it was recorded

/** `show(sample)` draws one sample on one log scale of bytes that only grows, so a drain shows; `reset()` forgets peaks. */
export function createPipelineView (container) {
  const row = make('ol', {
    class: 'pipeline-row',
    'aria-label': 'The pipeline, client to consumer: each buffer\'s bytes against its bound, on one scale'
  })
  const figures = make('div', { class: 'pipeline-figures' })
  container.replaceChildren(row, figures)
  let drawn = new Map() // key -> { node, fill, boundLine, peakTick, value, note, bytes, bound }
  let peaks = new Map() // key -> the run's peak: kept when the row is rebuilt
  let top = SCALE_FLOOR
  let kernelSeen = false
  let axis = null
  let last = null

  function reset () {
    drawn = new Map()
    peaks = new Map()
    top = SCALE_FLOOR
    kernelSeen = false
    last = null
    row.replaceChildren()
    figures.replaceChildren()
  }

  function show (sample) {
    if (!isPipelineSample(sample)) return
    const bars = pipelineBars(sample, { kernelSeen })
    if (bars.some(function kernelBar (b) { return b.key === 'clientSendQueue' })) kernelSeen = true
    for (const b of bars) peaks.set(b.key, Math.max(peaks.get(b.key) ?? 0, b.bytes ?? 0, b.peak ?? 0))
    const grown = Math.max(top, ...bars.map(function highest (b) { return Math.max(peaks.get(b.key), (b.bound ?? 0) * BOUND_ROOM) }))
    // the set of bars changes only between runs (the kernel found or not): then start the row again
    if (bars.map(function key (b) { return b.key }).join() !== [...drawn.keys()].join()) {
      drawn = new Map()
      axis = scaleNode()
      row.replaceChildren(axis.node)
      for (const b of bars) {
        const parts = barNode(b)
        drawn.set(b.key, parts)
        row.append(parts.node)
      }
    }
    if (grown !== top || axis.top !== grown) drawScale(axis, grown)
    top = grown
    for (const b of bars) drawBar(drawn.get(b.key), b, peaks.get(b.key), top)
    figures.replaceChildren(...pipelineFigures(sample).map(function line (text) { return make('p', {}, text) }))
    last = sample
  }

  function state () {
    return {
      ms: last?.ms ?? null,
      settings: last?.settings ? { ...last.settings } : null,
      scaleTop: top,
      bars: [...drawn.entries()].map(function barState ([key, d]) {
        return {
          key,
          bytes: d.bytes,
          bound: d.bound,
          peak: peaks.get(key) ?? 0,
          height: Number.parseFloat(d.fill.style.height) || 0,
          over: d.node.classList.contains('over'),
          unreadable: d.unreadable,
          text: d.node.textContent
        }
      })
    }
  }

  return { show, reset, state }
}

function barNode (b) {
  const fill = make('div', { class: 'pipeline-fill' })
  const boundLine = make('div', { class: 'pipeline-bound', title: 'bound' })
  const peakTick = make('div', { class: 'pipeline-peak', title: 'peak' })
  const value = make('p', { class: 'pipeline-value' })
  const note = make('p', { class: 'pipeline-note' })
  const node = make('li', { class: 'pipeline-bar', 'data-key': b.key },
    make('div', { class: 'pipeline-tube', 'aria-hidden': 'true' }, fill, boundLine, peakTick),
    make('p', { class: 'pipeline-label' }, ...breakAfterDots(b.label)), value, note)
  return { node, fill, boundLine, peakTick, value, note }
}

/** The shared scale, left of the tubes: a mark every factor of TICK_FACTOR. */
function scaleNode () {
  const marks = make('div', { class: 'pipeline-scale-marks' })
  const node = make('li', { class: 'pipeline-scale', 'aria-hidden': 'true' }, marks, make('p', { class: 'pipeline-label' }, 'bytes (log)'))
  return { node, marks, top: 0 }
}

function drawScale (axis, top) {
  axis.top = top
  const marks = []
  for (let bytes = SCALE_FLOOR; bytes <= top; bytes *= TICK_FACTOR) {
    const mark = make('span', { class: 'pipeline-scale-mark' }, formatBytes(bytes).replace('.0 ', ' '))
    mark.style.bottom = `${Math.min(MARK_TOP, percent(bytes, top))}%`
    marks.push(mark)
  }
  axis.marks.replaceChildren(...marks)
}

/** One bar on the shared scale: its bytes, its bound's line, its peak's tick; red while past its bound. */
function drawBar (d, b, peak, top) {
  d.bytes = b.bytes
  d.bound = b.bound
  d.unreadable = b.unreadable
  d.fill.style.height = `${percent(b.bytes ?? 0, top)}%`
  // a mark at the very top would sit on the tube's edge, out of sight
  d.peakTick.style.bottom = `${Math.min(MARK_TOP, percent(peak, top))}%`
  d.peakTick.hidden = peak === 0
  d.boundLine.hidden = b.bound === null
  if (b.bound !== null) d.boundLine.style.bottom = `${Math.min(MARK_TOP, percent(b.bound, top))}%`
  const over = b.bound !== null && b.bytes !== null && b.bytes > b.bound
  d.node.classList.toggle('over', over)
  d.node.classList.toggle('peak-over', b.bound !== null && peak > b.bound)
  d.node.classList.toggle('unknown', b.bytes === null)
  d.node.dataset.bytes = b.bytes === null ? '' : String(b.bytes)
  d.node.dataset.bound = b.bound === null ? '' : String(b.bound)
  d.node.dataset.peak = String(peak)
  const bound = b.bound === null ? '' : ` of ${formatBytes(b.bound)}`
  // the peak in its own span: a lesson's view leaves it to the tick and the results (lesson-view.css)
  d.value.replaceChildren(`${formatBytes(b.bytes)}${bound}${over ? ' · past its bound' : ''}`,
    make('span', { class: 'pipeline-value-peak' }, ` · peak ${formatBytes(peak)}`))
  d.note.textContent = b.note
}

/** The time between two replayed samples: their own `ms`, shorter when the whole would pass REPLAY_MAX_MS. */
function replayStep (samples) {
  const span = samples.at(-1).ms - samples[0].ms
  const recorded = Number.isFinite(span) && span > 0 ? span / (samples.length - 1) : Infinity
  return Math.min(recorded, REPLAY_MAX_MS / samples.length)
}

/** Where `bytes` stands on the shared log scale from SCALE_FLOOR to `top` (%). */
function percent (bytes, top) {
  if (!(bytes > SCALE_FLOOR)) return 0
  const share = Math.log(bytes / SCALE_FLOOR) / Math.log(Math.max(top, SCALE_FLOOR * 2) / SCALE_FLOOR)
  return Math.round(Math.min(100, Math.max(0, share * 100)) * 10) / 10
}

/** A recorded run's samples in a view with a slider and Play: it opens on the last sample, each tick at the run's peak. */
export function showRecordedPipeline (container, samples, { idPrefix = 'replay' } = {}) {
  const sliderId = `${idPrefix}-pipeline-at`
  const last = String(samples.length - 1)
  const slider = make('input', { type: 'range', id: sliderId, min: '0', max: last, step: '1', value: last })
  const play = make('button', { type: 'button', class: 'pipeline-play' }, 'Play')
  const viewBox = make('div', { class: 'pipeline-view' })
  container.replaceChildren(
    make('h3', {}, 'The pipeline, client to consumer'),
    make('div', { class: 'pipeline-replay-controls' }, make('label', { for: sliderId }, 'Sample'), slider, play),
    viewBox)
  const view = createPipelineView(viewBox)
  // every sample once, so each bar's peak is the run's; then the one the slider shows
  for (const sample of samples) view.show(sample)
  let timer = null

  function showAt (index) {
    slider.value = String(index)
    view.show(samples[index])
  }

  function stop () {
    if (timer !== null) clearInterval(timer)
    timer = null
    play.textContent = 'Play'
  }

  slider.addEventListener('input', function moveTo () {
    stop()
    showAt(Number(slider.value))
  })
  play.addEventListener('click', function playOrPause () {
    if (timer !== null) return stop()
    if (Number(slider.value) >= samples.length - 1) showAt(0)
    play.textContent = 'Pause'
    timer = setInterval(function nextSample () {
      const next = Number(slider.value) + 1
      if (next >= samples.length) return stop()
      showAt(next)
    }, replayStep(samples))
  })
  showAt(samples.length - 1)

  return {
    destroy: stop,
    state: function recordedState () {
      return { samples: samples.length, at: Number(slider.value), playing: timer !== null, ...view.state() }
    }
  }
}
