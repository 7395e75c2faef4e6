/**
 * A run exported as one page (`npm run runs -- export`, lib/runs/run-page.js), opened in
 * Chromium from a file:// URL with the network off and every request that is not the file
 * aborted: it draws the run as the dashboard replays it (the same peaks as the record, its
 * spans, its garbage collections, where the bytes were, the bars, the results table, which code held the bytes) with no error and no policy
 * violation; a record of markup is drawn as text and runs nothing; a page whose record was
 * edited into something else says what is wrong with it and draws nothing.
 */
/* global window, document -- the functions given to page.evaluate and waitForFunction run in the page */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL, fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { chromiumMissing, launchChromium } from '../../lib/measure/browser.js'
import { MARKUP, makeBusyRecord, makeMarkupRecord, makeSitesRecord, makeTestRecord } from '../runs-helpers.js'

const CLI = fileURLToPath(new URL('../../scripts/runs.js', import.meta.url))

describe('a run exported as one page, in Chromium from disk with the network off', function () {
  this.timeout(60_000)
  let dir
  let browser
  let page
  const asked = []
  const aborted = []

  /** Export a record through the CLI and open the page from disk; resolves to what the page says it drew. */
  async function openExport (name, text) {
    fs.writeFileSync(path.join(dir, `${name}.json`), text)
    const out = path.join(dir, `${name}.html`)
    await promisify(execFile)(process.execPath, [CLI, 'export', path.join(dir, `${name}.json`), '--out', out])
    await page.goto(pathToFileURL(out).href)
    await page.waitForFunction(function drawnOrRefused () { return window.streamlab?.replay.mode === 'run' || window.streamlab?.replay.message !== '' })
    return page.evaluate(function read () { return window.streamlab.replay })
  }

  before(async function openBrowser () {
    if (chromiumMissing() !== null) {
      if (process.env.STREAMLAB_SKIP_BROWSER === '1') this.skip()
      throw new Error(`${chromiumMissing()}; or set STREAMLAB_SKIP_BROWSER=1 to skip the browser tests`)
    }
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-export-'))
    browser = await launchChromium({ viewport: { width: 1280, height: 900 } })
    page = browser.page
    await browser.context.setOffline(true)
    await browser.context.route('**', function onlyTheFile (route) {
      const url = route.request().url()
      asked.push(url)
      if (url.startsWith('file:')) return route.continue()
      aborted.push(url)
      return route.abort()
    })
  })

  after(async function closeBrowser () {
    await browser?.close()
    if (dir) fs.rmSync(dir, { recursive: true, force: true })
  })

  it('draws the run as the dashboard does, from the file alone: its peaks, spans, bytes, bars and results', async function () {
    const { record, text } = makeBusyRecord({ peak: 300 * 1024 * 1024 })
    const drawn = await openExport('busy', text)
    assert.equal(drawn.message, '')
    const { run } = drawn
    assert.equal(run.id, record.id)
    assert.equal(run.samples, record.timeline.samples.length)
    const highest = function highest (read) { return Math.max(...record.timeline.samples.map(read)) }
    assert.equal(run.peaks.rss, highest(function rss (s) { return s.rss }))
    assert.equal(run.peaks.peakRss, highest(function peak (s) { return s.peakRss }))
    assert.equal(run.peaks.arrayBuffers, highest(function buffers (s) { return s.arrayBuffers }))
    assert.equal(run.spans, 2)
    assert.equal(run.markers, 2)
    assert.equal(run.peakResets, 1)
    assert.deepEqual(run.gcMarks, { markCompacts: 1, labMarkCompacts: 0, otherOld: 0, youngColumns: 60, young: 60 })
    assert.ok(run.layers.includes('heap_large_object_space') && run.layers.includes('arrayBuffers'), run.layers.join(', '))
    assert.deepEqual(run.bars.map(function bar (b) { return [b.route, b.total] }).sort(), [['bad', 200 * 1024 * 1024], ['good', 65536 + 65536 + 4096 + 131072]])
    assert.match(await page.textContent('table.results td[data-route="bad"][data-field="peakAboveIdle"]'), /^300\.0 MiB$/)
    assert.equal(await page.title(), 'streamlab: Run busy-run: Buffered vs streamed gzip ingest')
    // the charts are drawn, not blank: each canvas has coloured pixels
    const painted = await page.evaluate(function paintedCanvases () {
      return [...document.querySelectorAll('canvas')].map(function colours (canvas) {
        const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height)
        let coloured = 0
        for (let i = 0; i < data.length; i += 4) if (data[i] !== data[i + 1] || data[i + 1] !== data[i + 2]) coloured++
        return coloured
      })
    })
    assert.equal(painted.length, 4)
    for (const n of painted) assert.ok(n > 100, `${n} coloured pixels`)
    assert.deepEqual(aborted, [], 'the page asked the network for nothing')
    assert.ok(asked.every(function isFile (url) { return url.startsWith('file:') }), asked.join(', '))
    assert.deepEqual(browser.problems, [], 'no error, no policy violation')
  })

  it('draws which code held the bytes, /bad beside /good, from the record\'s sites', async function () {
    const { text } = makeSitesRecord({ id: 'sites-export' })
    const { run } = await openExport('sites', text)
    assert.deepEqual(run.sites.routes.map(function route (r) { return [r.route, r.sites[0].line, r.sites[0].share] }), [['bad', 'lib/ingest/buffered.js:120 parseWhole', '55%'], ['good', 'node:zlib:600 processCallback', '59%']])
    assert.match(await page.textContent('#run-sites li.site'), /parseWhole.*160\.0 MiB held · 55% of \/bad's allocation/)
    assert.deepEqual(browser.problems, [], 'no error, no policy violation (the bars\' widths too)')
  })

  it('draws a site named f\\u202egnp.exe with its bidi mark escaped, in the page and in its source', async function () {
    const { text } = makeSitesRecord({ id: 'sites-bidi-export', functionName: 'f\u202egnp.exe' })
    await openExport('sites-bidi', text)
    assert.equal(await page.textContent('#run-sites li.site .site-line'), 'lib/ingest/buffered.js:120 f\\u202egnp.exe')
    assert.ok(!fs.readFileSync(path.join(dir, 'sites-bidi.html'), 'utf8').includes('\u202e'), 'no raw U+202E in the page\'s source')
    assert.deepEqual(browser.problems, [])
  })

  it('draws a backpressure run\'s pipeline from the file alone: the lesson\'s record, each buffer at its last sample, its peak the run\'s', async function () {
    const text = fs.readFileSync(fileURLToPath(new URL('../../docs/figures/backpressure.run.json', import.meta.url)), 'utf8')
    const record = JSON.parse(text)
    const samples = record.results.samples
    const drawn = await openExport('backpressure', text)
    assert.equal(drawn.message, '')
    const { pipeline } = drawn.run
    assert.equal(pipeline.samples, samples.length)
    assert.equal(pipeline.at, samples.length - 1)
    const consumer = pipeline.bars.find(function named (b) { return b.key === 'stage:consumer' })
    // the server's peak, looked at after every batch, as the record's stages table has it
    const peakRow = record.results.tables[0].rows.find(function peak (r) { return r.field === 'peak' })
    assert.equal(consumer.peak, peakRow.values.consumer)
    assert.equal(consumer.bytes, samples.at(-1).stages.at(-1).bytes)
    // case B: the consumer queued far past its bound, red
    assert.equal(consumer.over, true, consumer.text)
    assert.deepEqual(aborted, [])
  })

  it('shows a record measured from outside (a grading\'s, a bench of fresh labs) as its results alone, with no empty chart', async function () {
    const { record, text } = makeTestRecord({ id: 'grading-run', source: 'grade', samples: [], marks: [] })
    const drawn = await openExport('grading', text)
    assert.equal(drawn.message, '')
    assert.deepEqual([drawn.run.id, drawn.run.samples, drawn.run.charts], [record.id, 0, false])
    assert.equal(await page.locator('canvas').count(), 0)
    assert.match(await page.textContent('.replay-about:last-of-type'), /^no timeline: the grader measured fresh processes from outside/)
    assert.match(await page.textContent('table.results td[data-route="bad"][data-field="peakAboveIdle"]'), /^60\.0 MiB$/)
    assert.deepEqual(browser.problems, [], 'no error, no policy violation')
  })

  it('draws every string of a record of markup as text, and runs none of it', async function () {
    const { record, text } = makeMarkupRecord()
    const drawn = await openExport('markup', text)
    assert.equal(drawn.run.id, 'markup-run')
    const seen = await page.evaluate(function read () {
      return {
        xss: window.__xss,
        scripts: document.querySelectorAll('script').length,
        images: document.querySelectorAll('img').length,
        text: document.querySelector('#run-view').textContent
      }
    })
    assert.equal(seen.xss, undefined)
    assert.equal(seen.scripts, 3, 'Chart.js, the page, the record: nothing more')
    assert.equal(seen.images, 0)
    assert.ok(seen.text.includes(record.run.title), 'the title as text')
    assert.ok(seen.text.includes(`POST ${MARKUP}`), 'the results column as text')
    assert.deepEqual(aborted, [])
    assert.deepEqual(browser.problems, [])
  })

  it('says what is wrong with a record edited into something else, and draws nothing', async function () {
    const { text } = makeBusyRecord({ id: 'edited' })
    await openExport('edited', text)
    const html = fs.readFileSync(path.join(dir, 'edited.html'), 'utf8')
      .replace(/(<script type="application\/json" id="run-record">)[^<]*/, '$1{"kind":"streamlab.run","format":2}')
    fs.writeFileSync(path.join(dir, 'edited.html'), html)
    await page.goto(pathToFileURL(path.join(dir, 'edited.html')).href)
    await page.waitForFunction(function refused () { return window.streamlab?.replay.message !== '' })
    const { mode, message } = await page.evaluate(function read () { return window.streamlab.replay })
    assert.equal(mode, 'none')
    assert.equal(message, 'the run in this page is not a run record this lab reads: format is 2; this lab reads format 1')
    assert.equal(await page.$$eval('canvas', function count (canvases) { return canvases.length }), 0)
    assert.deepEqual(browser.problems, [])
  })
})
