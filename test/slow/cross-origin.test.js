/**
 * Another web page cannot drive the lab, in a real browser (Debian's
 * Chromium, driven by playwright-core). A page on another local origin
 * (`http://localhost:OTHER/`) tries every write such a page could make
 * before lib/limits/request-guard.js: no-cors fetches with bodies, an image that
 * saves 50 MB, a text/plain form that resets the peak, a preflighted
 * DELETE. The lab, watched from the test process, refuses each one and
 * nothing changes: no file, no experiment, no peak reset. A DNS-rebinding
 * name (`attacker.test`, which Chromium is told resolves to 127.0.0.1) gets
 * 403 host.not.allowed for every path, reads included, and a script in
 * that origin reads nothing and starts nothing. The lab's own page, in the
 * same browser, still works.
 *
 * The script in the rebinding origin runs in the lab's own 403 document
 * (page.evaluate), not in a page served by Playwright's page.route: Chromium
 * counts a routed page as public, and its Private Network Access rule then
 * blocks every fetch to loopback before the lab sees it. That protects
 * Chromium's users, not Firefox's or Safari's: the lab's refusal is what is
 * tested here, so the requests must reach it (the spec checks they do).
 *
 * Without a Chromium-family browser (CHROMIUM_PATH, or lib/measure/chromium.js's usual places) the spec fails with a message saying how to
 * install it, unless STREAMLAB_SKIP_BROWSER=1 (then it is skipped), as
 * test/slow/dashboard.test.js does. The attacker's pages and what the test
 * process watches: test/cross-origin-pages.js.
 */
/* global window, document -- the functions given to page.evaluate, and the attacker's scripts, run in the page */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { chromiumMissing, launchChromium } from '../../lib/measure/browser.js'
import {
  GZ, countEvents, hostOf, isDeclaredSpelling, listFiles, notFavicon, readThroughRebinding, startAttackerSite, watchRequests
} from '../cross-origin-pages.js'
import { startLab } from '../helpers.js'

const REBINDING_HOST = 'attacker.test'
/** Paths opened under the rebinding name: the page, and the reads an attacker wants (from /experiments on). */
const REBINDING_READS = ['/', '/some-path', '/experiments', '/db/status', '/db/batch?limit=1', '/metrics']

