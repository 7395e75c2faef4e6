/** The page of one exported run, opened from disk with no lab (README.md). */
import { checkRecordText, problemMessage } from '/lib/runs/check.js'
import { RECORD_ELEMENT_ID } from '/lib/runs/run-page-data.js'
import { createRunView, recordTitle } from './run-view.js'

const message = document.getElementById('run-page-message')
const projectorButton = document.getElementById('projector')
const view = createRunView(document.getElementById('run-view'), { idPrefix: 'run' })
let shown = null

function say (text) {
  message.textContent = text
  message.hidden = text === ''
}

function showRecord () {
  const text = document.getElementById(RECORD_ELEMENT_ID)?.textContent ?? ''
  if (text.trim() === 'null') {
    say('This page holds no run: it is the template a run is exported into.')
    return
  }
  const { record, problem } = checkRecordText(text)
  if (problem !== null) {
    say(problemMessage('the run in this page', problem))
    return
  }
  try {
    view.show(record)
  } catch (err) {
    view.destroy()
    say(`The run could not be drawn: ${err.message}`)
    return
  }
  shown = record
  document.title = `streamlab: ${recordTitle(record)}`
}

projectorButton.addEventListener('click', function toggleProjector () {
  const on = projectorButton.getAttribute('aria-pressed') !== 'true'
  projectorButton.setAttribute('aria-pressed', String(on))
  document.documentElement.classList.toggle('projector', on)
  view.setProjector(on)
})

showRecord()

// a read-only view of what is drawn, as the dashboard's `window.streamlab`, for the export's spec
window.streamlab = Object.freeze({
  get replay () { return { mode: shown === null ? 'none' : 'run', run: view.state(), message: message.hidden ? '' : message.textContent } }
})
