/**
 * The dashboard: its headers over plain HTTP, then the page in a real
 * browser (Debian's Chromium, driven by playwright-core) against a real lab
 * on port 0: samples arrive, the form built from GET /experiments runs /bad
 * and /good, the chart marks their requests, the results agree, the page's
 * own memory stays bounded over a simulated 10-minute session, exports,
 * the crash banner, and reconnection after a server restart.
 *
 * Without a Chromium-family browser (CHROMIUM_PATH, or lib/measure/chromium.js's usual places) the browser specs fail with a message saying
 * how to install it, unless STREAMLAB_SKIP_BROWSER=1 (then they are
 * skipped): CI installs chromium, so a missing browser must not pass quietly.
 */
/* global window, document -- the functions given to page.evaluate and waitForFunction run in the page */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { once } from 'node:events'
import { setTimeout as delay } from 'node:timers/promises'
import { chromiumMissing, launchChromium } from '../lib/measure/browser.js'
import { createApp } from '../lib/http/app.js'
import { PROJECT_ROOT } from '../lib/config/options.js'
import { startLab } from './helpers.js'

// the README's picture is rewritten only when asked (STREAMLAB_SCREENSHOT=1), so a test run leaves the tree clean
const SCREENSHOT = process.env.STREAMLAB_SCREENSHOT === '1'
  ? path.join(PROJECT_ROOT, 'docs', 'img', 'dashboard.png')
  : path.join(os.tmpdir(), `streamlab-dashboard-${process.pid}.png`)
const MiB = 1024 * 1024

