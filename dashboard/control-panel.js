/** The teacher's control panel, built from GET /experiments: the page names no experiment (README.md). */
import { make, say } from './dom.js'
import { formatClock } from './format.js'
import { requestJson } from './request-json.js'
import { describeStep } from './run-steps.js'
import { renderResults, shortId } from './results-view.js'

const POLL_MS = 500

/** `options`: `experiment` chosen first, `compact` results (a lesson's view), `onFailed` called when a followed run fails. */
export function createControlPanel (el, options = {}) {
  let experiments = []
  let chosen = null
  let current = null // the run being followed: { id, status, progress }
  let pollTimer = null
  let polling = false
  let shownResultFor = null

  async function load () {
    let listing
    try {
      listing = await requestJson('GET', '/experiments')
    } catch (err) {
      showMessage(`Could not load the experiments: ${err.message}`, 'error')
      return
    }
    experiments = listing.experiments ?? []
    const offered = experiments.some(function isLessons (e) { return e.name === options.experiment })
    const first = offered ? options.experiment : experiments[0]?.name
    renderChooser(first)
    choose(first)
    if (listing.running) follow(listing.running)
  }

  function renderChooser (first) {
    el.chooser.replaceChildren()
    if (experiments.length < 2) {
      el.chooser.hidden = true
      return
    }
    el.chooser.hidden = false
    const label = make('label', { for: 'experiment-name' }, 'Experiment')
    const select = make('select', { id: 'experiment-name', name: 'experiment' })
    for (const e of experiments) select.append(make('option', { value: e.name }, e.title ?? e.name))
    select.value = first
    select.addEventListener('change', function chooseExperiment () { choose(select.value) })
    el.chooser.append(label, select)
  }

  function choose (name) {
    chosen = experiments.find(function byName (e) { return e.name === name }) ?? null
    el.fields.replaceChildren()
    if (chosen === null) {
      el.run.disabled = true
      showMessage('The server offers no experiment.', 'error')
      return
    }
    el.run.disabled = false
    for (const param of chosen.params ?? []) el.fields.append(renderField(param))
    showHelp(null)
  }

  /** The field's help goes in a fixed box under the fields: inside the field it would move Run under the pointer mid-click. */
  function showHelp (input) {
    const help = input?.getAttribute('aria-describedby')
    el.help.textContent = help ? document.getElementById(help)?.textContent ?? '' : chosen?.description ?? ''
  }

  function collectParams () {
    const params = {}
    for (const param of chosen.params ?? []) {
      const input = el.form.elements.namedItem(`param-${param.name}`)
      if (!input) continue
      const value = input.value.trim()
      // empty means "the server's default": it is not sent at all
      if (value === '') continue
      params[param.name] = param.type === 'integer' && /^\d+$/.test(value) ? Number(value) : value
    }
    return params
  }

  async function start (event) {
    event.preventDefault()
    if (chosen === null) return
    showMessage('Starting…', 'info')
    let run
    try {
      run = await requestJson('POST', '/experiments', { name: chosen.name, params: collectParams() })
    } catch (err) {
      showMessage(err.message, 'error')
      return
    }
    showMessage(`Started run ${shortId(run.id)}.`, 'info')
    follow(run.id, run)
  }

  async function cancel () {
    if (current === null || current.status !== 'running') return
    el.cancel.disabled = true
    showMessage('Cancelling…', 'info')
    try {
      const run = await requestJson('DELETE', `/experiments/${encodeURIComponent(current.id)}`)
      show(run)
      showMessage(`Run ${shortId(run.id)} cancelled.`, 'info')
    } catch (err) {
      showMessage(err.message, 'error')
      el.cancel.disabled = current?.status !== 'running'
    }
  }

  /** Follow a run: poll it until it ends, and show its progress and result. */
  function follow (id, known) {
    if (current?.id === id) {
      if (known) show(known)
      return
    }
    current = { id, status: 'running', progress: null }
    if (known) show(known)
    else showRunning()
    pollSoon(0)
  }

  function pollSoon (delay) {
    if (pollTimer !== null) clearTimeout(pollTimer)
    pollTimer = setTimeout(poll, delay)
  }

  async function poll () {
    pollTimer = null
    // one GET at a time: the one in flight schedules the next
    if (polling) return
    const id = current?.id
    if (!id) return
    polling = true
    try {
      const run = await requestJson('GET', `/experiments/${encodeURIComponent(id)}`)
      if (current?.id === id) show(run)
    } catch (err) {
      if (current?.id === id) {
        showMessage(err.message, 'error')
        // the server restarted and forgot the run: nothing more to follow
        if (err.status === 404) {
          current.status = 'unknown'
          showRunning()
        }
      }
    } finally {
      polling = false
    }
    if (current !== null && current.status === 'running' && pollTimer === null) pollSoon(POLL_MS)
  }

  /** A run state from the server (POST, GET or DELETE answer). */
  function show (run) {
    if (current === null || run.id !== current.id) return
    current.status = run.status
    current.progress = run.progress ?? current.progress
    showRunning()
    if (run.status === 'done' && run.result && shownResultFor !== run.id) {
      shownResultFor = run.id
      renderResults(el.results, run, { compact: options.compact === true })
      showMessage(`Run ${shortId(run.id)} finished.`, 'info')
    } else if (run.status === 'failed') {
      showMessage(`Run ${shortId(run.id)} failed: ${describeError(run.error)}`, 'error')
      options.onFailed?.(run)
    } else if (run.status === 'cancelled' && shownResultFor !== run.id) {
      shownResultFor = run.id
      showMessage(`Run ${shortId(run.id)} was cancelled.`, 'info')
    }
  }

  function showRunning () {
    const running = current?.status === 'running'
    el.cancel.disabled = !running
    el.form.dataset.runStatus = current?.status ?? 'idle'
    el.form.dataset.runId = current?.id ?? ''
    const p = current?.progress
    const total = Number.isFinite(p?.total) && p.total > 0 ? p.total : null
    if (running && total === null) {
      el.progress.removeAttribute('value')
    } else {
      el.progress.max = total ?? 1
      // a run that is done is full, whatever count its last progress event gave
      if (current?.status === 'done') el.progress.value = el.progress.max
      else el.progress.value = total === null ? 0 : p.done
    }
    el.progress.hidden = current === null
    el.progressText.replaceChildren(...(current === null ? [] : describeProgress(current)))
  }

  /** An `experiment` event from /metrics: follow a run started elsewhere, move the progress bar between polls. */
  function onExperimentEvent (event) {
    if (event === null || typeof event !== 'object' || typeof event.id !== 'string') return
    if (event.phase === 'start') {
      if (current?.id !== event.id) follow(event.id)
      return
    }
    // a run whose start this page missed (it connected later, or a grading run): follow it, unless it follows another
    if (event.phase === 'progress' && current?.id !== event.id && current?.status !== 'running') follow(event.id)
    if (current?.id !== event.id) return
    if (event.phase === 'progress') {
      current.progress = { ...event }
      showRunning()
    } else if (current.status === 'running') {
      // the end: one more GET brings the result (or the error) as the server keeps it
      pollSoon(0)
    }
  }

  /** A run finished before this page opened (the snapshot's latest result), shown unless the page has shown one since. */
  function showEarlier (entry) {
    if (shownResultFor !== null || typeof entry?.id !== 'string' || entry.result === null || typeof entry.result !== 'object') return
    // a lesson's view shows its own experiment's runs only
    if (options.experiment !== undefined && entry.name !== options.experiment) return
    shownResultFor = entry.id
    renderResults(el.results, entry, { compact: options.compact === true })
    const when = Number.isFinite(entry.time) ? ` at ${formatClock(entry.time)}` : ''
    const said = `Run ${shortId(entry.id)} (${entry.name}) finished${when}, before this page opened.`
    const note = make('p', { class: 'help earlier-run' }, said)
    el.results.querySelector('h2')?.after(note)
  }

  function showMessage (text, kind) { say(el.message, text, kind) }

  el.form.addEventListener('submit', start)
  el.fields.addEventListener('focusin', function helpForField (event) { showHelp(event.target) })
  el.fields.addEventListener('focusout', function helpForExperiment () { showHelp(null) })
  el.cancel.addEventListener('click', cancel)

  return { load, onExperimentEvent, showEarlier, get current () { return current === null ? null : { ...current } } }
}