describe('another web page in Chromium', function () {
  this.timeout(60_000)

  let dataDir
  let lab
  let attacker
  let browser
  let page
  let watched
  let counted

  before(async function () {
    if (chromiumMissing() !== null) {
      if (process.env.STREAMLAB_SKIP_BROWSER === '1') this.skip()
      throw new Error(`${chromiumMissing()}; or set STREAMLAB_SKIP_BROWSER=1 to skip the browser tests`)
    }
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-cross-origin-'))
    lab = await startLab({ dataDir })
    await Promise.all([lab.app.locals.partsRemoved, lab.app.locals.oldUploadsRemoved])
    attacker = await startAttackerSite(lab.port)
    watched = watchRequests(lab.server)
    counted = countEvents(lab.app.locals.events)
    // the rebinding: to this browser, attacker.test is this machine, so attacker.test:LAB is the lab's socket
    browser = await launchChromium({ args: [`--host-resolver-rules=MAP ${REBINDING_HOST} 127.0.0.1`] })
    page = browser.page
  })

  after(async function () {
    watched?.stop()
    counted?.stop()
    await browser?.close()
    if (lab) {
      // had a start got through, its run must not outlive the spec
      const listing = await (await fetch(`${lab.url}/experiments`)).json()
      if (listing.running) await fetch(`${lab.url}/experiments/${listing.running}`, { method: 'DELETE' })
    }
    await attacker?.close()
    await lab?.close()
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
  })

  describe('a page on another local origin (http://localhost:OTHER/)', function () {
    let filesBefore
    let attempts

    before(async function () {
      // an upload of the person at the keyboard (a script: no Origin, no Sec-Fetch-Site), for DELETE /uploads to remove
      const upload = await fetch(`${lab.url}/upload-stream`, {
        method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: Buffer.alloc(1000, 1)
      })
      assert.equal(upload.status, 200)
      filesBefore = listFiles(dataDir)
      assert.ok(filesBefore.some(function isUpload (f) { return /^uploads\/.+\.upload 1000$/.test(f) }), filesBefore.join('\n'))
      watched.seen.length = 0
      counted.reset()

      await page.goto(`${attacker.url}/`)
      // every attempt has its answer (or its failure) in the page, so the lab has answered them all: no settling time
      await page.waitForFunction(function attackSettled () { return document.title === 'done' })
      attempts = await page.evaluate(function readAttempts () { return window.attempts })
    })

    it('sends its writes from a page the lab did not serve, to the lab by address and by localhost', function () {
      assert.equal(new URL(page.url()).origin, attacker.url)
      assert.notEqual(attacker.port, lab.port)
      // each attempt settled in the page: an opaque answer, a refused preflight, an image error, a frame load
      assert.equal(attempts.length, 2 * 17, attempts.join('\n'))
    })

    it('reaches the lab with every one of them: Chromium let them through, the lab refused them', function () {
      const asked = new Set(watched.seen.map(function said (r) { return `${r.method} ${r.path.split('?')[0]} ${hostOf(r)}` }))
      for (const host of ['127.0.0.1', 'localhost']) {
        for (const line of ['POST /upload-stream', 'POST /upload-buffer', 'POST /metrics/peak/reset', 'POST /experiments',
          'POST /good', 'POST /bad', 'GET /generate', 'OPTIONS /uploads']) {
          assert.ok(asked.has(`${line} ${host}`), `the lab never saw ${line} from ${host}; it saw:\n${[...asked].join('\n')}`)
        }
      }
    })

    it('answers each of them 403 request.cross.site, as same-site by localhost and cross-site by address', function () {
      assert.ok(watched.seen.length >= 16)
      for (const r of watched.seen.filter(isDeclaredSpelling)) {
        const line = `${r.method} ${r.path} (Host ${r.host}, Sec-Fetch-Site ${r.site})`
        assert.equal(r.status, 403, line)
        assert.equal(r.type, 'request.cross.site', line)
        assert.equal(r.site, hostOf(r) === 'localhost' ? 'same-site' : 'cross-site', line)
      }
    })

    it('serves no other spelling of a write in a frame: /Generate, /GENERATE, /generate/, /gen%65rate, /DB/BATCH are 404', function () {
      const others = watched.seen.filter(function misspelt (r) { return !isDeclaredSpelling(r) })
      assert.equal(others.length, 2 * 6, watched.seen.map(function said (r) { return `${r.method} ${r.path}` }).join('\n'))
      for (const r of others) {
        assert.equal(r.status, 404, `${r.method} ${r.path}`)
        assert.equal(r.type, 'route.not.found', `${r.method} ${r.path}`)
      }
      const framed = attempts.filter(function isFrame (a) { return a.startsWith('iframe ') })
      assert.equal(framed.length, 2 * 7, framed.join('\n'))
    })

    it('never sends the DELETE: its preflight is refused', function () {
      assert.ok(!watched.seen.some(function isDelete (r) { return r.method === 'DELETE' }))
      assert.ok(attempts.some(function failed (a) { return /^DELETE .*\/uploads: .*fail/i.test(a) }), attempts.join('\n'))
    })

    it('writes no file, removes no file: the data directory is as it was', function () {
      assert.deepEqual(listFiles(dataDir), filesBefore)
    })

    it('starts no experiment, resets no peak, and no ingest or upload even begins', async function () {
      assert.deepEqual(counted.counts, { request: 0, experiment: 0, peakReset: 0 })
      const listing = await (await fetch(`${lab.url}/experiments`)).json()
      assert.equal(listing.running, null)
      assert.deepEqual(listing.recent, [])
    })
  })

  describe(`a DNS-rebinding name (${REBINDING_HOST}:LAB, resolved to 127.0.0.1)`, function () {
    it('is refused 403 host.not.allowed at every path, as JSON: the lab serves no page for a script to run in', async function () {
      for (const where of REBINDING_READS) {
        const res = await page.goto(`http://${REBINDING_HOST}:${lab.port}${where}`)
        assert.equal(res.status(), 403, where)
        const body = await res.json()
        assert.equal(body.error.type, 'host.not.allowed', where)
        assert.equal(body.error.host, `${REBINDING_HOST}:${lab.port}`)
        assert.match(res.headers()['content-type'], /^application\/json/)
      }
    })

    it('gives a script in that origin (same-origin with the lab\'s socket) nothing to read and nothing to start', async function () {
      const filesBefore = listFiles(dataDir)
      watched.seen.length = 0
      counted.reset()
      // the lab's refusal is the document here, and it has no script: page.evaluate stands in for whatever script an
      // attacker could get into the origin http://attacker.test:LAB (their own page served before the rebinding)
      const res = await page.goto(`http://${REBINDING_HOST}:${lab.port}/some-path`)
      assert.equal(res.status(), 403)
      assert.equal(new URL(page.url()).origin, `http://${REBINDING_HOST}:${lab.port}`)
      const answers = await page.evaluate(readThroughRebinding, { reads: REBINDING_READS.slice(2), good: [...GZ] })
      assert.deepEqual(answers.map(function shape (a) { return `${a.method} ${a.path}` }), [
        ...REBINDING_READS.slice(2).map(function read (p) { return `GET ${p}` }),
        'POST /experiments', 'POST /good', 'POST /metrics/peak/reset', 'GET /generate?save=1&bytes=50MB&level=0'
      ])
      for (const a of answers) {
        // same-origin: the script can read every answer, and every answer is the refusal, not the lab's state
        assert.equal(a.status, 403, `${a.method} ${a.path}: ${a.text}`)
        assert.equal(a.type, 'host.not.allowed', `${a.method} ${a.path}`)
        assert.doesNotMatch(a.text, /"running"|"recent"|"rows"|"rss"|"seeded"/, `${a.method} ${a.path}`)
      }
      // and they did reach the lab, under the rebinding name (beside Chromium's own favicon request, whenever it comes)
      assert.deepEqual(watched.seen.filter(notFavicon).map(function said (r) { return `${r.method} ${r.path} ${r.host} ${r.status}` }).sort(), [
        `GET /some-path ${REBINDING_HOST}:${lab.port} 403`,
        ...answers.map(function said (a) { return `${a.method} ${a.path} ${REBINDING_HOST}:${lab.port} 403` })
      ].sort())
      assert.deepEqual(counted.counts, { request: 0, experiment: 0, peakReset: 0 })
      assert.deepEqual(listFiles(dataDir), filesBefore)
      const listing = await (await fetch(`${lab.url}/experiments`)).json()
      assert.equal(listing.running, null)
      assert.deepEqual(listing.recent, [])
    })
  })

  describe(`the lab's own page (http://127.0.0.1:LAB/) in the same browser`, function () {
    it('loads the dashboard and drives the lab same-origin: /good answers 200, the peak resets, /experiments reads', async function () {
      watched.seen.length = 0
      counted.reset()
      const problemsBefore = browser.problems.length
      await page.goto(`${lab.url}/`)
      await page.waitForFunction(function live () { return window.streamlab?.state === 'live' })
      const answers = await page.evaluate(async function driveOwnLab (good) {
        const posted = await fetch('/good', { method: 'POST', headers: { 'content-type': 'application/gzip' }, body: new Uint8Array(good) })
        const reset = await fetch('/metrics/peak/reset', { method: 'POST' })
        const listing = await fetch('/experiments')
        return { good: posted.status, summary: await posted.json(), reset: reset.status, experiments: listing.status, list: await listing.json() }
      }, [...GZ])
      assert.equal(answers.good, 200, JSON.stringify(answers.summary))
      assert.equal(answers.reset, 200)
      assert.equal(answers.experiments, 200)
      assert.ok(answers.list.experiments.length > 0)
      // the instruments the refusals were checked with see an accepted request
      assert.equal(counted.counts.peakReset, 1)
      assert.ok(counted.counts.request >= 1)
      assert.ok(watched.seen.some(function ownPost (r) { return r.method === 'POST' && r.path === '/good' && r.status === 200 && r.site === 'same-origin' }))
      assert.deepEqual(browser.problems.slice(problemsBefore), [])
    })
  })
})