describe('GET / (the dashboard page)', function () {
  let lab

  before(async function () {
    lab = await startLab()
  })

  after(async function () {
    await lab.close()
  })

  it('serves the page with a strict Content-Security-Policy and no inline script', async function () {
    const res = await fetch(`${lab.url}/`)
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type'), /^text\/html/)
    const csp = res.headers.get('content-security-policy')
    assert.match(csp, /default-src 'none'/)
    assert.match(csp, /script-src 'self'(;|$)/)
    assert.match(csp, /style-src 'self'(;|$)/)
    assert.match(csp, /connect-src 'self'(;|$)/)
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff')
    assert.equal(res.headers.get('referrer-policy'), 'no-referrer')
    assert.equal(res.headers.get('x-frame-options'), 'DENY')
    const html = await res.text()
    // every <script> has a src, and nothing is styled inline: the policy can stay strict
    const scripts = html.match(/<script\b[^>]*>/g)
    assert.ok(scripts.length >= 2)
    for (const tag of scripts) assert.match(tag, /\ssrc="\/[^"]+"/, tag)
    assert.doesNotMatch(html, /<style|\sstyle="|\son[a-z]+="/)
    assert.doesNotMatch(html, /https?:\/\//, 'nothing is loaded from another origin')
  })

  it('serves Chart.js from node_modules at /vendor/chart.umd.js', async function () {
    const res = await fetch(`${lab.url}/vendor/chart.umd.js`)
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type'), /^text\/javascript/)
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff')
    assert.match(await res.text(), /Chart\.js v4\./)
  })

  it('serves its modules and stylesheet with the same headers, and leaves unknown paths to the 404', async function () {
    for (const file of ['/main.js', '/dashboard.css']) {
      const res = await fetch(`${lab.url}${file}`)
      assert.equal(res.status, 200, file)
      assert.ok(res.headers.get('content-security-policy'), file)
    }
    const missing = await fetch(`${lab.url}/no-such-file.js`)
    assert.equal(missing.status, 404)
    assert.equal((await missing.json()).error.type, 'route.not.found')
  })
})

describe('the dashboard in Chromium', function () {
  this.timeout(90_000)

  let lab
  let port
  let dataDir
  let browser
  let context
  let page
  let restarted = null
  /** page errors and console errors (a CSP violation is one), as lib/measure/browser.js collects them */
  let problems = []

  before(async function () {
    if (chromiumMissing() !== null) {
      if (process.env.STREAMLAB_SKIP_BROWSER === '1') this.skip()
      throw new Error(`${chromiumMissing()}; or set STREAMLAB_SKIP_BROWSER=1 to skip the browser tests`)
    }
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-dashboard-'))
    lab = await startLab({
      dataDir,
      // a small in-memory database: the page's own export times it (the lab starts it on first use)
      database: { pgliteDir: 'memory://', seed: { desks: 200, items: 3000 } },
      // a bomb is refused by both routes well before it costs the test machine much
      limits: { inflated: 64 * MiB }
    })
    port = Number(new URL(lab.url).port)
    browser = await launchChromium({ viewport: { width: 1280, height: 800 } })
    context = browser.context
    page = browser.page
    problems = browser.problems
  })

  afterEach(async function () {
    // a failed spec must not leave a run loading the server for the next one
    if (!lab || restarted) return
    const listing = await (await fetch(`${lab.url}/experiments`)).json()
    if (listing.running) await fetch(`${lab.url}/experiments/${listing.running}`, { method: 'DELETE' })
  })

  after(async function () {
    await browser?.close()
    if (restarted) await restarted.close()
    else await lab?.close()
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
  })

  function debugView () {
    return page.evaluate(function readDebugView () {
      const s = window.streamlab
      return {
        state: s.state,
        samples: s.samples,
        points: s.points,
        maxPoints: s.maxPoints,
        hardCap: s.hardCap,
        markers: s.markers,
        marks: s.marks,
        requestsSeen: s.requestsSeen,
        redraws: s.redraws
      }
    })
  }

  async function runFromForm (params) {
    // with more than one experiment on the server, the panel offers a choice
    if (await page.$('#experiment-name')) await page.selectOption('#experiment-name', 'ingest')
    await page.selectOption('#param-route', params.route)
    await page.fill('#param-bytes', params.bytes)
    await page.fill('#param-size', '')
    await page.fill('#param-concurrency', String(params.concurrency))
    await page.fill('#param-requests', String(params.requests))
    await page.click('#run')
  }

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
    const view = await debugView()
    assert.equal(view.points, Math.min(view.samples, view.maxPoints))
    // the four ingest routes are counted from the first sample on, before any request to them
    assert.deepEqual(Object.keys(view.requestsSeen).slice(0, 4), ['bad', 'good', 'express-json', 'streamparser-json'])
    assert.match(await page.textContent('#figure-requests-sub'), /^seen: \/bad \d+ · \/good \d+ · \/express-json \d+ · \/streamparser-json \d+/)
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
    const before = await debugView()
    await runFromForm({ route: 'both', bytes: '200KB', concurrency: 2, requests: 2 })
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

    // a warm-up upload and two measured ones per route, each a span on the chart
    await page.waitForFunction(function spansDrawn (seenBefore) {
      const s = window.streamlab
      return s.requestsSeen.bad >= seenBefore.bad + 3 && s.requestsSeen.good >= seenBefore.good + 3 && s.markers >= 6
    }, before.requestsSeen)
    const after = await debugView()
    assert.ok(after.marks.requests >= 6, JSON.stringify(after.marks))
    assert.equal(after.marks.open, 0)
    assert.deepEqual(problems, [])
  })

  it('runs all four from the form: /express-json and /streamparser-json each get a column, a colour of their own and their spans', async function () {
    const before = await debugView()
    await runFromForm({ route: 'all', bytes: '200KB', concurrency: 1, requests: 2 })
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
    // a warm-up upload and two measured ones per route, each a span on the chart, each counted
    await page.waitForFunction(function libraryRouteSpans (seenBefore) {
      const seen = window.streamlab.requestsSeen
      return seen['express-json'] >= seenBefore['express-json'] + 3 && seen['streamparser-json'] >= seenBefore['streamparser-json'] + 3
    }, before.requestsSeen)
    // the figure under "Uploads in flight" says so at its next redraw
    await page.waitForFunction(function countShown (atLeast) {
      const shown = /\/streamparser-json (\d+)/.exec(document.getElementById('figure-requests-sub').textContent)
      return shown !== null && Number(shown[1]) >= atLeast
    }, before.requestsSeen['streamparser-json'] + 3)
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
    await runFromForm({ route: 'both', bytes: '20MB', concurrency: 4, requests: 4 })
    await page.waitForSelector('table.results', { timeout: 60_000 })
    assert.equal(await page.getAttribute('.verdict', 'data-agree'), 'true')
    await delay(3000)
    // the focus ring on Run would be in the picture
    await page.evaluate(function blur () { document.activeElement?.blur() })
    fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true })
    await page.screenshot({ path: SCREENSHOT, fullPage: true })
    const size = fs.statSync(SCREENSHOT).size
    assert.ok(size < 300 * 1024, `the screenshot is ${size} bytes`)
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
      const view = await debugView()
      assert.equal(view.hardCap, 6000)
      assert.equal(view.maxPoints, 6000, 'the window at 20 ms is 30,000 samples: the hard cap holds')
      assert.equal(kept, 6000)
      // live samples keep coming at 50 a second for a while
      await delay(3000)
      const later = await debugView()
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
    const points = (await debugView()).points
    const csv = await downloadFrom('#export-csv')
    assert.match(csv.name, /^streamlab-samples-.*\.csv$/)
    const lines = csv.bytes.toString('utf8').trim().split('\n')
    assert.equal(lines[0], 'time,isoTime,rss,heapTotal,heapUsed,external,arrayBuffers,peakRss,eventLoopP99Ms,eventLoopMaxMs')
    assert.ok(lines.length - 1 >= points - 100 && lines.length - 1 <= 6000, `${lines.length - 1} rows`)
    assert.match(lines[lines.length - 1], /^\d+,\d{4}-\d\d-\d\dT[^,]+,\d+,\d+,\d+,\d+,\d+,\d+,/)

    const json = await downloadFrom('#export-json')
    const doc = JSON.parse(json.bytes.toString('utf8'))
    assert.equal(doc.units.memory, 'bytes')
    assert.ok(doc.samples.length > 0 && doc.samples.length <= 6000)
    assert.ok(Number.isInteger(doc.samples[0].rss))

    const png = await downloadFrom('#export-png')
    assert.match(png.name, /\.png$/)
    assert.deepEqual([...png.bytes.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47])
  })

  it('shows a zip-bomb run as what each route answered, how much it inflated and what it cost', async function () {
    this.timeout(120_000)
    await page.selectOption('#experiment-name', 'zip-bomb')
    await page.selectOption('#param-variant', 'ratio')
    await page.selectOption('#param-route', 'both')
    await page.fill('#param-bytes', '200MB')
    await page.click('#run')
    await page.waitForSelector('table.results.bomb', { timeout: 110_000 })
    assert.match(await page.textContent('table.results.bomb caption'), /a ratio bomb, 200\.0 MB of JSON in [\d.]+ MB of gzip \([\d,]+:1\)/)
    for (const route of ['good', 'bad']) {
      assert.match(await page.textContent(`table.bomb td[data-route="${route}"][data-field="answer"]`), /^413 [a-z.]+\.too\.large$/, route)
      assert.match(await page.textContent(`table.bomb td[data-route="${route}"][data-field="peakAboveIdle"]`), /^\d+\.\d MiB$/, route)
    }
    // /good stops at the ratio limit, long before the 64 MiB /bad is held to
    const inflated = await page.textContent('table.bomb td[data-route="good"][data-field="inflated"]')
    assert.ok(parseFloat(inflated) < 64, inflated)
    assert.equal(await page.getAttribute('.verdict', 'data-agree'), 'true')
    assert.match(await page.textContent('.verdict'), /Refused by \/good and \/bad/)
    assert.doesNotMatch(await page.textContent('#results'), /undefined|NaN/)
    await page.selectOption('#experiment-name', 'ingest')
    assert.deepEqual(problems, [])
  })

  it('times the database export in the page, batches then the stream, and shows both brought every row in order', async function () {
    this.timeout(120_000)
    assert.match(await page.textContent('#browser-db-status'), /^Embedded PGlite/)
    await page.selectOption('#browser-mode', 'both')
    await page.fill('#browser-rows', '2500')
    await page.fill('#browser-batch', '1000')
    await page.fill('#browser-highWaterMark', '100')
    await page.click('#browser-export-run')
    await page.waitForSelector('table.browser-export-results', { timeout: 110_000 })
    assert.equal(await page.getAttribute('#browser-export-form', 'data-run-status'), 'idle')
    const timings = await page.evaluate(function readTimings () { return window.streamlab.browserExport })
    assert.deepEqual(timings.map(function shape (t) { return [t.mode, t.requests, t.received, t.inOrder] }),
      [['batch', 3, 2500, true], ['stream', 1, 2500, true]])
    for (const t of timings) assert.ok(t.firstRowMs > 0 && t.firstRowMs <= t.totalMs, JSON.stringify(t))
    assert.equal(await page.textContent('tr[data-mode="batch"] td[data-field="requests"]'), '3')
    assert.equal(await page.textContent('tr[data-mode="stream"] td[data-field="received"]'), '2,500 of 2,500')
    assert.equal(await page.getAttribute('.verdict', 'data-agree'), 'true')
    assert.match(await page.textContent('.comparison'), /faster/)
    assert.match(await page.textContent('#browser-db-status'), /3,000 items seeded/)

    // more rows than the database holds: the page says what is missing rather than claim success
    await page.selectOption('#browser-mode', 'stream')
    await page.fill('#browser-rows', '5000')
    await page.click('#browser-export-run')
    await page.waitForFunction(function stoppedAgain () {
      return document.getElementById('browser-export-form').dataset.runStatus === 'idle' &&
        /Done/.test(document.getElementById('browser-export-message').textContent)
    })
    assert.equal(await page.getAttribute('.verdict', 'data-agree'), 'false')
    assert.match(await page.textContent('tr[data-mode="stream"] td[data-field="received"]'), /^3,000 of 5,000$/)

    // a bad field is refused in the page, before any request
    await page.fill('#browser-rows', '0')
    await page.click('#browser-export-run')
    assert.match(await page.textContent('#browser-export-message'), /Rows must be a whole number of at least 1/)
    assert.equal(await page.getAttribute('#browser-export-message', 'data-kind'), 'error')
    assert.deepEqual(problems, [])
  })

  it('has a projector mode: large type, high contrast, thicker chart lines, remembered and set by ?projector=1', async function () {
    const before = await page.evaluate(function readLook () {
      return { font: window.getComputedStyle(document.documentElement).fontSize, muted: window.getComputedStyle(document.querySelector('.help')).color }
    })
    await page.click('#projector')
    const on = await page.evaluate(function readLook () {
      return {
        projector: window.streamlab.projector,
        font: window.getComputedStyle(document.documentElement).fontSize,
        muted: window.getComputedStyle(document.querySelector('.help')).color,
        pressed: document.getElementById('projector').getAttribute('aria-pressed')
      }
    })
    assert.equal(on.projector, true)
    assert.equal(on.pressed, 'true')
    assert.ok(parseFloat(on.font) > parseFloat(before.font), `${on.font} > ${before.font}`)
    assert.notEqual(on.muted, before.muted)
    assert.equal(on.muted, 'rgb(0, 0, 0)', 'grey help text turns black')
    await page.reload()
    await page.waitForFunction(function loaded () { return window.streamlab?.state === 'live' })
    assert.equal(await page.evaluate(function read () { return window.streamlab.projector }), true, 'remembered')
    await page.goto(`${lab.url}/?test=1&projector=0`)
    await page.waitForFunction(function loaded () { return window.streamlab?.state === 'live' })
    assert.equal(await page.evaluate(function read () { return window.streamlab.projector }), false, '?projector=0 wins')
    assert.deepEqual(problems, [])
  })

  it('shows a banner above the chart, never over it, when the server reports a crash, and marks the crash on the chart', async function () {
    const crashesBefore = (await debugView()).marks.crashes
    // the lab's own bus, where the worker puts the supervisor's crash record
    lab.app.locals.events.emit('crash', { reason: 'memory budget exceeded', rss: 600 * MiB, budget: 512 * MiB, route: 'bad', time: Date.now() })
    await page.waitForSelector('#crash-banner', { state: 'visible' })
    const text = await page.textContent('#crash-text')
    assert.match(text, /crashed during POST \/bad/)
    assert.match(text, /600\.0 MiB/)
    assert.match(text, /512\.0 MiB/)
    assert.match(text, /memory budget exceeded/)
    // in the layout flow: the chart moves down, and the rise after the crash stays in sight
    const banner = await page.locator('#crash-banner').boundingBox()
    for (const chart of ['#memory-chart', '#loop-chart']) {
      const box = await page.locator(chart).boundingBox()
      const apart = banner.y + banner.height <= box.y || box.y + box.height <= banner.y ||
        banner.x + banner.width <= box.x || box.x + box.width <= banner.x
      assert.ok(apart, `the banner ${JSON.stringify(banner)} covers ${chart} ${JSON.stringify(box)}`)
    }
    assert.equal((await debugView()).marks.crashes, crashesBefore + 1, 'the crash line on the chart')
    await page.click('#crash-dismiss')
    await page.waitForSelector('#crash-banner', { state: 'hidden' })
    assert.equal((await debugView()).marks.crashes, crashesBefore + 1, 'dismissing the banner leaves the line')
  })

  it('says it is reconnecting while the server is gone, and live again when it is back', async function () {
    await lab.close()
    await page.waitForSelector('#connection[data-state="reconnecting"]')
    assert.match(await page.textContent('#connection'), /Reconnecting/)
    const seen = (await debugView()).samples

    const app = createApp({ dataDir })
    const server = app.listen(port, '127.0.0.1')
    await once(server, 'listening')
    restarted = {
      close: async function closeRestarted () {
        server.closeAllConnections()
        await new Promise(function closed (resolve) { server.close(function () { resolve() }) })
        await app.close()
      }
    }
    // EventSource retries by itself (retry: 2000)
    await page.waitForSelector('#connection[data-state="live"]', { timeout: 15_000 })
    assert.match(await page.textContent('#connection'), /reconnected/)
    await page.waitForFunction(function samplesAgain (before) { return window.streamlab.samples > before + 10 }, seen)
    assert.match(await page.textContent('#stream-note'), /server restarted/)
    assert.deepEqual(problems, [])
  })

  /** Click an export button and read the file it downloads. */
  async function downloadFrom (selector) {
    const [download] = await Promise.all([page.waitForEvent('download'), page.click(selector)])
    const file = await download.path()
    return { name: download.suggestedFilename(), bytes: fs.readFileSync(file) }
  }
})

/**
 * Runs in the page: samples as /metrics sends them, `step` ms apart and
 * ending at the newest kept one (a saw-tooth of buffered uploads over an
 * idle floor), fed through `streamlab.inject` in place of what was kept.
 */
function injectSyntheticSession ({ count, step }) {
  const MiB = 1024 * 1024
  const end = window.streamlab.latest
  const samples = []
  for (let i = 0; i < count; i++) {
    const wave = (i % 600) / 600
    const rss = (90 + 400 * wave) * MiB
    samples.push({
      time: end - (count - 1 - i) * step,
      interval: step,
      rss,
      heapTotal: (40 + 200 * wave) * MiB,
      heapUsed: (30 + 180 * wave) * MiB,
      external: (4 + 150 * wave) * MiB,
      arrayBuffers: (1 + 140 * wave) * MiB,
      peakRss: rss + 20 * MiB,
      peakSource: 'VmHWM',
      eventLoop: { p50: 0.1, p99: 2 + 300 * wave, max: 5 + 400 * wave, utilization: 0.1 },
      gc: { count: 0, pauseMs: 0 }
    })
  }
  return window.streamlab.inject(samples, { replace: true })
}

function mib (bytes) {
  return `${(bytes / MiB).toFixed(1)} MiB`
}
