/** One recorded run drawn as the live view draws the server, from the record alone (README.md). */
import { createBytesChart, EXTERNAL_LAYERS } from './bytes-chart.js'
import { createCharts, LOOP_SERIES, MEMORY_SERIES, ROUTE_COLORS } from './charts.js'
import { make } from './dom.js'
import { gcKeyItems } from './gc-marks.js'
import { formatCount, formatMiB, formatMs } from './format.js'
import { MiB } from '../lib/util/units.js'
import { createHeldChart } from './held-chart.js'
import { MarkLog } from './mark-log.js'
import { recordedPipeline } from '../lib/experiments/pipeline-sample.js'
import { showRecordedPipeline } from './pipeline-view.js'
import { RequestHeld } from './request-held.js'
import { renderResults, shortId } from './results-view.js'
import { storeSample } from './sample-parts.js'
import { SeriesStore } from './series-store.js'
import { renderRecordSites } from './sites-view.js'

const BARS_PER_ROUTE = 2 // the largest requests of each route drawn as bars: the live view keeps the last two that ended
const REPLAY_POINTS = 6000 // points a replay keeps per series: more than a record holds (lib/runs/timeline.js `maxSamples`)

/** Who wrote a record (lib/runs/check.js RUN_SOURCES), as the page says it. */
const SOURCE_LABELS = Object.freeze({ engine: 'the lab', bench: 'the bench', grade: 'the grader' })

/** What a record says of its run, in lines of text: what ran, where, with what, and what it left out. */
export function describeRecord (record) {
  const { run, where } = record
  const who = SOURCE_LABELS[run.source] ?? run.source
  const ended = Number.isFinite(run.endedAt) ? `, ${formatSeconds(run.endedAt - run.startedAt)}` : ''
  const lines = [
    `${run.experiment} · ${run.status} · ${who} · started ${utcMinute(run.startedAt)}${ended}`,
    `Node ${where.node}${where.v8 ? ` (V8 ${where.v8})` : ''} · ${where.platform}-${where.arch} · ${where.cores} cores · ` +
      `${formatMiB(where.memoryBytes)} · ${where.lab.name} ${where.lab.version}` +
      (where.portable ? ' · portable: peaks sampled, not the kernel\'s' : '')
  ]
  const params = Object.entries(run.params ?? {}).filter(function given ([, v]) { return v !== null && v !== '' })
  const pair = function pair ([k, v]) { return `${k} ${typeof v === 'object' ? JSON.stringify(v) : v}` }
  if (params.length > 0) lines.push(`params: ${params.map(pair).join(', ')}`)
  const thinned = record.timeline.thinned
  if (thinned !== null) {
    const said = function said (k) { return `${k} ${formatCount(thinned[k].seen)} → ${formatCount(thinned[k].kept)}` }
    const parts = ['samples', 'spans', 'marks'].filter(function cut (k) { return thinned[k] }).map(said)
    if (Number.isFinite(thinned.requestsCut)) parts.push(`${formatCount(thinned.requestsCut)} in-flight entries summed`)
    lines.push(`thinned to fit the record (peaks kept): ${parts.join('; ')}`)
  }
  if (record.timeline.samples.length === 0) {
    lines.push(`no timeline: ${who} measured fresh processes from outside, so this record has its results alone`)
  }
  if (record.error !== null) lines.push(`ended with ${record.error.type}: ${record.error.message}`)
  return lines
}

/** A record's title line: "Run 8f734d67: Buffered vs streamed gzip ingest". */
export function recordTitle (record) {
  return `Run ${shortId(record.id)}: ${record.run.title ?? record.run.experiment}`
}

/** The route key under a chart: a swatch per route the run exercised, in its colour. */
export function routeKey (routes, extra = []) {
  const key = make('p', { class: 'key' })
  for (const route of routes) {
    const known = Object.hasOwn(ROUTE_COLORS, route)
    // a class only for a route the stylesheet colours; any other route name stays text
    key.append(make('span', { class: `swatch ${known ? `swatch-${route}` : 'swatch-other'}`, 'aria-hidden': 'true' }), ` /${route}`)
  }
  key.append(...extra)
  return key
}

