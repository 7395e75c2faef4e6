/** Where the page gets run records (the lab's, files from this computer) and exports one (README.md). */
import { RECORD_MAX_BYTES, checkRecordText, problemMessage } from '/lib/runs/check.js'
import { embedRecord, runPageName } from '/lib/runs/run-page-data.js'
import { downloadText } from './exports.js'
import { requestJson } from './request-json.js'

/** The lab's saved runs, newest first (GET /runs). */
export async function listRuns () {
  const body = await requestJson('GET', '/runs')
  return Array.isArray(body?.runs) ? body.runs : []
}

/** A saved run's record (GET /runs/:id), checked again here: the page draws only what the rules pass. */
export async function fetchRun (id) {
  const body = await requestJson('GET', `/runs/${encodeURIComponent(id)}`)
  const { record, problem } = checkRecordText(JSON.stringify(body))
  if (problem !== null) throw new Error(problemMessage(`run ${id}`, problem))
  return record
}

/** A file from this computer, read and checked with the lab's rules; `message` says what is wrong, naming the file. */
export async function readRunFile (file) {
  const name = String(file?.name ?? 'the file')
  // past the bound, not even read
  if (file.size > RECORD_MAX_BYTES) {
    const problem = `is ${file.size} bytes, over the ${RECORD_MAX_BYTES} a record may be`
    return { record: null, message: problemMessage(name, { field: '(file)', problem }) }
  }
  let text
  try {
    text = await file.text()
  } catch (err) {
    return { record: null, message: `${name} could not be read: ${err.message}` }
  }
  const { record, problem } = checkRecordText(text, file.size)
  return problem === null ? { record, message: null } : { record: null, message: problemMessage(name, problem) }
}

/** Save a record as one offline page: the lab's template with the record in it, made here. */
export async function exportRunPage (record) {
  let res
  try {
    res = await fetch('/run-page.html', { headers: { accept: 'text/html' } })
  } catch (err) {
    throw new Error(`The lab did not answer (${err.message}).`, { cause: err })
  }
  if (!res.ok) throw new Error(`${res.status}: the lab could not make the page`)
  downloadText(runPageName(record), 'text/html', embedRecord(await res.text(), record))
}
