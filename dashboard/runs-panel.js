/** The Runs panel: the lab's saved runs and files from this computer (README.md). */
import { make, say } from './dom.js'
import { formatBytes } from './format.js'
import { labRunLabel } from './replay.js'
import { exportRunPage, fetchRun, listRuns, readRunFile } from './run-records.js'

const FILES_KEPT = 6 // files from this computer kept in the list: records stay in this page only, and this is its memory
const RECORDS_CACHED = 4 // the lab's records kept once fetched, so that opening, overlaying and exporting one fetches it once

export function createRunsPanel (el, replay) {
  let runs = []
  let listed = 'loading'
  let files = [] // `{ key, name, record }`, newest first
  let filesRead = 0
  const cache = new Map()
  let refreshing = null
  let refreshAgain = false

  /** GET /runs again; a refresh asked for while one is under way runs once after it. */
  async function refresh () {
    if (refreshing !== null) {
      refreshAgain = true
      return refreshing
    }
    refreshing = (async function listAgain () {
      do {
        refreshAgain = false
        try {
          runs = await listRuns()
          listed = 'listed'
        } catch (err) {
          listed = 'failed'
          showMessage(`Could not list the saved runs: ${err.message}`, 'error')
        }
        render()
      } while (refreshAgain)
    })()
    try {
      await refreshing
    } finally {
      refreshing = null
    }
  }

  /** A lab run's record, fetched once while it is among the last few used. */
  async function labRecord (id) {
    if (cache.has(id)) return cache.get(id)
    // `id` may be the short id the page shows: the lab answers with the record of the one id it begins
    const record = await fetchRun(id)
    cache.set(record.id, record)
    if (cache.size > RECORDS_CACHED) cache.delete(cache.keys().next().value)
    return record
  }

  /** What the replay is handed for an entry of the list. */
  async function shownOf (entry) {
    if (entry.kind === 'file') return { record: entry.record, label: `${entry.name} (a file from this computer)`, id: null }
    const record = await labRecord(entry.id)
    return { record, label: labRunLabel(record.id), id: record.id }
  }

  function isShown (entry) {
    const first = replay.first
    if (first === null) return false
    return entry.kind === 'file' ? first.id === null && first.record === entry.record : first.id === entry.id
  }

  async function act (what, entry) {
    try {
      if (what === 'open') {
        replay.open(await shownOf(entry))
        showMessage('', 'info')
      } else if (what === 'overlay') {
        const first = replay.first
        if (first === null) return
        replay.overlay(first, await shownOf(entry))
        showMessage('', 'info')
      } else {
        const { record } = await shownOf(entry)
        await exportRunPage(record)
        showMessage(`Saved ${record.id} as one page: it opens from disk, with no lab and no network.`, 'info')
      }
    } catch (err) {
      showMessage(err.message, 'error')
    }
  }

  function row (entry, summary) {
    const name = entry.kind === 'file' ? entry.name : labRunLabel(entry.id)
    const button = function button (verb, title) {
      return make('button', { type: 'button', class: `run-${verb.toLowerCase()}`, 'aria-label': `${verb} ${name}`, ...title }, verb)
    }
    const open = button('Open')
    const overlay = button('Overlay', { title: 'Lay this run over the one open, on one time axis' })
    const exported = button('Export', { title: 'Save this run as one HTML page that opens offline' })
    overlay.disabled = replay.first === null || isShown(entry)
    open.addEventListener('click', function openRun () { act('open', entry) })
    overlay.addEventListener('click', function overlayRun () { act('overlay', entry) })
    exported.addEventListener('click', function exportRun () { act('export', entry) })
    const attributes = { class: 'run-item', ...(entry.kind === 'file' ? { 'data-file': entry.key } : { 'data-run-id': entry.id }) }
    if (isShown(entry)) attributes['aria-current'] = 'true'
    return make('li', attributes,
      make('p', { class: 'run-what' }, `${name}: ${summary.experiment}${summary.title ? `, ${summary.title}` : ''}`),
      make('p', { class: 'run-meta' }, summary.meta),
      make('div', { class: 'run-actions' }, open, overlay, exported))
  }

  /** The start of a row's meta line: when, how it ended, which Node, which routes. */
  function metaOf (run, node) {
    return `${stamp(run.startedAt)} · ${run.status} · Node ${node} · ${routes(run.routes)}`
  }

  /** What a row says of a file from this computer. */
  function fileSummary (file) {
    const r = file.record
    return { experiment: r.run.experiment, title: r.run.title, meta: `${metaOf(r.run, r.where.node)} · not saved in the lab` }
  }

  /** A row that says what is wrong in place of one that could not be made. */
  function invalidRow (attributes, text) {
    return make('li', { class: 'run-item invalid', ...attributes }, make('p', { class: 'run-meta' }, text))
  }

  function render () {
    const list = document.createDocumentFragment()
    // each row on its own: a row that cannot be made says so, and the others are listed
    for (const file of files) {
      try {
        list.append(row({ kind: 'file', ...file }, fileSummary(file)))
      } catch (err) {
        list.append(invalidRow({ 'data-file': file.key }, `${file.name}: could not be listed: ${err.message}`))
      }
    }
    for (const run of runs) {
      if (typeof run?.id !== 'string') continue
      if (run.invalid) {
        list.append(invalidRow({ 'data-run-id': run.id }, `${run.id}: ${run.invalid}`))
        continue
      }
      try {
        list.append(row({ kind: 'lab', id: run.id }, {
          experiment: String(run.experiment),
          title: run.title,
          meta: `${metaOf(run, run.node)} · ${formatBytes(run.bytes)}${run.lesson === true ? ' · a lesson\'s run' : ''}`
        }))
      } catch (err) {
        list.append(invalidRow({ 'data-run-id': run.id }, `${run.id}: could not be listed: ${err.message}`))
      }
    }
    const none = listed === 'loading' ? 'Listing the saved runs…' : 'No saved run yet: each experiment run leaves one here.'
    if (list.childNodes.length === 0) list.append(make('li', { class: 'run-item empty' }, none))
    el.list.replaceChildren(list)
    el.list.dataset.state = listed
  }

  /** A file chosen or dropped, read and checked here: one that is no record gets a message naming it and is not kept. */
  async function takeFile (file) {
    if (!file) return
    const name = String(file.name)
    let entry
    try {
      const { record, message } = await readRunFile(file)
      if (message !== null) {
        showMessage(message, 'error')
        return
      }
      entry = { key: `file-${filesRead + 1}`, name, record }
      // a row made before the file is kept: one that cannot be listed must not stay in the list
      fileSummary(entry)
    } catch (err) {
      showMessage(`${name} could not be shown: ${err.message}`, 'error')
      return
    }
    filesRead++
    files = [entry, ...files].slice(0, FILES_KEPT)
    render()
    await act('open', { kind: 'file', ...entry })
  }

  /** `?run=<id>` opens a lab's run, `&compare=<id>` lays a second over it; a short id (a prefix of one) does too. */
  async function openFromQuery (run, compare) {
    if (run === null) return
    let fetching = run
    try {
      const a = await shownOf({ kind: 'lab', id: run })
      if (compare === null) {
        replay.open(a)
      } else {
        fetching = compare
        replay.overlay(a, await shownOf({ kind: 'lab', id: compare }))
      }
    } catch (err) {
      showMessage(`Could not open ${labRunLabel(fetching)}: ${err.message}`, 'error')
    }
  }

  function showMessage (text, kind) { say(el.message, text, kind) }

  el.file.addEventListener('change', function fileChosen () {
    const file = el.file.files?.[0]
    el.file.value = ''
    takeFile(file)
  })
  // a run file dropped anywhere on the page opens; the browser must not open it in the tab instead
  document.addEventListener('dragover', function allowFileDrop (event) {
    if (![...(event.dataTransfer?.types ?? [])].includes('Files')) return
    event.preventDefault()
    event.dataTransfer.dropEffect = 'copy'
    document.body.dataset.dropping = 'true'
  })
  document.addEventListener('dragleave', function endDrop (event) {
    if (event.relatedTarget === null) delete document.body.dataset.dropping
  })
  document.addEventListener('drop', function fileDropped (event) {
    if (![...(event.dataTransfer?.types ?? [])].includes('Files')) return
    event.preventDefault()
    delete document.body.dataset.dropping
    takeFile(event.dataTransfer.files[0])
  })

  return {
    refresh,
    openFromQuery,
    render,
    state: function panelState () {
      return {
        listed,
        runs: runs.map(function id (r) { return r.id }),
        files: files.map(function name (f) { return f.name }),
        message: el.message.textContent,
        kind: el.message.dataset.kind ?? null
      }
    }
  }
}

/** A time as the list shows it; one no `Date` holds is undated (lib/runs/check.js refuses such a record). */
function stamp (time) {
  const date = new Date(Number.isFinite(time) ? time : NaN)
  return Number.isNaN(date.getTime()) ? 'undated' : `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`
}

function routes (list) {
  return Array.isArray(list) && list.length > 0 ? list.map(function slash (r) { return `/${r}` }).join(', ') : 'no route'
}
