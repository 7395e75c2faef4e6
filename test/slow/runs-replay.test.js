/**
 * Recorded runs on the dashboard, in Chromium against a real lab (test/dashboard-session.js):
 * two ingest runs leave their records, which the Runs panel lists as they are written; one
 * replays in place of the live charts with the samples and peaks the live view drew and the
 * record holds; a second lays over it, dashed, with the delta table compare computes; the
 * address opens either; a file dropped on the page is read and checked in the page with the
 * lab's words, never sent to the lab; markup in a record is drawn as text; and a row's Export
 * saves the run as one page (the page itself: runs-export.test.js).
 */
/* global window, document, DataTransfer, DragEvent -- the functions given to page.evaluate and waitForFunction run in the page */
import assert from 'node:assert/strict'
import { compareRecords } from '../../lib/runs/compare.js'
import { readRunRecord } from '../../lib/runs/format.js'
import { runExperiment } from '../experiment-helpers.js'
import { MiB, dashboardSession, downloadFrom } from '../dashboard-session.js'
import { MARKUP, makeBusyRecord, makeMarkupRecord } from '../runs-helpers.js'

/** Runs in the page: a file dropped on the page as a person drops one. */
function dropInPage ({ name, text }) {
  const transfer = new DataTransfer()
  transfer.items.add(new File([text], name, { type: 'application/json' }))
  for (const type of ['dragover', 'drop']) document.body.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }))
}

/** The highest value of a record's samples. */
function highest (record, read) {
  return Math.max(...record.timeline.samples.map(read).filter(Number.isFinite))
}