/** A record's timeline in the live view's stores: points, request marks, peak resets, each route's largest requests. */
export function replayStores (record) {
  const { samples, spans, marks: recordMarks } = record.timeline
  const first = samples[0]?.time ?? record.run.startedAt
  const last = samples.at(-1)?.time ?? record.run.endedAt ?? first
  const store = new SeriesStore([...MEMORY_SERIES, ...LOOP_SERIES, ...EXTERNAL_LAYERS].map(function key (s) { return s.key }), {
    // the whole run in the window, every sample kept
    windowMs: Math.max(1000, last - first + 1000),
    intervalMs: 1,
    hardCap: REPLAY_POINTS
  })
  const spaces = []
  for (const sample of samples) storeSample(store, spaces, sample)
  const marks = new MarkLog()
  const events = []
  for (const { id, route, start, end, status = null, ms, errorType = null } of spans) {
    events.push({ phase: 'start', id, route, time: start })
    if (end !== null) events.push({ phase: 'end', id, route, time: end, status, ms, errorType })
  }
  // a start before an end at the same time: a request of 0 ms still opens before it closes
  events.sort(function byTime (a, b) { return a.time - b.time || (a.phase === 'start' ? -1 : 1) - (b.phase === 'start' ? -1 : 1) })
  for (const event of events) marks.onRequest(event)
  // 'lab-peak-reset': one the lab made for its own measurement, not drawn
  for (const mark of recordMarks) if (mark.kind === 'peak-reset') marks.onPeak({ reset: true, time: mark.time })
  marks.gc.add(record.timeline.gc ?? [])
  const held = new RequestHeld()
  for (const { id, route, end: time, held: bytes, bounds, heldPeak } of largestSpans(spans)) {
    held.onRequest({ phase: 'end', id, route, time, held: bytes, bounds, heldPeak })
  }
  return { store, spaces, marks, held, range: [Math.min(first, record.run.startedAt), Math.max(last, record.run.endedAt ?? last)] }
}

/** Each route's BARS_PER_ROUTE ended spans that held the most, oldest first (the bars keep the newest on top). */
function largestSpans (spans) {
  const byRoute = new Map()
  for (const span of spans) {
    if (span.end === null || span.held === undefined || span.held === null) continue
    if (!byRoute.has(span.route)) byRoute.set(span.route, [])
    byRoute.get(span.route).push(span)
  }
  const chosen = []
  for (const list of byRoute.values()) {
    list.sort(function mostHeld (a, b) { return (b.heldPeak ?? 0) - (a.heldPeak ?? 0) })
    for (const span of list.slice(0, BARS_PER_ROUTE)) chosen.push(span)
  }
  return chosen.sort(function byEnd (a, b) { return a.end - b.end })
}

