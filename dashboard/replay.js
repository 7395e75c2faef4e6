/** A recorded run (or two) drawn in place of the live charts; the stream goes on underneath (README.md). */
import { createOverlayView } from './overlay-view.js'
import { shortId } from './results-view.js'
import { createRunView } from './run-view.js'

/** `live`: what the live view shows (hidden while replaying); `box`: where a replay is drawn. */
export function createReplay (el) {
  const runBox = document.createElement('div')
  const overlayBox = document.createElement('div')
  el.box.replaceChildren(runBox, overlayBox)
  const runView = createRunView(runBox, { idPrefix: 'replay' })
  const overlayView = createOverlayView(overlayBox, { idPrefix: 'overlay' })
  let mode = 'live'
  /** `{ record, label, id }` each: what the page calls it, its id in the lab (null for a file from this computer). */
  let shown = []
  let projector = false

  function showMode (next, text) {
    mode = next
    const replaying = next !== 'live'
    el.live.hidden = replaying
    el.box.hidden = !replaying
    el.bar.hidden = !replaying
    el.text.textContent = text
    document.body.dataset.view = next
    el.onChange({ mode, run: shown[0]?.id ?? null, compare: shown[1]?.id ?? null })
  }

  /** Draw, or go back to live and say why not: a record that passed the rules and still cannot be drawn must not break the page. */
  function draw (paint) {
    try {
      paint()
    } catch (err) {
      toLive()
      throw new Error(`The run could not be drawn: ${err.message}`, { cause: err })
    }
  }

  function open (one) {
    draw(function paintRun () {
      overlayView.destroy()
      shown = [one]
      // shown before drawing: Chart.js sizes a chart by its box, which must be on the page
      const { label, record } = one
      showMode('run', `Replaying ${label}: ${record.run.experiment}, recorded ${when(record)}. A recording, not the live server.`)
      runView.show(one.record)
      runView.setProjector(projector)
    })
  }

  function overlay (a, b) {
    draw(function paintOverlay () {
      runView.destroy()
      shown = [a, b]
      showMode('overlay', `Laying ${b.label} (dashed) over ${a.label} (solid). Recordings, not the live server.`)
      overlayView.show(a.record, b.record)
      overlayView.setProjector(projector)
    })
  }

  function toLive () {
    runView.destroy()
    overlayView.destroy()
    shown = []
    showMode('live', '')
  }

  function back () { if (mode !== 'live') toLive() }

  el.back.addEventListener('click', back)

  return {
    open, overlay, back,
    setProjector: function setProjector (on) {
      projector = on
      runView.setProjector(on)
      overlayView.setProjector(on)
    },
    get mode () { return mode },
    get first () { return shown[0] ?? null },
    /** What the replay shows, for the page's debug view. */
    state: function replayState () {
      return {
        mode,
        shown: shown.map(function label (s) { return { label: s.label, id: s.id, record: s.record.id } }),
        text: el.text.textContent,
        run: mode === 'run' ? runView.state() : null,
        overlay: mode === 'overlay' ? overlayView.state() : null
      }
    }
  }
}

/** What a list or a bar calls a lab's run: "run 8f734d67", "run lesson-zip-bomb". */
export function labRunLabel (id) { return `run ${shortId(id)}` }

function when (record) {
  return `${new Date(record.run.startedAt).toISOString().slice(0, 16).replace('T', ' ')} UTC on Node ${record.where.node}`
}
