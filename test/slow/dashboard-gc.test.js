/**
 * Garbage collections on the dashboard's memory chart, in Chromium (test/dashboard-session.js):
 * a replayed record's mark-compact is a mark where it happened, whose tooltip names its kind, its
 * time and the heap before and after it, and what each term means; one the lab forced by reading
 * a heap profile is drawn apart and named the lab's; its thousands of scavenges are ticks no more
 * numerous than the chart's pixels; a live sample's collections reach the same chart; a record
 * without collections draws none. The events themselves: test/units/gc-events.test.js.
 */
/* global window, document, DataTransfer, DragEvent, Chart -- the functions given to page.evaluate run in the page */
import assert from 'node:assert/strict'
import { MiB, dashboardSession } from '../dashboard-session.js'
import { fakeSample, makeTestRecord } from '../runs-helpers.js'

const START = 1_790_000_000_000
const MARK_COMPACT_AT = START + 5_050
const LAB_MARK_COMPACT_AT = START + 8_050

/** A 10-second record: 100 samples, 3,000 scavenges, one mark-compact that freed 270 MiB. */
function recordWithCollections ({ id, collections = true }) {
  const samples = Array.from({ length: 100 }, function sample (_, k) {
    const s = fakeSample(START + (k + 1) * 100, (k < 50 ? 400 : 150) * MiB)
    s.gcEvents = collections
      ? Array.from({ length: 30 }, function scavenge (_, j) { return { at: s.time - 100 + j * 3, kind: 'scavenge', ms: 0.5, heapBefore: 40 * MiB, heapAfter: 30 * MiB } })
      : []
    return s
  })
  if (collections) {
    samples[50].gcEvents.push({ at: MARK_COMPACT_AT, kind: 'mark-compact', ms: 42, heapBefore: 300 * MiB, heapAfter: 30 * MiB, cause: 'run' })
    samples[80].gcEvents.push({ at: LAB_MARK_COMPACT_AT, kind: 'mark-compact', ms: 9, heapBefore: 40 * MiB, heapAfter: 30 * MiB, cause: 'lab' })
  }
  return makeTestRecord({ id, samples, startedAt: START })
}

/** Runs in the page: a file dropped on the page as a person drops one. */
function dropInPage ({ name, text }) {
  const transfer = new DataTransfer()
  transfer.items.add(new File([text], name, { type: 'application/json' }))
  for (const type of ['dragover', 'drop']) document.body.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }))
}

/** Runs in the page: where on the screen the chart draws time `at`, half-way up its plot. */
function pointOf ({ canvas, at }) {
  const chart = Chart.getChart(document.getElementById(canvas))
  const box = chart.canvas.getBoundingClientRect()
  return { x: box.left + chart.scales.x.getPixelForValue(at), y: box.top + (chart.chartArea.top + chart.chartArea.bottom) / 2, width: chart.chartArea.width }
}