/** A view of one run in `container`; `show(record)` draws it; `idPrefix` keeps its ids apart from the live charts'. */
export function createRunView (container, { idPrefix = 'replay' } = {}) {
  let drawn = null
  let projector = false

  function destroy () {
    if (drawn !== null) for (const chart of drawn.charts) chart.destroy()
    drawn?.pipeline?.destroy()
    drawn = null
    container.replaceChildren()
  }

  function show (record) {
    destroy()
    const stores = replayStores(record)
    const id = function prefixed (name) { return `${idPrefix}-${name}` }
    const canvas = function canvas (name, label) { return make('canvas', { id: id(`${name}-chart`), role: 'img', 'aria-label': label }) }
    const canvases = {
      memory: canvas('memory', 'The recorded run\'s memory in MiB over time: RSS, heap total, heap used, external, array buffers ' +
        'and peak RSS, with its requests shaded by route'),
      held: canvas('held', 'Bytes held by stage by the largest requests of each route, at their peak'),
      bytes: canvas('bytes', 'Where the recorded run\'s bytes were, in MiB over time: V8\'s heap spaces, array buffers ' +
        'and other external memory, stacked, with RSS as a line'),
      loop: canvas('loop', 'The recorded run\'s event-loop delay in ms over time, p99 and max')
    }
    const logButton = make('button', { type: 'button', id: id('held-log'), 'aria-pressed': 'false', 'aria-controls': id('held-chart') },
      'Log scale')
    const results = make('section', { class: 'results-box', id: id('results') })
    const sitesBox = make('section', { class: 'sites-box', id: id('sites') })
    const pipelineSamples = recordedPipeline(record.results)
    const showPipeline = function showPipeline () {
      return pipelineSamples && showRecordedPipeline(pipelineBox, pipelineSamples, { idPrefix })
    }
    const pipelineBox = make('section', { class: 'pipeline-box', id: id('pipeline'),
      'aria-label': 'The recorded run\'s pipeline, client to consumer' })
    if (record.timeline.samples.length === 0 && record.timeline.spans.length === 0) {
      // measured from outside (a bench of fresh labs, a grading): results alone, no empty charts
      container.replaceChildren(
        make('h2', { class: 'replay-title' }, recordTitle(record)),
        ...describeRecord(record).map(function line (text) { return make('p', { class: 'replay-about' }, text) }),
        ...(pipelineSamples === null ? [] : [pipelineBox]),
        results)
      drawn = { record, stores, charts: [], parts: null, pipeline: showPipeline() }
      showResults(results, record)
      return
    }
    container.replaceChildren(
      make('h2', { class: 'replay-title' }, recordTitle(record)),
      ...describeRecord(record).map(function line (text) { return make('p', { class: 'replay-about' }, text) }),
      ...(pipelineSamples === null ? [] : [pipelineBox]),
      make('div', { class: 'chart-grid' },
        make('div', { class: 'chart-box memory' }, canvases.memory),
        make('div', { class: 'held-box' },
          make('div', { class: 'held-head' }, logButton), make('div', { class: 'chart-box held' }, canvases.held)),
        make('div', { class: 'chart-box bytes' }, canvases.bytes),
        make('div', { class: 'chart-box loop' }, canvases.loop)),
      routeKey(record.run.routes, [make('span', { class: 'swatch swatch-reset', 'aria-hidden': 'true' }), ' peak reset ',
        ...gcKeyItems(make)]),
      results,
      sitesBox)
    const charts = createCharts({ memoryCanvas: canvases.memory, loopCanvas: canvases.loop, store: stores.store, marks: stores.marks })
    const spaces = function spacesSeen () { return stores.spaces }
    const bytesChart = createBytesChart({ canvas: canvases.bytes, store: stores.store, marks: stores.marks, spaces })
    const heldChart = createHeldChart({ canvas: canvases.held, held: stores.held })
    drawn = {
      record,
      stores,
      charts: [charts.memory, charts.loop, bytesChart.chart, heldChart.chart],
      parts: { charts, bytesChart, heldChart },
      sites: renderRecordSites(sitesBox, record),
      pipeline: showPipeline()
    }
    logButton.addEventListener('click', function toggleHeldScale () {
      const log = logButton.getAttribute('aria-pressed') !== 'true'
      logButton.setAttribute('aria-pressed', String(log))
      heldChart.setScale(log ? 'logarithmic' : 'linear')
    })
    const [from, to] = stores.range
    charts.setRange(from, to)
    bytesChart.setRange(from, to)
    setProjector(projector)
    charts.update()
    bytesChart.update()
    heldChart.update()
    showResults(results, record)
  }

  function setProjector (on) {
    projector = on
    if (drawn === null || drawn.parts === null) return
    drawn.parts.charts.setProjector(on)
    drawn.parts.bytesChart.setProjector(on)
    drawn.parts.heldChart.setProjector(on)
  }

  /** What is drawn, for the page's debug view: the peaks as the charts hold them (bytes), the spans, the bars. */
  function state () {
    if (drawn === null) return null
    const run = { id: drawn.record.id, title: drawn.record.run.title, routes: [...drawn.record.run.routes] }
    if (drawn.parts === null) return { ...run, samples: 0, spans: 0, charts: false, pipeline: drawn.pipeline?.state() ?? null }
    const { store, marks } = drawn.stores
    const peak = function peakOf (key) { const max = store.maxOf(key); return max === null ? null : max * MiB }
    return {
      ...run,
      samples: store.length,
      peaks: {
        rss: peak('rss'), peakRss: peak('peakRss'), heapUsed: peak('heapUsed'), arrayBuffers: peak('arrayBuffers'),
        loopMax: store.maxOf('loopMax')
      },
      spans: marks.requests.length,
      peakResets: marks.peakResets.length,
      markers: drawn.parts.charts.markersDrawn(),
      gcMarks: drawn.parts.charts.memory.$streamlabGc ?? null,
      range: [...drawn.stores.range],
      layers: drawn.parts.bytesChart.shown().map(function key (layer) { return layer.key }),
      bars: drawn.parts.heldChart.state().bars.map(function bar (b) { return { route: b.route, id: b.id, total: b.total } }),
      sites: drawn.sites,
      pipeline: drawn.pipeline?.state() ?? null
    }
  }

  return { show, destroy, setProjector, state }
}

/** A record's results, or why it has none. */
function showResults (box, record) {
  if (record.results !== null) {
    renderResults(box, { id: record.id, params: record.run.params, result: record.results })
  } else {
    const why = record.error === null ? 'The run recorded no results.' : `The run failed: ${record.error.message}`
    box.replaceChildren(make('h2', {}, 'Results'), make('p', { class: 'help' }, why))
  }
}

function utcMinute (time) {
  return `${new Date(time).toISOString().slice(0, 16).replace('T', ' ')} UTC`
}

function formatSeconds (ms) {
  return ms < 1000 ? formatMs(ms) : `${(ms / 1000).toFixed(1)} s`
}
