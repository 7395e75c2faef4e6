/**
 * "Which code holds it" on the dashboard, in Chromium (test/dashboard-session.js): a replayed
 * record's sites as ranked bars, /bad's column beside /good's, each bar naming its line, kind,
 * thread, MiB allocated and held and its share of the route's allocation, every string as text,
 * its control characters and bidi marks escaped, the lab's own code in a column apart; a record
 * without sites says so; an overlay lists the sites that moved, as compare does; the stream's live
 * `sites` windows drawn while a run runs, a window two routes shared in neither column. The record's
 * sites themselves: test/runs-sites.test.js.
 */
/* global window, document, DataTransfer, DragEvent -- the functions given to page.evaluate run in the page */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { runsDir } from '../../lib/runs/store.js'
import { dashboardSession } from '../dashboard-session.js'
import { MARKUP, makeSitesRecord, site, sitesWindow } from '../runs-helpers.js'

/** Runs in the page: a file dropped on the page as a person drops one. */
function dropInPage ({ name, text }) {
  const transfer = new DataTransfer()
  transfer.items.add(new File([text], name, { type: 'application/json' }))
  for (const type of ['dragover', 'drop']) document.body.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }))
}

/** Runs in the page: each column of a sites box as the reader sees it, and where it is on the screen. */
function readColumns (selector) {
  return [...document.querySelectorAll(`${selector} .sites-route`)].map(function column (section) {
    const box = section.getBoundingClientRect()
    return {
      route: section.dataset.route,
      head: section.querySelector('h3').textContent,
      left: box.left,
      right: box.right,
      top: box.top,
      bars: [...section.querySelectorAll('li.site')].map(function bar (li) {
        return { line: li.querySelector('.site-line').textContent, figures: li.querySelector('.site-figures').textContent, width: li.querySelector('.site-allocated').getBoundingClientRect().width }
      })
    }
  })
}

