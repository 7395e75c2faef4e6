/**
 * A dashboard opened late, in a real browser (Debian's Chromium, driven by playwright-core, as
 * test/slow/dashboard.test.js does): a lab under the supervisor runs an experiment, a bomb on the
 * unguarded /bad gets its worker killed past the memory budget, and only then is the page opened.
 * It shows the crash in a banner above the chart (never over it) and the run's results in their
 * panel, both from what the new worker was handed (the /metrics snapshot, a fresh stream's first
 * event). A crash long past gets no banner.
 *
 * Without a Chromium-family browser the specs fail saying how to install one, unless
 * STREAMLAB_SKIP_BROWSER=1 (then they are skipped), as in test/slow/dashboard.test.js.
 */
/* global window -- the functions given to page.evaluate and waitForFunction run in the page */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { once } from 'node:events'
import { chromiumMissing, launchChromium } from '../../lib/measure/browser.js'
import { uploadStreams } from '../../lib/experiments/upload-client.js'
import { createBomb } from '../../lib/generate/bombs.js'
import { createSupervisor } from '../../lib/supervisor/supervisor.js'
import { getJson, pollJson, startLab } from '../helpers.js'

const MiB = 1024 * 1024

/** Chromium, or a skip (STREAMLAB_SKIP_BROWSER=1), or an error saying how to get it. */
function needChromium (context) {
  if (chromiumMissing() === null) return
  if (process.env.STREAMLAB_SKIP_BROWSER === '1') context.skip()
  throw new Error(`${chromiumMissing()}; or set STREAMLAB_SKIP_BROWSER=1 to skip the browser tests`)
}


/** Whether two bounding boxes share any area. */
function overlaps (a, b) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height
}

/** The page has handled its first sample: a fresh stream's crash event, sent before any sample, has been too. */
async function waitForFirstSample (page) {
  await page.waitForFunction(function sampled () { return window.streamlab?.state === 'live' && window.streamlab.samples >= 1 })
}

describe('the dashboard opened after a crash, in Chromium', function () {
  this.timeout(150_000)

  let dataDir
  let supervisor
  let url
  let firstWorker
  let run
  let browser
  let page
  let problems = []

  before(async function () {
    needChromium(this)
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-dashboard-late-'))
    supervisor = createSupervisor({ port: 0, memoryLimit: 256 * MiB, app: { unsafeBad: true, dataDir } })
    const started = await supervisor.start()
    url = `http://127.0.0.1:${started.port}`
    firstWorker = started.pid

    // a run that finishes, while nobody watches
    const res = await fetch(`${url}/experiments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ingest', params: { route: 'both', bytes: '100KB', concurrency: 1, requests: 1 } })
    })
    const { id } = await res.json()
    assert.equal(res.status, 202)
    run = await pollJson(`${url}/experiments/${id}`, function ended (state) { return state.status !== 'running' }, 60_000)
    assert.equal(run.status, 'done', JSON.stringify(run.error))

    // then a 2 GB bomb on the unguarded /bad: the worker passes its budget and is killed
    const restarted = once(supervisor, 'restarted')
    const bomb = createBomb({ variant: 'ratio', bytes: '2GB' })
    const answer = await uploadStreams(`${url}/bad`, bomb.streams, bomb.uploadHeaders)
    assert.equal(answer.status, 0, `a dead connection, not an answer: ${JSON.stringify(answer.body)}`)
    await restarted
    // the crash record reaches the new worker over IPC, beside its first connections
    await pollJson(`${url}/metrics?format=json`, function crashKnown (body) { return body.lastCrash !== null }, 10_000)

    browser = await launchChromium({ viewport: { width: 1280, height: 800 } })
    page = browser.page
    problems = browser.problems
  })

  after(async function () {
    await browser?.close()
    await supervisor?.stop()
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('shows the crash in a banner above the chart, not over it, and the run that finished before in the Results panel', async function () {
    await page.goto(`${url}/?test=1`)
    await waitForFirstSample(page)
    await page.waitForFunction(function snapshotRead () { return window.streamlab.outcomes === 'loaded' })
    await page.waitForSelector('#crash-banner', { state: 'visible' })
    const text = await page.textContent('#crash-text')
    assert.match(text, /crashed during POST \/bad/)
    assert.match(text, /over its budget of 256\.0 MiB/)
    assert.match(text, /memory-limit/)
    assert.match(text, /restart 1 since it started/)

    await page.waitForSelector('#results table.results')
    assert.equal(await page.getAttribute('#results table.results', 'data-run-id'), run.id)
    assert.equal(await page.getAttribute('.verdict', 'data-agree'), 'true')
    assert.match(await page.textContent('#results .earlier-run'), new RegExp(`^Run ${run.id.slice(0, 8)} \\(ingest\\) finished at .*, before this page opened\\.$`))
    assert.doesNotMatch(await page.textContent('#results'), /Run an experiment/)

    const banner = await page.locator('#crash-banner').boundingBox()
    for (const chart of ['#memory-chart', '#loop-chart']) {
      const box = await page.locator(chart).boundingBox()
      assert.ok(box.height > 100 || chart === '#loop-chart', `${chart} is drawn: ${JSON.stringify(box)}`)
      assert.ok(!overlaps(banner, box), `the banner ${JSON.stringify(banner)} covers ${chart} ${JSON.stringify(box)}`)
    }
    // the snapshot and the fresh stream both told of it: one crash, marked once
    const marks = await page.evaluate(function readMarks () { return window.streamlab.marks })
    assert.equal(marks.crashes, 1, JSON.stringify(marks))
    assert.deepEqual(problems, [])
  })

  it('says so in the snapshot it read: the worker that died, and the run\'s result as it was', async function () {
    const { body } = await getJson(`${url}/metrics?format=json`)
    assert.equal(body.lastCrash.pid, firstWorker)
    assert.equal(body.lastCrash.reason, 'memory-limit')
    assert.deepEqual(body.lastResults.map(function id (e) { return e.id }), [run.id])
    assert.deepEqual(body.lastResults[0].result, run.result)
  })
})

describe('the dashboard opened long after a crash, in Chromium', function () {
  this.timeout(60_000)

  let lab
  let browser

  before(async function () {
    needChromium(this)
    lab = await startLab()
    browser = await launchChromium({ viewport: { width: 1280, height: 800 } })
  })

  after(async function () {
    await browser?.close()
    await lab?.close()
  })

  it('shows no banner for a crash more than ten minutes old', async function () {
    // the bus of an in-process lab, where a worker puts the supervisor's record
    lab.app.locals.events.emit('crash', { reason: 'memory-limit', pid: 7, rss: 300 * MiB, budget: 256 * MiB, route: 'bad', time: Date.now() - 11 * 60_000, restarts: 1, backoffMs: 0, requestCaused: true, restartMs: 400 })
    const page = browser.page
    await page.goto(`${lab.url}/?test=1`)
    // both ways the page hears of it handled: the fresh stream's first event and the snapshot
    await waitForFirstSample(page)
    await page.waitForFunction(function snapshotRead () { return window.streamlab.outcomes === 'loaded' })
    assert.equal(await page.isHidden('#crash-banner'), true)
    assert.deepEqual(browser.problems, [])
  })
})