describe('recorded runs on the dashboard, in Chromium', function () {
  this.timeout(60_000)
  const session = dashboardSession()
  let lab
  let page
  let problems
  const runs = {}
  const records = {}

  /** Drop a file, then wait until the panel says something new or the replay changes. */
  async function drop (name, text) {
    const before = await page.evaluate(function mark () { return { message: window.streamlab.runs.message, files: window.streamlab.runs.files.length } })
    const requests = []
    function note (request) { requests.push(`${request.method()} ${request.url()}`) }
    page.on('request', note)
    try {
      await page.evaluate(dropInPage, { name, text })
      await page.waitForFunction(function changed (was) {
        const r = window.streamlab.runs
        return r.message !== was.message || r.files.length !== was.files
      }, before)
    } finally {
      page.off('request', note)
    }
    return { requests, runs: await page.evaluate(function read () { return window.streamlab.runs }) }
  }

  function replayState () {
    return page.evaluate(function read () { return window.streamlab.replay })
  }

  before(async function runTwice () {
    ({ lab, page, problems } = session)
    await page.goto(`${lab.url}/?test=1`)
    await page.waitForFunction(function live () { return window.streamlab?.state === 'live' && window.streamlab.runs.listed === 'listed' })
    runs.a = await runExperiment(lab.url, 'ingest', { route: 'both', bytes: '8MB', concurrency: 1, requests: 1 })
    runs.b = await runExperiment(lab.url, 'ingest', { route: 'both', bytes: '4MB', concurrency: 1, requests: 1 })
    await lab.app.locals.runRecorder.settled()
    for (const key of ['a', 'b']) {
      assert.equal(runs[key].status, 'done', JSON.stringify(runs[key].error))
      records[key] = await (await fetch(`${lab.url}/runs/${runs[key].id}`)).json()
    }
  })

  it('lists each run in the Runs panel when its record is written, newest first', async function () {
    // no reload: the stream's run-record event made the panel list again
    await page.waitForFunction(function both (ids) { return ids.every(function listed (id) { return window.streamlab.runs.runs.includes(id) }) }, [runs.a.id, runs.b.id])
    const listed = await page.evaluate(function read () { return window.streamlab.runs.runs })
    assert.deepEqual(listed.slice(0, 2), [runs.b.id, runs.a.id])
    assert.match(await page.textContent(`li[data-run-id="${runs.a.id}"] .run-what`), /^run [0-9a-f]{8}: ingest, Buffered vs streamed gzip ingest$/)
  })

  it('replays a run in place of the live charts, with the samples and peaks the live view drew and the record holds', async function () {
    const a = records.a
    // the live view's RSS line, by sample time, before the replay hides it
    const live = await page.evaluate(function liveRss () {
      return window.streamlab.bytes.layers.find(function rss (l) { return l.key === 'rss' }).points.map(function point (p) { return [p.x, p.y] })
    })
    await page.click(`li[data-run-id="${runs.a.id}"] button.run-open`)
    await page.waitForFunction(function replaying () { return window.streamlab.replay.mode === 'run' })
    const { run, text } = await replayState()
    assert.equal(run.id, runs.a.id)
    assert.match(text, /^Replaying run [0-9a-f]{8}: ingest, recorded .* A recording, not the live server\.$/)
    assert.equal(run.samples, a.timeline.samples.length)
    assert.equal(run.peaks.rss, highest(a, function rss (s) { return s.rss }))
    assert.equal(run.peaks.peakRss, highest(a, function peak (s) { return s.peakRss }))
    assert.equal(run.peaks.heapUsed, highest(a, function heap (s) { return s.heapUsed }))
    // the sample of the run's peak is the live view's at that time: the same sample, the same figure
    const liveAt = new Map(live)
    const top = a.timeline.samples.find(function atPeak (s) { return s.rss === run.peaks.rss })
    assert.equal(liveAt.get(top.time) * MiB, top.rss, 'the live view drew the peak sample')
    const shared = a.timeline.samples.filter(function drawnLive (s) { return liveAt.has(s.time) })
    assert.ok(shared.length >= a.timeline.samples.length * 0.8, `${shared.length} of ${a.timeline.samples.length} samples drawn live`)
    for (const s of shared) assert.equal(liveAt.get(s.time) * MiB, s.rss, `the sample at ${s.time}`)
    // a span per upload, the peak resets, each route's largest request as a bar of what it held
    assert.equal(run.spans, a.timeline.spans.length)
    assert.equal(run.peakResets, a.timeline.marks.filter(function reset (m) { return m.kind === 'peak-reset' }).length)
    assert.ok(run.markers >= 2, `${run.markers} spans drawn`)
    for (const route of ['bad', 'good']) {
      const held = Math.max(...a.timeline.spans.filter(function ofRoute (s) { return s.route === route }).map(function peak (s) { return s.heldPeak }))
      assert.equal(Math.max(...run.bars.filter(function ofRoute (b) { return b.route === route }).map(function total (b) { return b.total })), held, route)
    }
    assert.ok(run.layers.includes('heap_old_space') && run.layers.includes('arrayBuffers'), run.layers.join(', '))
    assert.match(await page.textContent('#replay table.results caption'), /8,000,000 bytes/)
    assert.equal(await page.isVisible('#live-view'), false)
    assert.equal(new URL(page.url()).searchParams.get('run'), runs.a.id)
  })

  it('lays a second run over the first on one time axis, dashed, with the delta table of compare', async function () {
    await page.click(`li[data-run-id="${runs.b.id}"] button.run-overlay`)
    await page.waitForFunction(function overlaid () { return window.streamlab.replay.mode === 'overlay' })
    const { overlay, text } = await replayState()
    assert.equal(overlay.a, runs.a.id)
    assert.equal(overlay.b, runs.b.id)
    assert.match(text, /^Laying run [0-9a-f]{8} \(dashed\) over run [0-9a-f]{8} \(solid\)/)
    for (const line of overlay.lines) {
      assert.equal(line.dashed, line.label.startsWith('B '), line.label)
      // aligned at their starts: each run's first sample within a second of its start
      assert.ok(line.firstX >= 0 && line.firstX < 1, `${line.label} starts at ${line.firstX} s`)
    }
    assert.equal(overlay.lines.find(function rssA (l) { return l.label === 'A RSS' }).max, highest(records.a, function rss (s) { return s.rss }))
    assert.equal(overlay.lines.find(function rssB (l) { return l.label === 'B RSS' }).max, highest(records.b, function rss (s) { return s.rss }))
    const expected = compareRecords(records.a, records.b).rows
    assert.deepEqual(overlay.rows, expected.map(function row (r) { return { key: r.key, name: r.name, unit: r.unit, a: r.a.value, b: r.b.value, ratio: r.ratio, difference: r.difference } }))
    assert.deepEqual(overlay.rows.map(function key (r) { return `${r.key} ${r.name}` }), ['bad peak', 'bad throughput', 'bad latency', 'good peak', 'good throughput', 'good latency'])
    assert.deepEqual(overlay.params, ['bytes'])
    const peakRow = expected[0]
    // a peak of 0 above idle (a busy machine's collection can take /bad back to idle) has no ratio: the rows above hold that case
    if (peakRow.ratio !== null) assert.equal(await page.textContent('table.deltas tr[data-key="bad"][data-figure="peak"] td[data-col="ratio"]'), `${peakRow.ratio.toFixed(2)}x`)
    assert.match(await page.textContent('table.deltas tr[data-key="bad"][data-figure="peak"] td[data-col="difference"]'), /^[+−±]\d+\.\d MiB$/)
    const url = new URL(page.url())
    assert.equal(url.searchParams.get('run'), runs.a.id)
    assert.equal(url.searchParams.get('compare'), runs.b.id)
  })

  it('goes back to live, drawing the live charts again', async function () {
    const redraws = await page.evaluate(function read () { return window.streamlab.redraws })
    await page.click('#back-to-live')
    await page.waitForFunction(function live (before) { return window.streamlab.replay.mode === 'live' && window.streamlab.redraws > before }, redraws)
    assert.equal(await page.isVisible('#live-view'), true)
    assert.equal(await page.isVisible('#replay'), false)
    assert.equal(await page.isVisible('#replay-bar'), false)
    assert.equal(new URL(page.url()).searchParams.has('run'), false)
  })

  it('opens ?run=<id>, its short id, a lesson\'s run and ?run=<a>&compare=<b> from the address, and says when a run is not there', async function () {
    await page.goto(`${lab.url}/?test=1&run=${runs.b.id}`)
    await page.waitForFunction(function replaying () { return window.streamlab?.replay.mode === 'run' })
    assert.equal((await replayState()).run.id, runs.b.id)
    // the short id the page shows opens the run, and the address then names it whole
    await page.goto(`${lab.url}/?test=1&run=${runs.a.id.slice(0, 8)}`)
    await page.waitForFunction(function replaying () { return window.streamlab?.replay.mode === 'run' })
    assert.equal((await replayState()).run.id, runs.a.id)
    assert.equal(new URL(page.url()).searchParams.get('run'), runs.a.id)
    await page.goto(`${lab.url}/?test=1&run=${runs.a.id}&compare=${runs.b.id}`)
    await page.waitForFunction(function overlaid () { return window.streamlab?.replay.mode === 'overlay' })
    assert.deepEqual([(await replayState()).overlay.a, (await replayState()).overlay.b], [runs.a.id, runs.b.id])
    // a lesson's run (docs/figures/zip-bomb.run.json), as the zip-bomb lesson links it
    await page.goto(`${lab.url}/?test=1&run=lesson-zip-bomb`)
    await page.waitForFunction(function replaying () { return window.streamlab?.replay.mode === 'run' })
    const lesson = (await replayState()).run
    assert.equal(lesson.id, 'lesson-zip-bomb')
    assert.ok(lesson.samples > 0 && lesson.spans > 0, `${lesson.samples} samples, ${lesson.spans} spans`)
    await page.goto(`${lab.url}/?test=1&run=no-such-run`)
    await page.waitForFunction(function said () { return window.streamlab?.runs.kind === 'error' })
    const said = await page.evaluate(function read () { return [window.streamlab.runs.message, window.streamlab.replay.mode] })
    assert.match(said[0], /^Could not open run no-such-run: 404 run\.not\.found: /)
    assert.equal(said[1], 'live')
  })

  it('refuses a dropped file that is corrupt or no record in the lab\'s words, sends it nowhere, and stays as it was', async function () {
    await page.goto(`${lab.url}/?test=1&run=${runs.a.id}`)
    await page.waitForFunction(function replaying () { return window.streamlab?.replay.mode === 'run' })
    const { record } = makeBusyRecord()
    const files = {
      'other.json': JSON.stringify({ format: 1, items: [] }),
      'cut-short.json': JSON.stringify(record).slice(0, 2000),
      'later.json': JSON.stringify({ ...record, format: 2 }),
      'shuffled.json': JSON.stringify({ ...record, timeline: { ...record.timeline, samples: [...record.timeline.samples].reverse() } })
    }
    for (const [name, text] of Object.entries(files)) {
      let words
      try {
        readRunRecord(text, name)
      } catch (err) {
        words = err.message
      }
      const { requests, runs: panel } = await drop(name, text)
      assert.equal(panel.kind, 'error', name)
      // JSON's own complaint is the engine's: Chromium's V8 and Node's word a cut-short document each their own way
      const lab = words.slice(0, words.indexOf('is not JSON:') + 'is not JSON:'.length)
      if (name === 'cut-short.json') assert.ok(panel.message.startsWith(lab) && lab.length > 20, `${panel.message} / ${words}`)
      else assert.equal(panel.message, words, name)
      assert.deepEqual(requests, [], `${name}: nothing went to the lab`)
    }
    const still = await replayState()
    assert.equal(still.mode, 'run')
    assert.equal(still.run.id, runs.a.id)
  })

  it('opens a dropped run file in the page alone, exports it, and lays it over a lab\'s run', async function () {
    const { record, text } = makeBusyRecord({ id: 'from-my-laptop' })
    const { requests, runs: panel } = await drop('my-laptop.json', text)
    assert.deepEqual(requests, [], 'the file went nowhere')
    assert.deepEqual(panel.files, ['my-laptop.json'])
    const { run, text: said } = await replayState()
    assert.equal(run.id, 'from-my-laptop')
    assert.equal(run.peaks.rss, highest(record, function rss (s) { return s.rss }))
    assert.match(said, /^Replaying my-laptop\.json \(a file from this computer\)/)
    // a file has no address: the page's says nothing of it
    assert.equal(new URL(page.url()).searchParams.has('run'), false)
    // exported as it came: the page asks the lab for the empty page alone, and puts the record in itself
    const asked = []
    function note (request) { asked.push(`${request.method()} ${new URL(request.url()).pathname}`) }
    page.on('request', note)
    let exported
    try {
      exported = await downloadFrom(page, 'li[data-file] button.run-export')
    } finally {
      page.off('request', note)
    }
    assert.deepEqual(asked, ['GET /run-page.html'])
    assert.equal(exported.name, 'streamlab-run-from-my-laptop.html')
    assert.deepEqual(JSON.parse(exported.bytes.toString().match(/<script type="application\/json" id="run-record">([^<]*)<\/script>/)[1]), record)
    await page.click(`li[data-run-id="${runs.a.id}"] button.run-overlay`)
    await page.waitForFunction(function overlaid () { return window.streamlab.replay.mode === 'overlay' })
    assert.deepEqual((await replayState()).overlay.rows.map(function key (r) { return `${r.key} ${r.name}` }).slice(0, 3), ['bad peak', 'bad throughput', 'bad latency'])
  })

  it('draws every string of a record as text: markup in a route, the title, a parameter or a file name runs nothing', async function () {
    const { record, text } = makeMarkupRecord()
    await drop(`${MARKUP}.json`, text)
    await page.waitForFunction(function replaying () { return window.streamlab.replay.run?.id === 'markup-run' })
    const seen = await page.evaluate(function read () {
      return {
        xss: window.__xss,
        elements: document.querySelectorAll('img, main script, iframe').length,
        title: document.querySelector('#replay .replay-title').textContent,
        about: document.querySelector('#replay').textContent,
        list: document.querySelector('#runs-list').textContent,
        routes: window.streamlab.replay.run.routes
      }
    })
    assert.equal(seen.xss, undefined)
    assert.equal(seen.elements, 0)
    assert.equal(seen.title, `Run markup-run: ${record.run.title}`)
    assert.ok(seen.about.includes(`note <script>window.__xss = 3</script>${MARKUP}`), 'the parameter as text')
    assert.ok(seen.about.includes(`POST ${MARKUP}`), 'the results column as text')
    assert.ok(seen.list.includes(`${MARKUP}.json`), 'the file name as text')
    assert.deepEqual(seen.routes, [MARKUP, 'good'])
    assert.deepEqual(problems, [])
  })

  it('exports a saved run from its row as one page with the record in it', async function () {
    const { name, bytes } = await downloadFrom(page, `li[data-run-id="${runs.a.id}"] button.run-export`)
    assert.equal(name, `streamlab-run-${runs.a.id}.html`)
    const html = bytes.toString('utf8')
    const data = html.match(/<script type="application\/json" id="run-record">([^<]*)<\/script>/)[1]
    assert.deepEqual(JSON.parse(data), records.a)
    assert.match(html, /<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'sha256-/)
    assert.match(await page.textContent('#runs-message'), /^Saved .* as one page/)
    assert.deepEqual(problems, [])
  })
})
