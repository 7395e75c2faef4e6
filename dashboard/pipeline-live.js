/** The pipeline of the run in flight, with its live params as controls (README.md). */
import { make } from './dom.js'
import { isPipelineSample } from '../lib/experiments/pipeline-sample.js'
import { createPipelineView } from './pipeline-view.js'
import { requestJson } from './request-json.js'
import { shortId } from './results-view.js'

const NEXT_RUN_PARAM = 'highWaterMark' // the setting a run cannot change: its streams are made with it when the upload begins
const ENDED = new Set(['result', 'error', 'cancelled'])

/** `box`: where the view goes (hidden until a run sends a pipeline) */
export function createPipelineLive (box) {
  const status = make('p', { class: 'pipeline-status', role: 'status' })
  const controls = make('form', { class: 'pipeline-controls', novalidate: '', 'aria-label': 'The run\'s live settings' })
  const message = make('p', { class: 'message pipeline-message', role: 'status', 'aria-live': 'polite' })
  const viewBox = make('div', { class: 'pipeline-view' })
  box.replaceChildren(make('h2', {}, 'The pipeline, client to consumer'), status, controls, message, viewBox)
  box.hidden = true
  const view = createPipelineView(viewBox)
  // a change is sent as it is made: Enter in a field must not submit (and reload) the page
  controls.addEventListener('submit', function stay (event) { event.preventDefault() })
  let current = null // the run drawn: { id, name, running }
  const schemas = new Map() // experiment name -> its schema's params (a promise, asked once)
  let pending = 0
  /** param -> the value the server took, until a sample shows it applied (the run applies it at its next look) */
  let wanted = new Map()

  /** A /metrics event: the `experiment` ones are this view's. */
  function onEvent (type, event) {
    if (type !== 'experiment' || event === null || typeof event !== 'object' || typeof event.id !== 'string') return
    if (event.phase === 'progress' && isPipelineSample(event.pipeline)) {
      if (current?.id !== event.id) follow(event)
      view.show(event.pipeline)
      syncControls(event.pipeline.settings)
    } else if (ENDED.has(event.phase) && current?.id === event.id && current.running) {
      // the run's last sample is its upload's end, whose peaks are the result's: a throttled progress may not have carried it
      const last = Array.isArray(event.result?.samples) ? event.result.samples.at(-1) : null
      if (isPipelineSample(last)) view.show(last)
      current.running = false
      setDisabled(true)
      status.textContent = `${runName(event)} ended: the bars hold its last sample, the ticks its peaks. ` +
        'Open its record in Runs to replay it.'
    }
  }

  function follow (event) {
    current = { id: event.id, name: event.name, running: true }
    wanted = new Map()
    view.reset()
    box.hidden = false
    message.textContent = ''
    status.textContent = `${runName(event)}, live: a bar fills as its buffer holds bytes; the line across it is its bound.`
    buildControls(current)
  }

  async function buildControls (run) {
    controls.replaceChildren()
    if (!schemas.has(run.name)) schemas.set(run.name, loadSchema(run.name))
    const params = await schemas.get(run.name)
    if (current !== run) return
    for (const param of params.filter(function isLive (p) { return p.live === true })) controls.append(liveField(param, send))
    const next = params.find(function named (p) { return p.name === NEXT_RUN_PARAM && p.live !== true })
    if (next) controls.append(nextRunField(next, message))
    setDisabled(!run.running)
  }

  async function send (param, value) {
    const run = current
    if (run === null || !run.running) return
    const given = param.type === 'integer' && /^\d+$/.test(value) ? Number(value) : value
    pending++
    message.dataset.kind = 'info'
    message.textContent = `Sending ${param.name} ${given}…`
    try {
      const answer = await requestJson('PATCH', `/experiments/${encodeURIComponent(run.id)}`, { params: { [param.name]: given } })
      if (current === run) wanted.set(param.name, answer?.params?.[param.name])
      message.textContent = `${param.name} ${given} sent: the next samples show it applied.`
    } catch (err) {
      message.dataset.kind = 'error'
      message.textContent = `Not changed: ${err.message}`
    } finally {
      pending--
    }
  }

  /** The samples' settings into the controls, unless one is being edited or a change is on its way (sent, or not yet applied). */
  function syncControls (settings) {
    if (settings === null || typeof settings !== 'object' || pending > 0) return
    for (const input of controls.querySelectorAll('[data-live]')) {
      const name = input.dataset.live
      const value = settings[name]
      if (wanted.has(name) && String(wanted.get(name)) !== String(value)) continue
      wanted.delete(name)
      if (input !== document.activeElement && (typeof value === 'string' || Number.isFinite(value))) input.value = String(value)
    }
  }

  function setDisabled (disabled) {
    for (const input of controls.querySelectorAll('[data-live]')) input.disabled = disabled
  }

  return { onEvent }
}

async function loadSchema (name) {
  try {
    const listing = await requestJson('GET', '/experiments')
    return listing.experiments?.find(function named (e) { return e.name === name })?.params ?? []
  } catch {
    // no controls, the bars still draw: the message of the next PATCH would say what is wrong anyway
    return []
  }
}

/** A control for a live param: a select, a bounded number, or text the server checks; a change is sent at once. */
function liveField (param, send) {
  const id = `pipeline-${param.name}`
  let input
  if (param.type === 'enum') {
    input = make('select', { id, name: id })
    for (const value of param.values ?? []) input.append(make('option', { value }, value))
  } else if (param.type === 'integer') {
    input = make('input', { id, name: id, type: 'number', step: '1', inputmode: 'numeric' })
    if (Number.isFinite(param.min)) input.min = String(param.min)
    if (Number.isFinite(param.max)) input.max = String(param.max)
  } else {
    input = make('input', { id, name: id, type: 'text', autocomplete: 'off', spellcheck: 'false' })
  }
  input.dataset.live = param.name
  input.title = param.help ?? ''
  input.addEventListener('change', function sendChange () {
    if (input.value.trim() !== '') send(param, input.value.trim())
  })
  return make('div', { class: 'field' }, make('label', { for: id }, param.label ?? param.name), input)
}

function runName (event) { return `Run ${shortId(event.id)} (${event.name})` }

/** highWaterMark: given to the Experiment panel's field for the next run, since this run's streams have theirs. */
function nextRunField (param, message) {
  const id = `pipeline-${param.name}`
  const placeholder = String(param.default ?? '')
  const input = make('input', { id, name: id, type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder })
  input.addEventListener('change', function setForNextRun () {
    const field = document.getElementById(`param-${param.name}`)
    if (field !== null) field.value = input.value.trim()
    message.dataset.kind = 'info'
    message.textContent = field === null
      ? `${param.name} applies to the next run: set it in the Experiment panel.`
      : `${param.name} ${input.value.trim()} set in the Experiment panel for the next run: this run's streams were made with theirs.`
  })
  return make('div', { class: 'field' },
    make('label', { for: id }, `${param.label ?? param.name} (next run)`), input,
    make('small', { class: 'help' }, 'Applies to the next run: the streams are made when the upload starts.'))
}
