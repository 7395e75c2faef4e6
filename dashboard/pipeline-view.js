/**
 * A pipeline drawn left to right, client to consumer, from the `pipeline` member of a run's
 * progress (docs/backpressure.md, "The live state"): each buffer a bar that fills and drains, its
 * bound a line across it, past the bound red, the run's peak a tick. The page draws it from any
 * progress or record that carries such samples, whoever produced them.
 *
 * Samples come from the server or from a record (a file from anywhere): every string reaches the
 * page as text (dom.js `make`), never as markup.
 */
import { make } from './dom.js'
import { formatBytes } from './format.js'

/** Room above a bound, so its line sits below the bar's top until a peak passes it. */
const BOUND_ROOM = 1.25
/** The highest a bound or peak mark is drawn (% of the tube), inside its frame. */
const MARK_TOP = 97
/** Past its bound a stream holds one chunk or batch more: two 64 KiB batches, as the experiment judges it (experiments/backpressure/result.js). */
const OVER_SLACK = 2 * 64 * 1024

/**
 * Whether `sample` has the shape the view draws: stages as `{ name, bytes, bound }`.
 * @param {unknown} sample
 */
export function isPipelineSample (sample) {
  return sample !== null && typeof sample === 'object' && Array.isArray(sample.stages) &&
    sample.stages.every(function stageShape (s) { return s !== null && typeof s === 'object' && typeof s.name === 'string' })
}

/**
 * A record's pipeline samples (its results' `samples`), or null when it has none.
 * @param {object|null} results
 * @returns {object[]|null}
 */
export function recordedPipeline (results) {
  const samples = results?.samples
  if (!Array.isArray(samples) || samples.length === 0 || !samples.every(isPipelineSample)) return null
  return samples
}

/**
 * The bars of one sample, left to right: `{ key, label, bytes, bound, unreadable, note }`
 * (bytes null where unknown; bound null where there is none).
 * @param {object} sample a pipeline sample
 */
export function pipelineBars (sample) {
  const client = sample.client ?? null
  const kernel = sample.kernel ?? {}
  const bars = [
    bar('client', 'client: waiting to be written', client?.waitingBytes, client?.bound, client === null ? 'not reported yet' : 'its request\'s writableLength')
  ]
  if (kernel.source === null || kernel.source === undefined) {
    // each kernel's queue is unreadable here, but what the client sent and the server has not read is known
    bars.push(bar('kernels', 'both kernels: sent, not read', sample.read?.unreadBytes, null, 'each kernel\'s queue cannot be read here', true))
  } else {
    bars.push(
      bar('clientSendQueue', 'client kernel: send queue', kernel.clientSendQueue, null, `from ${kernel.source}`),
      bar('serverReceiveQueue', 'server kernel: receive queue', kernel.serverReceiveQueue, null, `from ${kernel.source}`))
  }
  for (const stage of sample.stages) {
    const note = stage.name === 'consumer' && sample.consumer
      ? `${sample.consumer.queuedBatches} batches queued, ${sample.consumer.batches} taken`
      : ''
    bars.push(bar(`stage:${stage.name}`, stage.name, stage.bytes, stage.bound, note))
  }
  return bars
}

function bar (key, label, bytes, bound, note, unreadable = false) {
  return { key, label, bytes: Number.isFinite(bytes) ? bytes : null, bound: Number.isFinite(bound) && bound > 0 ? bound : null, note, unreadable }
}

/** The sample's settings, RSS and rates, as lines of text. */
export function pipelineFigures (sample) {
  const s = sample.settings ?? {}
  const r = sample.rates ?? {}
  const rate = function perSecond (bytes) { return Number.isFinite(bytes) ? `${formatBytes(bytes)}/s` : '–' }
  return [
    `mode ${s.mode ?? '–'} · delayMs ${s.delayMs ?? '–'} · rate ${s.rate === 0 ? 'as fast as it can' : rate(s.rate)} · highWaterMark ${formatBytes(s.highWaterMark)}`,
    `RSS ${formatBytes(sample.rss)} · held ${formatBytes(sample.held)} · at ${Number.isFinite(sample.ms) ? (sample.ms / 1000).toFixed(1) : '–'} s`,
    `rates: client sent ${rate(r.clientSent)} · arrived ${rate(r.arrived)} (gzip) · consumed ${rate(r.consumed)}`
  ]
}

/**
 * A view in `container`: `show(sample)` draws one sample (the peaks kept since `reset()`).
 * @param {HTMLElement} container
 * @returns {{ show: (sample: object) => void, reset: () => void, state: () => object }}
 */
