/** The database export timed in this page, beside the server's experiment (README.md). */
import { timeInBrowser } from './db-export-browser.js'
import { make, say } from './dom.js'
import { formatCount, formatMs } from './format.js'

/** Shown under the table: what the article measured (docs/sources.md#db-export). */
const PUBLISHED = 'The article found batches faster with a few big batches, and the stream faster from about 10 batches on.'

const MODES = Object.freeze({
  both: ['batch', 'stream'],
  batch: ['batch'],
  stream: ['stream']
})

export function createBrowserExport (el) {
  let controller = null
  let last = null

  async function loadStatus () {
    try {
      const res = await fetch('/db/status', { headers: { accept: 'application/json' }, cache: 'no-store' })
      const body = await res.json()
      if (!res.ok) throw new Error(body?.error ? `${body.error.type}: ${body.error.message}` : `${res.status}`)
      el.status.textContent = describeDatabase(body)
      el.status.dataset.state = body.state ?? ''
    } catch (err) {
      el.status.textContent = `Database status unknown (${err.message}).`
      el.status.dataset.state = 'unknown'
    }
  }

  function readSettings () {
    const form = el.form.elements
    const settings = { modes: MODES[form.namedItem('browser-mode').value] ?? MODES.both }
    for (const [name, min] of [['rows', 1], ['batch', 1], ['highWaterMark', 1], ['sleep', 0]]) {
      const input = form.namedItem(`browser-${name}`)
      const text = input.value.trim()
      if (text === '' && name === 'highWaterMark') continue
      const value = Number(text)
      if (text === '' || !Number.isFinite(value) || value < min || (name !== 'sleep' && !Number.isSafeInteger(value))) {
        input.focus()
        const kind = name === 'sleep' ? 'a number of seconds' : 'a whole number'
        throw new TypeError(`${input.labels[0]?.textContent ?? name} must be ${kind} of at least ${min}.`)
      }
      settings[name] = value
    }
    return settings
  }

  async function start (event) {
    event.preventDefault()
    if (controller !== null) return
    let settings
    try {
      settings = readSettings()
    } catch (err) {
      showMessage(err.message, 'error')
      return
    }
    controller = new AbortController()
    setRunning(true)
    const timings = []
    try {
      // the first query may start (and seed) the embedded database: that must not count against the first way timed
      showMessage('Warming up the database…', 'info')
      await timeInBrowser({ mode: 'batch', rows: 1, batch: 1, signal: controller.signal })
      for (const mode of settings.modes) {
        showMessage(mode === 'batch'
          ? `Fetching ${formatCount(settings.rows)} rows in batches of ${formatCount(settings.batch)}…`
          : `Streaming ${formatCount(settings.rows)} rows…`, 'info')
        timings.push(await timeInBrowser({
          mode,
          rows: settings.rows,
          batch: settings.batch,
          highWaterMark: settings.highWaterMark,
          sleep: settings.sleep,
          signal: controller.signal
        }))
      }
      last = timings
      renderTimings(el.results, timings)
      showMessage(`Done: ${timings.map(function summary (t) { return `${t.mode} ${formatMs(t.totalMs)}` }).join(', ')}.`, 'info')
    } catch (err) {
      if (err.name === 'AbortError') showMessage('Cancelled.', 'info')
      else showMessage(err.message, 'error')
      if (timings.length > 0) renderTimings(el.results, timings)
    } finally {
      controller = null
      setRunning(false)
      loadStatus()
    }
  }

  function setRunning (running) {
    el.run.disabled = running
    el.cancel.disabled = !running
    el.form.dataset.runStatus = running ? 'running' : 'idle'
  }

  function showMessage (text, kind) { say(el.message, text, kind) }

  el.form.addEventListener('submit', start)
  el.cancel.addEventListener('click', function cancelExport () { controller?.abort() })

  return { loadStatus, get last () { return last === null ? null : structuredClone(last) } }
}

function describeDatabase (status) {
  const kind = status.kind === 'embedded' ? 'Embedded PGlite' : 'PostgreSQL'
  const seed = status.seed ? `, ${formatCount(status.seed.items)} items seeded` : status.seeding ? ', seeding…' : ''
  const state = status.state === 'ready' ? '' : ` (${status.state}${status.state === 'stopped' ? ': starts on the first export' : ''})`
  return `${kind}${state}${seed}.`
}

const COLUMNS = Object.freeze([
  { field: 'requests', label: 'Requests', value: function requestsValue (t) { return formatCount(t.requests) } },
  { field: 'received', label: 'Rows parsed', value: function parsed (t) { return `${formatCount(t.received)} of ${formatCount(t.rows)}` } },
  { field: 'inOrder', label: 'In order', value: function orderValue (t) { return t.inOrder ? 'yes' : 'NO' } },
  { field: 'bytes', label: 'MB received', value: function bytesValue (t) { return (t.bytes / 1e6).toFixed(2) } },
  { field: 'firstRowMs', label: 'First row', value: function firstRowValue (t) { return formatMs(t.firstRowMs) } },
  { field: 'totalMs', label: 'Total', value: function totalValue (t) { return formatMs(t.totalMs) } }
])

/** The timings side by side, with the verdict: did both ways bring the same rows? `timings`: timeInBrowser's answers. */
function renderTimings (box, timings) {
  const table = make('table', { class: 'results browser-export-results' })
  table.append(make('caption', {}, 'Database export timed in this page (fetch and parse every row)'))
  const head = make('tr', {}, make('th', { scope: 'col' }, 'Way'))
  for (const c of COLUMNS) head.append(make('th', { scope: 'col' }, c.label))
  table.append(make('thead', {}, head))
  const body = make('tbody')
  for (const t of timings) {
    const way = t.mode === 'batch'
      ? `Batches of ${formatCount(t.batch)} (GET /db/batch)`
      : `Stream${t.highWaterMark ? `, highWaterMark ${formatCount(t.highWaterMark)}` : ''} (GET /db/stream)`
    const tr = make('tr', { 'data-mode': t.mode }, make('th', { scope: 'row' }, way))
    for (const c of COLUMNS) tr.append(make('td', { 'data-field': c.field }, c.value(t)))
    body.append(tr)
  }
  table.append(body)
  const parts = [make('h2', {}, 'Results'), table]
  const complete = timings.every(function allRows (t) { return t.inOrder && t.received === t.rows })
  const verdict = make('p', { class: 'verdict', 'data-agree': String(complete) })
  verdict.textContent = complete
    ? `✔ Every way brought all ${formatCount(timings[0]?.rows)} rows, in order.`
    : '✘ Rows were missing or out of order.'
  parts.push(verdict)
  if (timings.length === 2) {
    const [batch, stream] = timings
    const faster = batch.totalMs <= stream.totalMs ? batch : stream
    const slower = faster === batch ? stream : batch
    parts.push(make('p', { class: 'comparison' },
      `${faster.mode === 'batch' ? 'Batches' : 'The stream'} finished ${(slower.totalMs / faster.totalMs).toFixed(2)}× faster; ` +
      `the stream's first row came after ${formatMs(stream.firstRowMs)}, the batches' after ${formatMs(batch.firstRowMs)}.`))
  }
  parts.push(make('p', { class: 'help' }, PUBLISHED))
  box.replaceChildren(...parts)
}
