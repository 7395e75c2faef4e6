/**
 * The dashboard in a real browser (Chromium, driven by playwright-core)
 * against a real lab on port 0: samples arrive, the form built from GET
 * /experiments runs /bad and /good (and all four routes), the chart marks
 * their requests, the results agree, a run's 400 and 409 are shown, the
 * README's screenshot, the page's own memory stays bounded over a simulated
 * 10-minute session, and its exports. Runs of other experiments, the crash
 * banner and reconnection are test/slow/dashboard-views.test.js's; the page's
 * headers over plain HTTP are test/dashboard-page.test.js's. The session and
 * what it needs of a browser: test/dashboard-session.js.
 */
/* global window, document -- the functions given to page.evaluate and waitForFunction run in the page */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { MiB, dashboardSession, debugView, downloadFrom, injectSyntheticSession, mib, runFromForm } from '../dashboard-session.js'

// the README's picture is rewritten only when asked (STREAMLAB_SCREENSHOT=1), so a test run leaves the tree clean
const SCREENSHOT = process.env.STREAMLAB_SCREENSHOT === '1'
  ? path.join(PROJECT_ROOT, 'docs', 'img', 'dashboard.png')
  : path.join(os.tmpdir(), `streamlab-dashboard-${process.pid}.png`)

describe('the dashboard in Chromium', function () {
  this.timeout(90_000)
  const session = dashboardSession()
  let lab
  let context
  let page
  let problems
  before(function bindSession () { ({ lab, context, page, problems } = session) })

  it('shows samples arriving and says it is live', async function () {
    // a fast sample rate: the page must keep up and stay light
    await page.goto(`${lab.url}/?interval=20&test=1`)
    await page.waitForFunction(function liveWithSamples () {
      return window.streamlab?.state === 'live' && window.streamlab.samples >= 25 && window.streamlab.redraws > 1
    })
    assert.equal(await page.getAttribute('#connection', 'data-state'), 'live')
    assert.match(await page.textContent('#connection'), /Live/)
    assert.match(await page.textContent('#figure-rss'), /^\d+\.\d MiB$/)
    assert.match(await page.textContent('#figure-peakRss'), /^\d+\.\d MiB$/)
    const view = await debugView(page)
    assert.equal(view.points, Math.min(view.samples, view.maxPoints))
    // the four ingest routes are counted from the first sample on, before any request to them
    assert.deepEqual(Object.keys(view.requestsSeen).slice(0, 4), ['bad', 'good', 'express-json', 'streamparser-json'])
    assert.match(await page.textContent('#figure-requests-sub'),
      /^(none since this page opened|since this page opened: \d+ to \/[a-z-]+(, \d+ to \/[a-z-]+)*)$/)
    assert.deepEqual(problems, [])
  })

  it('builds the experiment form from GET /experiments, one labelled control per parameter', async function () {
    const { experiments } = await (await fetch(`${lab.url}/experiments`)).json()
    if (experiments.length > 1) {
      const offered = await page.$$eval('#experiment-name option', function optionValues (options) { return options.map(function value (o) { return o.value }) })
      assert.deepEqual(offered, experiments.map(function experimentName (e) { return e.name }))
      await page.selectOption('#experiment-name', 'ingest')
    }
    const ingest = experiments.find(function byName (e) { return e.name === 'ingest' })
    for (const param of ingest.params) {
      const control = await page.evaluate(function readControl (name) {
        const input = document.getElementById(`param-${name}`)
        const label = document.querySelector(`label[for="param-${name}"]`)
        return input && {
          tag: input.tagName,
          type: input.type,
          min: input.min,
          max: input.max,
          options: input.tagName === 'SELECT' ? [...input.options].map(function optionValue (o) { return o.value }) : null,
          label: label?.textContent
        }
      }, param.name)
      assert.ok(control, `a control for ${param.name}`)
      assert.equal(control.label, param.label)
      if (param.type === 'enum') {
        assert.equal(control.tag, 'SELECT')
        assert.deepEqual(control.options, param.values)
      } else if (param.type === 'integer') {
        assert.equal(control.type, 'number')
        assert.equal(control.min, String(param.min))
        assert.equal(control.max, String(param.max))
      } else {
        assert.equal(control.type, 'text')
      }
    }
  })

  it('runs /bad and /good from the form, marks their requests on the chart and shows that the answers agree', async function () {
    const before = await debugView(page)
    await runFromForm(page, { route: 'both', bytes: '200KB', concurrency: 2, requests: 2 })
    await page.waitForSelector('table.results', { timeout: 60_000 })
    const verdict = page.locator('.verdict')
    assert.equal(await verdict.getAttribute('data-agree'), 'true')
    assert.match(await verdict.textContent(), /Answers identical/)
    for (const route of ['bad', 'good']) {
      assert.equal(await page.textContent(`td[data-route="${route}"][data-field="ok"]`), '2 / 2')
      assert.match(await page.textContent(`td[data-route="${route}"][data-field="mbPerSecond"]`), /MB\/s$/)
      assert.match(await page.textContent(`td[data-route="${route}"][data-field="peakAboveIdle"]`), /MiB/)
      assert.match(await page.textContent(`td[data-route="${route}"][data-field="latency"]`), /ms \/ .* ms$/)
    }
    for (const field of ['items', 'sha256', 'idSum']) {
      const bad = await page.textContent(`td[data-route="bad"][data-field="${field}"]`)
      assert.equal(await page.textContent(`td[data-route="good"][data-field="${field}"]`), bad, field)
      assert.notEqual(bad, '–', field)
    }
    assert.equal(await page.getAttribute('#experiment-form', 'data-run-status'), 'done')

    // two measured uploads per route, each a span on the chart; the warm-up before them neither drawn nor counted
    await page.waitForFunction(function spansDrawn (seenBefore) {
      const s = window.streamlab
      return s.requestsSeen.bad >= seenBefore.bad + 2 && s.requestsSeen.good >= seenBefore.good + 2 && s.markers >= 4
    }, before.requestsSeen)
    const after = await debugView(page)
    assert.deepEqual([after.requestsSeen.bad, after.requestsSeen.good], [before.requestsSeen.bad + 2, before.requestsSeen.good + 2])
    assert.ok(after.marks.requests >= 4, JSON.stringify(after.marks))
    assert.equal(after.marks.open, 0)
    assert.deepEqual(problems, [])
  })

  it('runs all four from the form: /express-json and /streamparser-json each get a column, a colour of their own and their spans', async function () {
    const before = await debugView(page)
    await runFromForm(page, { route: 'all', bytes: '200KB', concurrency: 1, requests: 2 })
    await page.waitForSelector('table.results', { timeout: 60_000 })
    await page.waitForFunction(function fourColumns () { return document.querySelectorAll('table.results thead th[class^="route-"]').length === 4 })
    const headings = await page.$$eval('table.results thead th[class^="route-"]', function texts (cells) { return cells.map(function text (c) { return c.textContent }) })
    assert.deepEqual(headings, ['POST /bad (buffered)', 'POST /good (streamed)', 'POST /express-json (express.json)', 'POST /streamparser-json (@streamparser/json)'])
    for (const route of ['express-json', 'streamparser-json']) {
      assert.equal(await page.textContent(`td[data-route="${route}"][data-field="ok"]`), '2 / 2', route)
      for (const field of ['items', 'sha256', 'idSum']) {
        assert.equal(await page.textContent(`td[data-route="${route}"][data-field="${field}"]`), await page.textContent(`td[data-route="bad"][data-field="${field}"]`), `${route} ${field}`)
      }
    }
    assert.match(await page.textContent('.verdict'), /every upload to all 4 routes gave the same summary/)
    // a colour per route, the same under the column's heading and in the chart's key:
    // Okabe-Ito blue for /express-json, reddish purple for /streamparser-json
    const colours = await page.evaluate(function readColours () {
      const colour = {}
      for (const route of ['bad', 'good', 'express-json', 'streamparser-json']) {
        colour[route] = {
          heading: window.getComputedStyle(document.querySelector(`table.results thead th.route-${route}`)).borderBottomColor,
          swatch: window.getComputedStyle(document.querySelector(`.key .swatch-${route}`)).borderTopColor
        }
      }
      return colour
    })
    assert.deepEqual(colours['express-json'], { heading: 'rgb(0, 114, 178)', swatch: 'rgb(0, 114, 178)' })
    assert.deepEqual(colours['streamparser-json'], { heading: 'rgb(204, 121, 167)', swatch: 'rgb(204, 121, 167)' })
    const headingColours = new Set(Object.values(colours).map(function heading (c) { return c.heading }))
    assert.equal(headingColours.size, 4, JSON.stringify(colours))
    // two measured uploads per route, each a span on the chart, each counted (the warm-up is neither)
    await page.waitForFunction(function libraryRouteSpans (seenBefore) {
      const seen = window.streamlab.requestsSeen
      return seen['express-json'] >= seenBefore['express-json'] + 2 && seen['streamparser-json'] >= seenBefore['streamparser-json'] + 2
    }, before.requestsSeen)
    // the figure under "Uploads in flight" says so at its next redraw
    await page.waitForFunction(function countShown (atLeast) {
      const shown = /(\d+) to \/streamparser-json/.exec(document.getElementById('figure-requests-sub').textContent)
      return shown !== null && Number(shown[1]) >= atLeast
    }, before.requestsSeen['streamparser-json'] + 2)
    assert.deepEqual(problems, [])
  })

  it('shows the server\'s 400 and 409 next to the Run button, follows a run started elsewhere and cancels it', async function () {
    await page.fill('#param-bytes', 'lots')
    await page.click('#run')
    await page.waitForFunction(function saysInvalid () {
      return /400 parameter\.invalid/.test(document.getElementById('run-message').textContent)
    })
    assert.match(await page.textContent('#run-message'), /params\.bytes/)
    assert.equal(await page.getAttribute('#run-message', 'data-kind'), 'error')

    // a long run, started by somebody else: the page follows it from the event stream
    const res = await fetch(`${lab.url}/experiments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ingest', params: { route: 'good', bytes: '200KB', concurrency: 1, requests: 10_000 } })
    })
    assert.equal(res.status, 202)
    const { id } = await res.json()
    await page.waitForFunction(function followsRun (runId) {
      return window.streamlab.experiment?.id === runId && !document.getElementById('cancel').disabled
    }, id)

    await page.fill('#param-bytes', '200KB')
    await page.click('#run')
    await page.waitForFunction(function saysBusy () {
      return /409 experiment\.busy/.test(document.getElementById('run-message').textContent)
    })

    await page.click('#cancel')
    await page.waitForFunction(function cancelled () {
      return document.getElementById('experiment-form').dataset.runStatus === 'cancelled'
    })
    const run = await (await fetch(`${lab.url}/experiments/${id}`)).json()
    assert.equal(run.status, 'cancelled')
    assert.ok(await page.isDisabled('#cancel'))
    assert.deepEqual(problems, [])
  })

  it('saves a screenshot of a /bad and /good run for the README', async function () {
    // a fresh page at the default rate, a one-minute window, a run big enough to show
    await page.goto(`${lab.url}/`)
    await page.waitForFunction(function live () { return window.streamlab?.state === 'live' && window.streamlab.samples >= 10 })
    await page.selectOption('#window-minutes', '1')
    await delay(2000)
    await runFromForm(page, { route: 'both', bytes: '20MB', concurrency: 4, requests: 4 })
    await page.waitForSelector('table.results', { timeout: 60_000 })
    assert.equal(await page.getAttribute('.verdict', 'data-agree'), 'true')
    await delay(3000)
    // the focus ring on Run would be in the picture
    await page.evaluate(function blur () { document.activeElement?.blur() })
    fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true })
    await page.screenshot({ path: SCREENSHOT, fullPage: true })
    const size = fs.statSync(SCREENSHOT).size
    // the README's picture stays light; a busier chart compresses worse (413 kB seen on Node 24 in portable mode)
    assert.ok(size < 512 * 1024, `the screenshot is ${size} bytes`)
  })

  it('keeps its points capped and its heap bounded over simulated 10-minute sessions', async function () {
    await page.goto(`${lab.url}/?interval=20&test=1`)
    await page.waitForFunction(function live () { return window.streamlab?.state === 'live' && window.streamlab.samples >= 50 })
    await page.selectOption('#window-minutes', '10')
    const cdp = await context.newCDPSession(page)
    await cdp.send('Performance.enable')
    async function heapUsed () {
      await cdp.send('HeapProfiler.collectGarbage')
      const { metrics } = await cdp.send('Performance.getMetrics')
      return metrics.find(function isHeapUsed (m) { return m.name === 'JSHeapUsedSize' }).value
    }
    const idle = await heapUsed()

    // 20 minutes at 10 samples a second, twice: the second session must cost no more than the first
    const heaps = []
    for (let session = 0; session < 2; session++) {
      // made in the page: carrying 12,000 samples over the protocol would take longer than the test
      const kept = await page.evaluate(injectSyntheticSession, { count: 12_000, step: 100 })
      const view = await debugView(page)
      assert.equal(view.hardCap, 6000)
      assert.equal(view.maxPoints, 6000, 'the window at 20 ms is 30,000 samples: the hard cap holds')
      assert.equal(kept, 6000)
      // live samples keep coming at 50 a second for a while
      await delay(3000)
      const later = await debugView(page)
      assert.ok(later.points <= later.maxPoints, `${later.points} points`)
      assert.ok(later.redraws > view.redraws)
      heaps.push(await heapUsed())
    }
    await cdp.detach()
    const [first, second] = heaps
    console.log(`      page JS heap after GC: idle ${mib(idle)}, after a 20-min session ${mib(first)}, after a second ${mib(second)}`)
    assert.ok(first < 64 * MiB, `the page's heap is ${mib(first)}`)
    assert.ok(second - first < 8 * MiB, `the heap grew from ${mib(first)} to ${mib(second)}`)
    assert.deepEqual(problems, [])
  })

  it('exports the samples as CSV and JSON and the chart as PNG', async function () {
    const points = (await debugView(page)).points
    const csv = await downloadFrom(page, '#export-csv')
    assert.match(csv.name, /^streamlab-samples-.*\.csv$/)
    const lines = csv.bytes.toString('utf8').trim().split('\n')
    const header = lines[0].split(',')
    assert.deepEqual(header.slice(0, 10), ['time', 'isoTime', 'rss', 'heapTotal', 'heapUsed', 'external', 'arrayBuffers', 'peakRss', 'eventLoopP99Ms', 'eventLoopMaxMs'])
    assert.ok(header.includes('heap_old_space') && header.includes('heap_large_object_space'), 'then a column per heap space')
    assert.ok(lines.length - 1 >= points - 100 && lines.length - 1 <= 6000, `${lines.length - 1} rows`)
    assert.match(lines[lines.length - 1], /^\d+,\d{4}-\d\d-\d\dT[^,]+,\d+,\d+,\d+,\d+,\d+,\d+,/)

    const json = await downloadFrom(page, '#export-json')
    const doc = JSON.parse(json.bytes.toString('utf8'))
    assert.equal(doc.units.memory, 'bytes')
    assert.ok(doc.samples.length > 0 && doc.samples.length <= 6000)
    assert.ok(Number.isInteger(doc.samples[0].rss))

    const png = await downloadFrom(page, '#export-png')
    assert.match(png.name, /\.png$/)
    assert.deepEqual([...png.bytes.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47])
  })
})