describe('garbage collections on the memory chart, in Chromium', function () {
  this.timeout(60_000)
  const session = dashboardSession()
  let page

  before(async function openThePage () {
    page = session.page
    await page.goto(`${session.lab.url}/?test=1`)
    await page.waitForFunction(function live () { return window.streamlab?.state === 'live' })
  })

  async function replay (record) {
    await page.evaluate(dropInPage, { name: `${record.id}.json`, text: JSON.stringify(record) })
    await page.waitForFunction(function shown (id) { return window.streamlab.replay.run?.id === id }, record.id)
    return page.evaluate(function read () { return window.streamlab.replay.run })
  }

  it('marks a replayed run\'s mark-compact where it happened, its tooltip naming the kind, the time and the heap before and after', async function () {
    const { record } = recordWithCollections({ id: 'gc-marks' })
    const run = await replay(record)
    assert.equal(run.gcMarks.markCompacts, 1)
    assert.equal(run.gcMarks.labMarkCompacts, 1, 'the lab\'s, drawn apart')
    // the record keeps 2,000 collections: the mark-compacts, then scavenges evenly spaced
    assert.equal(record.timeline.gc.length, 2000)
    assert.equal(run.gcMarks.young, 1998)
    const point = await page.evaluate(pointOf, { canvas: 'replay-memory-chart', at: MARK_COMPACT_AT })
    // thousands of scavenges, a tick per pixel at most
    assert.ok(run.gcMarks.youngColumns > 0 && run.gcMarks.youngColumns <= Math.ceil(point.width) + 1, `${run.gcMarks.youngColumns} columns in ${point.width} px`)
    await page.mouse.move(point.x, point.y)
    await page.waitForFunction(function tooltipShown () {
      return Chart.getChart(document.getElementById('replay-memory-chart')).tooltip.footer.length > 0
    })
    const footer = await page.evaluate(function read () { return Chart.getChart(document.getElementById('replay-memory-chart')).tooltip.footer })
    assert.equal(footer[0], 'mark-compact 42.0 ms: heap 300.0 MiB → 30.0 MiB')
    assert.match(footer[1], /^\d+ × scavenge, [\d.]+ ms in all$/)
    // every term named gets its line
    assert.match(footer.join('\n'), /^mark-compact: a full collection/m)
    assert.match(footer.join('\n'), /^scavenge: the young generation collected/m)
    const lab = await page.evaluate(pointOf, { canvas: 'replay-memory-chart', at: LAB_MARK_COMPACT_AT })
    await page.mouse.move(lab.x, lab.y)
    await page.waitForFunction(function labNamed () {
      return Chart.getChart(document.getElementById('replay-memory-chart')).tooltip.footer[0]?.startsWith('mark-compact (the lab\'s)')
    })
    const labFooter = await page.evaluate(function read () { return Chart.getChart(document.getElementById('replay-memory-chart')).tooltip.footer })
    assert.match(labFooter.join('\n'), /^\(the lab's\): forced by the lab reading the heap profile/m)
    assert.deepEqual(session.problems, [])
  })

  it('draws no collection for a record that has none', async function () {
    const { record } = recordWithCollections({ id: 'gc-none', collections: false })
    delete record.timeline.gc
    const run = await replay(record)
    assert.deepEqual(run.gcMarks, { markCompacts: 0, labMarkCompacts: 0, otherOld: 0, youngColumns: 0, young: 0 })
    assert.equal(run.samples, 100)
  })

  it('draws a live sample\'s collections on the live memory chart', async function () {
    await page.click('#back-to-live')
    await page.waitForFunction(function live () { return window.streamlab.replay.mode === 'live' })
    // the lab's own collections reach the chart too: what one sample adds is counted, in one turn of the page
    const drawn = await page.evaluate(function inject () {
      window.streamlab.inject([])
      const before = { ...window.streamlab.marks.gc, drawn: Chart.getChart(document.getElementById('memory-chart')).$streamlabGc.markCompacts }
      const last = window.streamlab.lastSample
      const time = Math.max(Date.now(), (last?.time ?? 0) + 1)
      window.streamlab.inject([{ ...last, time, seq: (last?.seq ?? 0) + 1, gcEvents: [{ at: time - 20, kind: 'mark-compact', ms: 12.5, heapBefore: 90 * 1024 * 1024, heapAfter: 20 * 1024 * 1024 }], gcEventsOmitted: 3 }])
      return { before, after: window.streamlab.marks.gc, chart: Chart.getChart(document.getElementById('memory-chart')).$streamlabGc }
    })
    assert.equal(drawn.after.markCompacts, drawn.before.markCompacts + 1)
    assert.equal(drawn.after.omitted, drawn.before.omitted + 3)
    assert.equal(drawn.chart.markCompacts, drawn.before.drawn + 1, JSON.stringify(drawn))
    assert.deepEqual(session.problems, [])
  })
})