/** One labelled input for a schema parameter, with its help text tied to it. */
function renderField (param) {
  const id = `param-${param.name}`
  const helpId = `${id}-help`
  const field = make('div', { class: 'field' })
  field.append(make('label', { for: id }, param.label ?? param.name))
  let input
  if (param.type === 'enum') {
    input = make('select', { id, name: id })
    for (const value of param.values ?? []) {
      const option = make('option', { value }, param.valueLabels?.[value] ?? value)
      if (value === param.default) option.selected = true
      input.append(option)
    }
  } else if (param.type === 'integer') {
    input = make('input', { id, name: id, type: 'number', step: '1', inputmode: 'numeric' })
    if (Number.isFinite(param.min)) input.min = String(param.min)
    if (Number.isFinite(param.max)) input.max = String(param.max)
    input.value = param.default ?? ''
    input.placeholder = param.default === null || param.default === undefined ? 'default' : ''
  } else {
    // 'size' and anything newer: free text the server checks (it answers 400 naming the field)
    input = make('input', { id, name: id, type: 'text', autocomplete: 'off', spellcheck: 'false' })
    input.value = param.default ?? ''
    if (param.type === 'size') input.placeholder = 'e.g. 10MB'
  }
  input.dataset.param = param.name
  input.dataset.type = param.type
  if (param.help) {
    input.setAttribute('aria-describedby', helpId)
    // read by screen readers with the input; shown to everyone in the panel's help box
    field.append(input, make('small', { id: helpId, class: 'visually-hidden' }, param.help))
  } else {
    field.append(input)
  }
  return field
}

const ENDINGS = Object.freeze({ done: 'Done', failed: 'Failed', cancelled: 'Cancelled', unknown: 'Lost (the server restarted)' })

/** "Run 1a2b3c4d: Uploads · 3 of 8 uploads · /good" and what the step does: what the progress event carries. */
function describeProgress (run) {
  const head = `Run ${shortId(run.id)}`
  if (run.status !== 'running') return [make('span', {}, `${head}: ${ENDINGS[run.status] ?? run.status}.`)]
  const step = describeStep(run.progress ?? {})
  return [make('span', {}, `${head}: ${step.line}. `), make('span', { class: 'step-why' }, step.why)]
}

function describeError (error) {
  if (!error) return 'unknown error'
  return error.message ?? error.type ?? JSON.stringify(error)
}
