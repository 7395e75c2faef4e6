/** The dashboard page: GET /metrics into bounded stores, a throttled redraw; query parameters in README.md. */
import { createBrowserExport } from './browser-export.js'
import { createBytesChart, EXTERNAL_LAYERS } from './bytes-chart.js'
import { createCharts, LOOP_SERIES, MEMORY_SERIES } from './charts.js'
import { createControlPanel } from './control-panel.js'
import { downloadChartsPng, downloadText, exportName, samplesToCsv, samplesToJson } from './exports.js'
import { createFigures } from './figures-view.js'
import { formatClock } from './format.js'
import { explainGcTerms } from './gc-marks.js'
import { createHeldChart } from './held-chart.js'
import { applyLesson } from './lesson-view.js'
import { MarkLog } from './mark-log.js'
import { connectMetrics } from './metrics-connection.js'
import { createOutcomes, resetPeakButton } from './outcomes-view.js'
import { createPipelineLive } from './pipeline-live.js'
import { createReplay } from './replay.js'
import { RequestHeld } from './request-held.js'
import { createRunsPanel } from './runs-panel.js'
import { heapKey, storeSample } from './sample-parts.js'
import { SeriesStore } from './series-store.js'
import { createLiveSites } from './sites-view.js'
import { WarmUps } from './warm-ups.js'
import { createDatabaseNote } from './lesson-database.js'

const REDRAW_MS = 250
const PROJECTOR_KEY = 'streamlab.projector'

const query = new URLSearchParams(location.search)
const interval = readInteger(query.get('interval'), 10, 5000, 100)
const windowMinutes = readInteger(query.get('window'), 1, 10, 2)
const testHooks = query.get('test') === '1'
const lesson = applyLesson(query.get('lesson'), { bar: byId('lesson-bar') })

const store = new SeriesStore([...MEMORY_SERIES, ...LOOP_SERIES, ...EXTERNAL_LAYERS].map(function seriesKey (s) { return s.key }), {
  windowMs: windowMinutes * 60_000,
  intervalMs: interval
})
/** V8's heap spaces in the order the server names them; a store series each (heap_<name>), added as they appear. */
const heapSpaces = []
const marks = new MarkLog()
const held = new RequestHeld()
const warmUps = new WarmUps()
const renderFigures = createFigures({ store, marks })
const charts = createCharts({ memoryCanvas: byId('memory-chart'), loopCanvas: byId('loop-chart'), store, marks })
const bytesChart = createBytesChart({ canvas: byId('bytes-chart'), store, marks, spaces: function spacesSeen () { return heapSpaces } })
const heldChart = createHeldChart({ canvas: byId('held-chart'), held })

let received = 0
let lastSample = null
let lastSeq = null
let dirty = true
let paused = false
let redraws = 0
let lastRedrawMs = null
let dropped = 0
let gaps = 0
let restarts = 0

function onSample (sample) {
  if (sample === null || typeof sample !== 'object' || !Number.isFinite(sample.time)) return
  // seq counts every sample the process takes: going back means a new server process
  if (Number.isFinite(sample.seq)) {
    if (lastSeq !== null && sample.seq < lastSeq) {
      restarts++
      marks.serverRestarted()
      held.serverRestarted()
      warmUps.clear()
      showStreamNote()
    }
    lastSeq = sample.seq
  }
  received++
  lastSample = sample
  outcomesView.serverTime(sample.time)
  storeSample(store, heapSpaces, sample, marks)
  held.onSample(warmUps.without(sample.requests), sample.time, sample.requestsOmitted)
  dirty = true
}

const panel = createControlPanel(byIds({
  form: 'experiment-form', chooser: 'experiment-chooser', fields: 'experiment-fields', help: 'field-help', run: 'run', cancel: 'cancel',
  message: 'run-message', progress: 'run-progress', progressText: 'run-progress-text', results: 'results'
}), { experiment: lesson?.experiment, compact: lesson !== null, onFailed: checkDatabase })

const databaseNote = lesson?.name === 'db-export' ? createDatabaseNote(byId('results')) : null
databaseNote?.check()

function checkDatabase () { databaseNote?.check() }

const browserExport = createBrowserExport(byIds({
  form: 'browser-export-form', run: 'browser-export-run', cancel: 'browser-export-cancel', message: 'browser-export-message',
  status: 'browser-db-status', results: 'results'
}))

