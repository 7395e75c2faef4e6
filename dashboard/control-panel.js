/**
 * The teacher's control panel, built from GET /experiments: the page knows
 * no experiment and no parameter by name, so a new experiment or parameter
 * on the server shows up here without a page change. Inputs follow the
 * schema's types: enum -> select, integer -> number input with min/max,
 * size -> text input.
 *
 * A run is followed by polling GET /experiments/:id (authoritative, and it
 * works even when the event stream is down) and by the `experiment` events
 * of /metrics (which also show runs started from another tab or curl).
 */
import { make } from './dom.js'
import { formatCount, formatMB, formatMiB, formatMs } from './format.js'

const POLL_MS = 500

/**
 * Wire the panel.
 * @param {{ form: HTMLFormElement, chooser: HTMLElement, fields: HTMLElement, help: HTMLElement, run: HTMLButtonElement,
 *   cancel: HTMLButtonElement, message: HTMLElement, progress: HTMLProgressElement,
 *   progressText: HTMLElement, results: HTMLElement }} el
 * @returns {{ load: () => Promise<void>, onExperimentEvent: (event: object) => void, readonly current: object }}
 */
export function createControlPanel (el) {
  let experiments = []
  let chosen = null
  /** the run being followed: { id, status, progress } */
  let current = null
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
    renderChooser()
    choose(experiments[0]?.name)
    if (listing.running) follow(listing.running)
  }

  function renderChooser () {
    el.chooser.replaceChildren()
    if (experiments.length < 2) {
      el.chooser.hidden = true
      return
    }
    el.chooser.hidden = false
    const label = make('label', { for: 'experiment-name' }, 'Experiment')
    const select = make('select', { id: 'experiment-name', name: 'experiment' })
    for (const e of experiments) select.append(make('option', { value: e.name }, e.title ?? e.name))
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

  /**
   * The help of the field in use, in one box of fixed height under the
   * fields: showing it inside the field would move the Run button under
   * the pointer between press and release.
   */
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
      renderResults(el.results, run)
      showMessage(`Run ${shortId(run.id)} finished.`, 'info')
    } else if (run.status === 'failed') {
      showMessage(`Run ${shortId(run.id)} failed: ${describeError(run.error)}`, 'error')
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
      el.progress.value = total === null ? (current?.status === 'done' ? 1 : 0) : p.done
    }
    el.progress.hidden = current === null
    el.progressText.textContent = current === null ? '' : describeProgress(current)
  }

  /**
   * An `experiment` event from /metrics: follow a run started elsewhere,
   * move the progress bar between polls.
   */
  function onExperimentEvent (event) {
    if (event === null || typeof event !== 'object' || typeof event.id !== 'string') return
    if (event.phase === 'start') {
      if (current?.id !== event.id) follow(event.id)
      return
    }
    // a run whose start this page missed (it connected later, or the lab restarted under a grading
    // run, npm run grade): follow it from its progress, unless another run is being followed
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

  function showMessage (text, kind) {
    el.message.textContent = text
    el.message.dataset.kind = kind
  }

  el.form.addEventListener('submit', start)
  el.fields.addEventListener('focusin', function helpForField (event) { showHelp(event.target) })
  el.fields.addEventListener('focusout', function helpForExperiment () { showHelp(null) })
  el.cancel.addEventListener('click', cancel)

  return {
    load,
    onExperimentEvent,
    get current () { return current === null ? null : { ...current } }
  }
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

/**
 * "Run 1a2b3c4d: 3 of 8 done · load · /good": the page knows no experiment,
 * so it says what the progress event carries (stage, and the route, mode,
 * read size or export it is on), whatever the experiment.
 */
function describeProgress (run) {
  const p = run.progress ?? {}
  const head = `Run ${shortId(run.id)}`
  if (run.status !== 'running') return `${head}: ${run.status}`
  if (p.stage === 'input') return `${head}: preparing the input file…`
  const detail = [p.stage, p.route ? `/${p.route}` : '', p.mode, p.hwm ? `read size ${p.hwm}` : '', p.batch ? `batch ${p.batch}` : '', p.cell]
    .filter(function shown (part) { return typeof part === 'string' ? part !== '' : part !== undefined && part !== null })
    .join(' · ')
  const count = Number.isFinite(p.total) && p.total > 0 ? `${p.done} of ${p.total} done` : 'running…'
  return `${head}: ${count}${detail ? ` · ${detail}` : ''}`
}

/** What each ingest route is, in a column's heading: the page knows these three, and shows others by name. */
const ROUTE_KINDS = Object.freeze({ bad: 'buffered', good: 'streamed', 'express-json': 'express.json' })

function routeHeading (route) {
  return `POST /${route} (${Object.hasOwn(ROUTE_KINDS, route) ? ROUTE_KINDS[route] : route})`
}

const ROWS = Object.freeze([
  { field: 'ok', label: 'Uploads answered 200', value: function okValue (r) { return `${r.ok} / ${r.requests}${describeErrors(r.errors)}` } },
  { field: 'mbPerSecond', label: 'Throughput', value: function mbValue (r) { return Number.isFinite(r.mbPerSecond) ? `${r.mbPerSecond} MB/s` : '–' } },
  {
    field: 'peakAboveIdle',
    label: 'Server peak above idle',
    value: function peakValue (r) {
      const above = r.server?.peakAboveIdle
      return Number.isFinite(above) ? formatMiB(above) : `n/a (peak ${formatMiB(r.server?.peakRss)})`
    }
  },
  { field: 'latency', label: 'Latency avg / p99', value: function latencyValue (r) { return `${formatMs(r.latencyMs?.avg)} / ${formatMs(r.latencyMs?.p99)}` } },
  { field: 'items', label: 'Items counted', value: function itemsValue (r) { return formatCount(r.summary?.items) } },
  { field: 'sha256', label: 'sha256 of the body', value: function shaValue (r) { return r.summary?.sha256 ? `${r.summary.sha256.slice(0, 16)}…` : '–' } },
  { field: 'idSum', label: 'Sum of ids', value: function idSumValue (r) { return r.summary?.idSum ?? '–' } }
])

/**
 * A finished run's results: for ingest (a result with `routes`) the routes
 * side by side and the verdict; for other experiments their `cells` and
 * `published` figures as plain tables, or the JSON.
 * @param {HTMLElement} box
 * @param {{ id: string, params: object, result: object }} run
 */
export function renderResults (box, run) {
  if (run.result?.bomb !== null && typeof run.result?.bomb === 'object') renderBomb(box, run)
  else if (run.result?.routes !== null && typeof run.result?.routes === 'object') renderRoutes(box, run)
  else renderGeneric(box, run)
}

const BOMB_ROWS = Object.freeze([
  {
    field: 'answer',
    label: 'Answer',
    value: function answerValue (r) {
      if (r.status === 0) return 'none: the connection was cut'
      return r.status === 200 ? '200: accepted' : `${r.status} ${r.errorType ?? ''}`.trim()
    }
  },
  { field: 'ms', label: 'Time to answer', value: function msValue (r) { return formatMs(r.ms) } },
  {
    field: 'inflated',
    label: 'Inflated before the answer',
    value: function inflatedValue (r) { return Number.isFinite(r.inflatedBytesReached) ? formatMB(r.inflatedBytesReached) : 'not reported' }
  },
  {
    field: 'peakAboveIdle',
    label: 'Server peak above idle',
    value: function bombPeakValue (r) { return formatMiB(r.server?.peakAboveIdle ?? r.server?.peakRss) }
  }
])

/** A zip-bomb run: what each route answered, how fast, how much it inflated and what it cost. */
function renderBomb (box, run) {
  const { bomb, routes: byRoute } = run.result
  const routes = Object.values(byRoute ?? {})
  const table = make('table', { class: 'results bomb', 'data-run-id': run.id })
  const ratio = Number.isFinite(bomb.ratio) ? ` (${formatCount(Math.round(bomb.ratio))}:1)` : ''
  table.append(make('caption', {}, `Run ${shortId(run.id)}: a ${bomb.variant} bomb, ${formatMB(bomb.inflatedBytes)} of JSON in ${formatMB(bomb.compressedBytes)} of gzip${ratio}`))
  const head = make('tr', {}, make('th', { scope: 'col' }, 'Measure'))
  for (const r of routes) head.append(make('th', { scope: 'col', class: `route-${r.route}` }, `POST /${r.route}`))
  table.append(make('thead', {}, head))
  const body = make('tbody')
  for (const row of BOMB_ROWS) {
    const tr = make('tr', {}, make('th', { scope: 'row' }, row.label))
    for (const r of routes) tr.append(make('td', { 'data-route': r.route, 'data-field': row.field }, row.value(r)))
    body.append(tr)
  }
  table.append(body)
  const refused = routes.filter(function wasRefused (r) { return r.outcome === 'refused' })
  const verdict = make('p', { class: 'verdict', 'data-agree': String(refused.length === routes.length) })
  if (refused.length === routes.length) {
    verdict.textContent = `✔ Refused by ${routes.map(function name (r) { return `/${r.route}` }).join(' and ')}: the server survived the bomb.`
  } else {
    verdict.textContent = routes.filter(function notRefused (r) { return r.outcome !== 'refused' }).map(function why (r) {
      return r.outcome === 'accepted' ? `✘ /${r.route} accepted the bomb.` : `✘ /${r.route} never answered: the worker was killed (see the banner on the chart).`
    }).join(' ')
  }
  box.replaceChildren(make('h2', {}, 'Results'), table, verdict)
}

function renderRoutes (box, run) {
  const result = run.result
  const routes = Object.values(result.routes ?? {})
  const table = make('table', { class: 'results', 'data-run-id': run.id })
  table.append(make('caption', {}, describeRun(run)))
  const head = make('tr', {}, make('th', { scope: 'col' }, 'Measure'))
  for (const r of routes) head.append(make('th', { scope: 'col', class: `route-${r.route}` }, routeHeading(r.route)))
  table.append(make('thead', {}, head))
  const body = make('tbody')
  for (const row of ROWS) {
    const tr = make('tr', {}, make('th', { scope: 'row' }, row.label))
    for (const r of routes) tr.append(make('td', { 'data-route': r.route, 'data-field': row.field }, row.value(r)))
    body.append(tr)
  }
  table.append(body)

  const agree = result.summariesAgree
  const verdict = make('p', { class: 'verdict', 'data-agree': String(agree) })
  if (agree === true) {
    const which = routes.length === 2 ? 'both routes' : `all ${routes.length} routes`
    verdict.textContent = routes.length > 1
      ? `✔ Answers identical: every upload to ${which} gave the same summary.`
      : '✔ Answers identical: every upload gave the same summary.'
  } else if (agree === false) {
    verdict.textContent = '✘ Answers differ: the routes (or uploads) did not give the same summary.'
  } else {
    verdict.textContent = 'No answers to compare: no upload succeeded.'
  }
  box.replaceChildren(make('h2', {}, 'Results'), table, verdict)
}

/** Figures worth a column when a cell has them, beyond its own scalar members. */
const CELL_EXTRAS = Object.freeze([
  { label: 'peak above idle', value: function peakAbove (c) { return Number.isFinite(c.server?.peakAboveIdle) ? formatMiB(c.server.peakAboveIdle) : null } },
  { label: 'latency avg', value: function latencyAvg (c) { return Number.isFinite(c.latencyMs?.avg) ? formatMs(c.latencyMs.avg) : null } }
])

function renderGeneric (box, run) {
  const result = run.result ?? {}
  const parts = [make('h2', {}, 'Results')]
  if (Array.isArray(result.cells) && result.cells.length > 0) {
    const columns = []
    for (const cell of result.cells) {
      for (const [key, value] of Object.entries(cell)) {
        if (value !== null && typeof value !== 'object' && !columns.includes(key)) columns.push(key)
      }
    }
    const extras = CELL_EXTRAS.filter(function present (x) { return result.cells.some(function has (c) { return x.value(c) !== null }) })
    const table = make('table', { class: 'results', 'data-run-id': run.id })
    table.append(make('caption', {}, describeRun(run)))
    const head = make('tr')
    for (const key of columns) head.append(make('th', { scope: 'col' }, key))
    for (const x of extras) head.append(make('th', { scope: 'col' }, x.label))
    table.append(make('thead', {}, head))
    const body = make('tbody')
    for (const cell of result.cells) {
      const tr = make('tr')
      for (const key of columns) tr.append(make('td', { 'data-field': key }, formatCell(key, cell[key])))
      for (const x of extras) tr.append(make('td', {}, x.value(cell) ?? '–'))
      body.append(tr)
    }
    table.append(body)
    // many columns: the table scrolls sideways in its box rather than run under the side panel
    parts.push(make('div', { class: 'table-scroll' }, table))
  }
  if (Array.isArray(result.published) && result.published.length > 0) {
    const table = make('table', { class: 'results published' })
    table.append(make('caption', {}, 'Published figures, and what this run measured'))
    table.append(make('thead', {}, make('tr', {},
      make('th', { scope: 'col' }, 'Figure'), make('th', { scope: 'col' }, 'Published'), make('th', { scope: 'col' }, 'Measured'))))
    const body = make('tbody')
    for (const p of result.published) {
      const unit = p.unit ? ` ${p.unit}` : ''
      body.append(make('tr', {},
        make('th', { scope: 'row' }, String(p.label ?? '')),
        make('td', {}, `${p.value ?? '–'}${unit}`),
        make('td', {}, p.measured === null || p.measured === undefined ? 'not run' : `${p.measured}${unit}`)))
    }
    table.append(body)
    parts.push(table)
  }
  if (parts.length === 1) {
    const text = JSON.stringify(result, null, 1)
    parts.push(make('pre', { class: 'result-json' }, text.length > 4000 ? `${text.slice(0, 4000)}…` : text))
  }
  box.replaceChildren(...parts)
}

/** A cell's scalar by what its name says it is: ms, bytes of memory, bytes sent, or a count. */
function formatCell (key, value) {
  if (value === undefined || value === null) return '–'
  if (typeof value !== 'number') return String(value)
  if (/Ms$/.test(key)) return formatMs(value)
  if (/(Rss|AboveIdle)$/.test(key)) return formatMiB(value)
  if (/(^b|B)ytes$/.test(key)) return formatMB(value)
  return Number.isInteger(value) ? formatCount(value) : String(value)
}

function describeRun (run) {
  const p = run.params ?? {}
  const input = run.result?.input
  const what = input?.bytes ? `${formatCount(input.bytes)} bytes` : input?.size !== null && input?.size !== undefined ? `${formatCount(input.size)} items` : ''
  const parts = [what, p.format, p.concurrency ? `concurrency ${p.concurrency}` : '', p.requests ? `${p.requests} uploads per route` : '']
  return `Run ${shortId(run.id)}: ${parts.filter(Boolean).join(', ')}`
}

function describeErrors (errors) {
  const entries = Object.entries(errors ?? {})
  if (entries.length === 0) return ''
  return ` (${entries.map(function errorCount ([type, n]) { return `${type} ×${n}` }).join(', ')})`
}

function describeError (error) {
  if (!error) return 'unknown error'
  return error.message ?? error.type ?? JSON.stringify(error)
}

function shortId (id) {
  return String(id).slice(0, 8)
}

/**
 * Call the lab's API. A non-2xx answer throws an Error whose message is the
 * server's own: "409 experiment.busy: experiment … is still running".
 */
async function requestJson (method, url, body) {
  const init = { method, headers: { accept: 'application/json' } }
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json'
    init.body = JSON.stringify(body)
  }
  let res
  try {
    res = await fetch(url, init)
  } catch (err) {
    throw new Error(`The server did not answer (${err.message}).`, { cause: err })
  }
  let json = null
  try {
    json = await res.json()
  } catch {
    // not JSON: the status says enough
  }
  if (!res.ok) {
    const e = json?.error
    const err = new Error(e ? `${res.status} ${e.type}: ${e.message}` : `${res.status} ${res.statusText}`)
    err.status = res.status
    throw err
  }
  return json
}
