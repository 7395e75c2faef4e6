/**
 * The dashboard in a real browser, continued: a zip-bomb run shown as what
 * each route answered, the database export timed in the page, the projector
 * mode, the crash banner above the chart, and reconnection after the server
 * restarts. The session and what it needs of a browser:
 * test/dashboard-session.js; the specs before these are
 * test/slow/dashboard.test.js's.
 */
/* global window, document -- the functions given to page.evaluate and waitForFunction run in the page */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createApp } from '../../app.js'
import { MiB, dashboardSession, debugView } from '../dashboard-session.js'

describe('the dashboard in Chromium', function () {
  this.timeout(90_000)
  const session = dashboardSession()
  let lab
  let page
  let problems
  before(async function openThePage () {
    ({ lab, page, problems } = session)
    await page.goto(`${lab.url}/?test=1`)
    await page.waitForFunction(function live () { return window.streamlab?.state === 'live' })
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
    const crashesBefore = (await debugView(page)).marks.crashes
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
    assert.equal((await debugView(page)).marks.crashes, crashesBefore + 1, 'the crash line on the chart')
    await page.click('#crash-dismiss')
    await page.waitForSelector('#crash-banner', { state: 'hidden' })
    assert.equal((await debugView(page)).marks.crashes, crashesBefore + 1, 'dismissing the banner leaves the line')
  })

  it('says it is reconnecting while the server is gone, and live again when it is back', async function () {
    await lab.close()
    await page.waitForSelector('#connection[data-state="reconnecting"]')
    assert.match(await page.textContent('#connection'), /Reconnecting/)
    const seen = (await debugView(page)).samples

    const app = createApp({ dataDir: session.dataDir })
    const server = app.listen(session.port, '127.0.0.1')
    await once(server, 'listening')
    session.restarted = {
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
})