// a recorded run in place of the live charts (the stream goes on underneath, as when paused)
const replay = createReplay({
  ...byIds({ live: 'live-view', box: 'replay', bar: 'replay-bar', text: 'replay-text', back: 'back-to-live' }),
  onChange: function replayChanged (state) {
    // the address says what is shown, so a bookmark or a link opens it again (`?run=`, `&compare=`)
    const url = new URL(location.href)
    url.searchParams.delete('run')
    url.searchParams.delete('compare')
    if (state.run !== null) url.searchParams.set('run', state.run)
    if (state.run !== null && state.compare !== null) url.searchParams.set('compare', state.compare)
    history.replaceState(null, '', url)
    runsPanel.render()
    if (state.mode === 'live') redraw(true)
  }
})
const runsPanel = createRunsPanel(byIds({ list: 'runs-list', message: 'runs-message', file: 'run-file' }), replay)
const outcomesView = createOutcomes({ ...byIds({ banner: 'crash-banner', text: 'crash-text', dismiss: 'crash-dismiss' }), marks, panel })
const sitesView = createLiveSites(byId('sites'))
explainGcTerms(document)
const pipelineLive = createPipelineLive(byId('pipeline'))

function onEvent (type, data) {
  sitesView.onEvent(type, data)
  pipelineLive.onEvent(type, data)
  if (type === 'sample') onSample(data)
  else if (type === 'request' && warmUps.skip(data)) return
  else if (type === 'request') {
    marks.onRequest(data)
    held.onRequest(data)
  } else if (type === 'peak') marks.onPeak(data)
  else if (type === 'experiment') panel.onExperimentEvent(data)
  else if (type === 'crash') outcomesView.showCrash(data)
  else if (type === 'run-record') runsPanel.refresh()
  else if (type === 'dropped') {
    dropped += Number.isFinite(data?.count) ? data.count : 0
    showStreamNote()
  } else if (type === 'gap') {
    gaps++
    showStreamNote()
  }
  dirty = true
}

const connectionBox = byId('connection')

function onState (state, { since, reconnects }) {
  connectionBox.dataset.state = state
  document.body.dataset.connection = state
  if (state === 'live') {
    connectionBox.textContent = reconnects > 0
      ? `Live · reconnected at ${formatClock(since)}`
      : `Live · a sample every ${interval} ms`
  } else if (state === 'reconnecting') {
    connectionBox.textContent = `Reconnecting… (lost the server at ${formatClock(since)})`
  } else {
    connectionBox.textContent = 'Connecting…'
  }
}

const connection = connectMetrics({ url: `/metrics?interval=${interval}`, onState, onEvent })

function showStreamNote () {
  const parts = []
  if (restarts > 0) {
    const times = restarts === 1 ? 'once' : `${restarts} times`
    parts.push(`The server restarted ${times} while this page was open; its peak and its request ids started again.`)
  }
  if (dropped > 0) parts.push(`${dropped} samples were dropped because this page read too slowly.`)
  if (gaps > 0) parts.push(`${gaps} gap${gaps === 1 ? '' : 's'} in the event history: some requests may be missing from the chart.`)
  byId('stream-note').textContent = parts.join(' ')
}

/** The throttled redraw: everything visible changes here, never per sample. */
const LEAST_SPAN_MS = 10_000

function redraw (force = false) {
  if (!dirty && !force) return
  if (document.hidden && !force) return
  dirty = false
  renderFigures(lastSample)
  if ((paused || replay.mode !== 'live') && !force) return
  const latest = store.latest ?? Date.now()
  const from = latest - store.windowMs
  marks.trim(from)
  held.trim(from)
  const started = performance.now()
  // until the window is full the chart spans what there is (ten seconds at least, for two clock labels), not an empty axis
  const start = Math.max(from, Math.min(store.oldest ?? from, latest - LEAST_SPAN_MS))
  charts.setRange(start, latest)
  bytesChart.setRange(start, latest)
  charts.update()
  bytesChart.update()
  heldChart.update()
  // a lesson's view folds the bars while there are none (dashboard.css)
  byId('held-box').dataset.empty = String(held.inFlight.size === 0 && held.finished.length === 0)
  lastRedrawMs = performance.now() - started
  redraws++
  document.body.dataset.samples = String(received)
  document.body.dataset.points = String(store.length)
  document.body.dataset.markers = String(charts.markersDrawn())
}

setInterval(redraw, REDRAW_MS)
document.addEventListener('visibilitychange', function redrawWhenShown () {
  if (!document.hidden) redraw(true)
})

const windowSelect = byId('window-minutes')
for (let minutes = 1; minutes <= 10; minutes++) {
  windowSelect.append(new Option(`${minutes} min`, String(minutes), false, minutes === windowMinutes))
}
windowSelect.addEventListener('change', function changeWindow () {
  store.setWindow(Number(windowSelect.value) * 60_000)
  redraw(true)
})

const pauseButton = byId('pause')
pauseButton.addEventListener('click', function togglePause () {
  paused = !paused
  pauseButton.setAttribute('aria-pressed', String(paused))
  pauseButton.textContent = paused ? 'Resume' : 'Pause'
  byId('paused-note').hidden = !paused
  if (!paused) redraw(true)
})