export function createPipelineView (container) {
  const row = make('ol', { class: 'pipeline-row', 'aria-label': 'The pipeline, client to consumer: each buffer\'s bytes against its bound' })
  const figures = make('div', { class: 'pipeline-figures' })
  container.replaceChildren(row, figures)
  /** key -> { node, fill, boundLine, peakTick, value, note, peak, scale } */
  let drawn = new Map()
  let last = null

  function reset () {
    drawn = new Map()
    last = null
    row.replaceChildren()
    figures.replaceChildren()
  }

  function show (sample) {
    if (!isPipelineSample(sample)) return
    const bars = pipelineBars(sample)
    // the set of bars changes only between runs (the kernel found or not): then start the row again
    if (bars.map(function key (b) { return b.key }).join() !== [...drawn.keys()].join()) {
      drawn = new Map()
      row.replaceChildren()
      for (const b of bars) {
        const parts = barNode(b)
        drawn.set(b.key, { ...parts, peak: 0 })
        row.append(parts.node)
      }
    }
    for (const b of bars) drawBar(drawn.get(b.key), b)
    figures.replaceChildren(...pipelineFigures(sample).map(function line (text) { return make('p', {}, text) }))
    last = sample
  }

  function state () {
    return {
      ms: last?.ms ?? null,
      settings: last?.settings ? { ...last.settings } : null,
      bars: [...drawn.entries()].map(function barState ([key, d]) {
        return { key, bytes: d.bytes, bound: d.bound, peak: d.peak, over: d.node.classList.contains('over'), unreadable: d.unreadable, text: d.node.textContent }
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
    make('p', { class: 'pipeline-label' }, b.label), value, note)
  return { node, fill, boundLine, peakTick, value, note }
}

/** One bar's bytes against the larger of its bound (with room) and its peak so far: the scale only grows, so a drain shows. */
function drawBar (d, b) {
  d.bytes = b.bytes
  d.bound = b.bound
  d.unreadable = b.unreadable
  d.peak = Math.max(d.peak, b.bytes ?? 0)
  const scale = Math.max(1, d.peak, (b.bound ?? 0) * BOUND_ROOM)
  d.fill.style.height = `${percent(b.bytes ?? 0, scale)}%`
  // a mark at the very top would sit on the tube's edge, out of sight
  d.peakTick.style.bottom = `${Math.min(MARK_TOP, percent(d.peak, scale))}%`
  d.peakTick.hidden = d.peak === 0
  d.boundLine.hidden = b.bound === null
  if (b.bound !== null) d.boundLine.style.bottom = `${Math.min(MARK_TOP, percent(b.bound, scale))}%`
  // a stream says "stop" only after the write that filled it: red past the bound and that slack
  const over = b.bound !== null && b.bytes !== null && b.bytes > b.bound + OVER_SLACK
  d.node.classList.toggle('over', over)
  d.node.classList.toggle('unknown', b.bytes === null)
  d.node.dataset.bytes = b.bytes === null ? '' : String(b.bytes)
  d.node.dataset.bound = b.bound === null ? '' : String(b.bound)
  d.node.dataset.peak = String(d.peak)
  d.value.textContent = `${formatBytes(b.bytes)}${b.bound === null ? '' : ` of ${formatBytes(b.bound)}`}${over ? ' · past its bound and a chunk' : ''} · peak ${formatBytes(d.peak)}`
  d.note.textContent = b.note
}

function percent (bytes, scale) {
  return Math.round(Math.min(100, Math.max(0, (bytes / scale) * 100)) * 10) / 10
}

/**
 * A recorded run's samples in a view, with a slider over them and a Play button: it opens on the
 * last sample, every bar's tick at the run's peak.
 * @param {HTMLElement} container
 * @param {object[]} samples pipeline samples, oldest first
 * @param {{ idPrefix?: string }} [settings]
 * @returns {{ destroy: () => void, state: () => object }}
 */
export function showRecordedPipeline (container, samples, { idPrefix = 'replay' } = {}) {
  const sliderId = `${idPrefix}-pipeline-at`
  const slider = make('input', { type: 'range', id: sliderId, min: '0', max: String(samples.length - 1), step: '1', value: String(samples.length - 1) })
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
    // as fast as recorded, at most: a thinned record's samples stand further apart
    timer = setInterval(function nextSample () {
      const next = Number(slider.value) + 1
      if (next >= samples.length) return stop()
      showAt(next)
    }, 250)
  })
  showAt(samples.length - 1)

  return {
    destroy: stop,
    state: function recordedState () { return { samples: samples.length, at: Number(slider.value), playing: timer !== null, ...view.state() } }
  }
}