describe('which code holds it, on the dashboard in Chromium', function () {
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

  it('draws a replayed run\'s top sites as bars, /bad beside /good, each naming its line, kind, thread, MiB and share of the route\'s allocation', async function () {
    const { record } = makeSitesRecord({ id: 'sites-replay' })
    const run = await replay(record)
    assert.deepEqual(run.sites.routes.map(function route (r) { return [r.route, r.allocated, r.sites.length] }), [['bad', 290 * 1024 * 1024, 3], ['good', 68 * 1024 * 1024, 3]])
    const [bad, good] = await page.evaluate(readColumns, '#replay-sites')
    assert.equal(bad.route, 'bad')
    assert.equal(good.route, 'good')
    assert.ok(good.left >= bad.right && Math.abs(good.top - bad.top) < 2, `side by side: ${JSON.stringify([bad, good].map(function place (c) { return [c.left, c.right, c.top] }))}`)
    assert.equal(bad.head, ' /bad allocated 290.0 MiB (sampled) · 2 windows')
    assert.deepEqual(bad.bars.map(function text (b) { return [b.line, b.figures] }), [
      ['lib/ingest/buffered.js:120 parseWhole', 'heap · main · 160.0 MiB allocated · 160.0 MiB held · 55% of /bad\'s allocation'],
      ['lib/ingest/gzip-framing.js:88 decodeWhole', 'buffer · main · 100.0 MiB allocated · 100.0 MiB held · 34% of /bad\'s allocation'],
      ['lib/ingest/read.js:41 readWhole', 'buffer · main · 30.0 MiB allocated · 30.0 MiB held · 10% of /bad\'s allocation']
    ])
    assert.deepEqual(good.bars.map(function text (b) { return [b.line, b.figures] }), [
      ['node:zlib:600 processCallback', 'buffer · main · 40.0 MiB allocated · 0.3 MiB held · 59% of /good\'s allocation'],
      ['lib/parse/worker.js:30 parseBatch', 'heap · parse thread 1 · 20.0 MiB allocated · held not known · 29% of /good\'s allocation'],
      ['lib/json/records.js:200 flush', 'heap · main · 8.0 MiB allocated · 1.0 MiB held · 12% of /good\'s allocation']
    ])
    assert.match(await page.textContent('#replay-sites'), /sampled about every 2\.0 MiB allocated/)
    // one scale for both columns: /bad's largest is the widest bar of all
    assert.ok(bad.bars[0].width > good.bars[0].width * 3, `${bad.bars[0].width} against ${good.bars[0].width}`)
    assert.match(await page.textContent('#replay-sites'), /1 window in which two routes had requests in flight is in neither column/)
    assert.deepEqual(session.problems, [])
  })

  it('draws a function name of markup as text, and runs none of it', async function () {
    const { record } = makeSitesRecord({ id: 'sites-markup', functionName: MARKUP })
    await replay(record)
    const seen = await page.evaluate(function read () {
      const box = document.getElementById('replay-sites')
      return { first: box.querySelector('li.site .site-line').textContent, images: box.querySelectorAll('img').length, xss: window.__xss ?? null }
    })
    assert.deepEqual(seen, { first: `lib/ingest/buffered.js:120 ${MARKUP}`, images: 0, xss: null })
    assert.deepEqual(session.problems, [])
  })

  it('draws a site named with bidi marks and control characters escaped, as the card shows it (lib/util/escape.js)', async function () {
    const { record } = makeSitesRecord({ id: 'sites-bidi', functionName: 'f\u202egnp.exe\nPASS\u2066\x1b' })
    await replay(record)
    const first = await page.evaluate(function read () { return document.querySelector('#replay-sites li.site .site-line').textContent })
    assert.equal(first, 'lib/ingest/buffered.js:120 f\\u202egnp.exe\\nPASS\\u2066\\x1b')
    assert.deepEqual(session.problems, [])
  })

  it('says a record without sites has none', async function () {
    const { record } = makeSitesRecord({ id: 'sites-none' })
    delete record.timeline.sites
    delete record.timeline.siteWindows
    const run = await replay(record)
    assert.deepEqual(run.sites, { routes: [], lab: null, spanning: 0 })
    assert.match(await page.textContent('#replay-sites'), /This record has no allocation sites/)
  })

  it('lists the sites that moved when one run is laid over another', async function () {
    const dir = runsDir(session.dataDir)
    fs.mkdirSync(dir, { recursive: true })
    for (const [id, functionName] of [['sites-a', 'parseWhole'], ['sites-b', 'parseInBatches']]) fs.writeFileSync(path.join(dir, `${id}.json`), makeSitesRecord({ id, functionName }).text)
    await page.goto(`${session.lab.url}/?test=1&run=sites-a&compare=sites-b`)
    await page.waitForFunction(function overlaid () { return window.streamlab?.replay.mode === 'overlay' })
    const { overlay } = await page.evaluate(function read () { return window.streamlab.replay })
    assert.deepEqual(overlay.sites[0], { route: 'bad', lines: ['lib/ingest/buffered.js:120 parseInBatches', 'lib/ingest/buffered.js:120 parseWhole', 'lib/ingest/gzip-framing.js:88 decodeWhole', 'lib/ingest/read.js:41 readWhole'] })
    const first = await page.evaluate(function row () { return [...document.querySelectorAll('table.sites-moved tbody tr')[0].cells].map(function text (c) { return c.textContent }) })
    assert.deepEqual(first, ['/bad', 'lib/ingest/buffered.js:120 parseInBatches', 'heap', '–', '160.0 MiB', '+160.0 MiB', '–', '160.0 MiB', '+160.0 MiB'])
    assert.deepEqual(session.problems, [])
  })

  it('draws the stream\'s live windows while a run runs, each in the column of the route in flight, the lab\'s code apart', async function () {
    await page.goto(`${session.lab.url}/?test=1`)
    await page.waitForFunction(function live () { return window.streamlab?.state === 'live' && window.streamlab.replay.mode === 'live' })
    const base = Date.now()
    const drawn = await page.evaluate(function inject ({ base, bad, both, good }) {
      const s = window.streamlab
      s.injectEvent('experiment', { id: 'live-sites', name: 'ingest', phase: 'start', time: base - 6000 })
      s.injectEvent('request', { phase: 'start', id: 9001, route: 'bad', time: base - 5000 })
      s.injectEvent('sites', bad)
      s.injectEvent('request', { phase: 'end', id: 9001, route: 'bad', time: base - 3500, heldPeak: 200 * 1024 * 1024 })
      s.injectEvent('request', { phase: 'start', id: 9002, route: 'good', time: base - 3200 })
      s.injectEvent('sites', both)
      s.injectEvent('sites', good)
      return s.sites
    }, {
      base,
      // windows of a second each: /bad's, one in which /bad ended and /good began, /good's
      bad: sitesWindow([site('buffer', 'lib/ingest/gzip-framing.js:88', 'decodeWhole', 100, 100), site('buffer', 'lib/metrics/peak.js:40', 'readPeakRss', 2, 2)], { at: base - 4000, windowMs: 1000 }),
      both: sitesWindow([site('buffer', 'node:zlib:600', 'processCallback', 7, 1)], { at: base - 3000, windowMs: 1000 }),
      good: sitesWindow([site('buffer', 'node:zlib:600', 'processCallback', 40, 0.25)], { at: base - 2000, windowMs: 1000 })
    })
    assert.equal(drawn.windows, 3)
    assert.equal(drawn.spanning, 1)
    assert.deepEqual(drawn.routes.map(function route (r) { return [r.route, r.allocated / 1024 / 1024, r.sites.map(function line (x) { return [x.line, x.allocated / 1024 / 1024, x.share] })] }), [
      ['bad', 100, [['lib/ingest/gzip-framing.js:88 decodeWhole', 100, '100%']]],
      ['good', 40, [['node:zlib:600 processCallback', 40, '100%']]]
    ])
    assert.deepEqual(drawn.lab.sites.map(function line (x) { return x.line }), ['lib/metrics/peak.js:40 readPeakRss'])
    const [bad, good, lab] = await page.evaluate(readColumns, '#sites')
    assert.equal(bad.bars[0].figures, 'buffer · main · 100.0 MiB allocated · 100.0 MiB held · 100% of /bad\'s allocation')
    assert.equal(good.head, ' /good allocated 40.0 MiB (sampled) · 1 window')
    assert.equal(lab.route, 'lab')
    assert.deepEqual(session.problems, [])
  })
})