const projectorButton = byId('projector')
function setProjector (on) {
  document.documentElement.classList.toggle('projector', on)
  projectorButton.setAttribute('aria-pressed', String(on))
  charts.setProjector(on)
  bytesChart.setProjector(on)
  heldChart.setProjector(on)
  replay.setProjector(on)
  try {
    localStorage.setItem(PROJECTOR_KEY, on ? '1' : '0')
  } catch {
    // storage may be off (private mode): the toggle still works for this visit
  }
}
projectorButton.addEventListener('click', function toggleProjector () {
  setProjector(projectorButton.getAttribute('aria-pressed') !== 'true')
})
// a lesson's view is for the projector; ?projector=1 (or 0) in a bookmark wins over what the browser remembers
setProjector(lesson !== null || (query.has('projector') ? query.get('projector') === '1' : readProjector()))

byId('export-csv').addEventListener('click', function exportCsv () {
  downloadText(exportName('samples', 'csv'), 'text/csv', samplesToCsv(store))
})
byId('export-json').addEventListener('click', function exportJson () {
  downloadText(exportName('samples', 'json'), 'application/json', samplesToJson(store, marks, { interval, windowMs: store.windowMs }))
})
byId('export-png').addEventListener('click', function exportPng () {
  downloadChartsPng([[charts.memory, heldChart.chart], [bytesChart.chart]], exportName('charts', 'png'))
})

const heldScale = byId('held-log')
heldScale.addEventListener('click', function toggleHeldScale () {
  const log = heldScale.getAttribute('aria-pressed') !== 'true'
  heldScale.setAttribute('aria-pressed', String(log))
  heldChart.setScale(log ? 'logarithmic' : 'linear')
})

resetPeakButton(byId('reset-peak'), byId('reset-message'))

panel.load()
browserExport.loadStatus()
outcomesView.load().then(function loaded () { dirty = true })
runsPanel.refresh()
runsPanel.openFromQuery(query.get('run'), query.get('compare'))


const debug = {
  get state () { return connection.state },
  get interval () { return interval },
  get samples () { return received },
  get points () { return store.length },
  get maxPoints () { return store.maxPoints },
  get hardCap () { return store.hardCap },
  get windowMs () { return store.windowMs },
  get oldest () { return store.oldest },
  get latest () { return store.latest },
  get outOfOrder () { return store.outOfOrder },
  get markers () { return charts.markersDrawn() },
  get marks () { return marks.counts() },
  get requestsSeen () { return { ...marks.seen } },
  get redraws () { return redraws },
  get lastRedrawMs () { return lastRedrawMs },
  get paused () { return paused },
  get dropped () { return dropped },
  get lastSample () { return lastSample === null ? null : structuredClone(lastSample) },
  get experiment () { return panel.current },
  get outcomes () { return outcomesView.outcomes },
  get browserExport () { return browserExport.last },
  get projector () { return document.documentElement.classList.contains('projector') },
  get lesson () { return lesson },
  /** "Where the bytes are": the heap spaces named, each one's largest in the window, the layers bottom to top (MiB). */
  get bytes () {
    return {
      spaces: [...heapSpaces],
      windowMax: Object.fromEntries(heapSpaces.map(function spaceMax (space) { return [space, store.maxOf(heapKey(space))] })),
      layers: bytesChart.shown().map(function withPoints (layer) { return { ...layer, points: store.series(layer.key) } })
    }
  },
  get requestBars () { return heldChart.state() },
  get replay () { return replay.state() },
  get runs () { return runsPanel.state() },
  get sites () { return sitesView.state() }
}
if (testHooks) {
  /** Feed samples through the stream's path (a long session in a moment); `replace` forgets the kept points first. */
  debug.inject = function inject (samples, { replace = false } = {}) {
    if (replace) store.clear()
    for (const sample of samples) onSample(sample)
    redraw(true)
    return store.length
  }
  /** Feed one event (`request`, `crash`, …) through the stream's path. */
  debug.injectEvent = function injectEvent (type, data) {
    onEvent(type, data)
    redraw(true)
  }
}
window.streamlab = Object.freeze(debug)

function byId (id) { return document.getElementById(id) }

/** `{ name: id }` as `{ name: element }`. */
function byIds (ids) {
  return Object.fromEntries(Object.entries(ids).map(function element ([name, id]) { return [name, byId(id)] }))
}

function readInteger (text, min, max, fallback) {
  const n = text !== null && /^\d+$/.test(text) ? Number(text) : NaN
  return n >= min && n <= max ? n : fallback
}

function readProjector () {
  try {
    return localStorage.getItem(PROJECTOR_KEY) === '1'
  } catch {
    return false
  }
}
