/**
 * Which code holds a run's bytes, in its record (lib/runs/sites.js, timeline.js, record.js,
 * check.js) and in `npm run runs -- compare` (site-compare.js, scripts/runs.js): the samples'
 * allocation-site windows kept beside them, each given to the route in flight, each route's
 * summary, the bounds, older records without sites, and the sites that moved between two runs.
 * The dashboard's view of them: test/slow/dashboard-sites.test.js.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { readRunRecord } from '../lib/runs/format.js'
import { createTimeline } from '../lib/runs/timeline.js'
import { makeRecord, recordText } from '../lib/runs/record.js'
import { siteLine } from '../lib/allocation/site.js'
import { SITES_DEFAULTS, siteShare } from '../lib/runs/sites.js'
import { SITE_ROWS, compareSites } from '../lib/runs/site-compare.js'
import { fakeSample, makeSitesRecord, makeTestRecord, site, sitesWindow } from './runs-helpers.js'

const MiB = 1024 * 1024
const CLI = fileURLToPath(new URL('../scripts/runs.js', import.meta.url))
const execFileAsync = promisify(execFile)

function lines (entry) {
  return entry.sites.map(function named (s) { return `${siteLine(s)} ${s.allocatedBytes / MiB} ${s.heldBytes === null ? null : s.heldBytes / MiB}` })
}

describe('allocation sites in run records', function () {
  describe('the record (lib/runs/timeline.js, sites.js)', function () {
    it('keeps the bus\'s windows beside the samples, each with the routes in flight while it was taken', function () {
      const { record } = makeSitesRecord()
      const { siteWindows, samples } = record.timeline
      assert.deepEqual(siteWindows.map(function routes (w) { return [w.time - record.run.startedAt, w.routes] }), [[2000, ['bad']], [4000, ['bad']], [6000, ['bad', 'good']], [8000, ['good']]])
      assert.ok(samples.every(function none (s) { return s.allocationSites === undefined }), 'not in the samples too')
      assert.deepEqual(siteWindows[0].sites[0], site('buffer', 'lib/ingest/read.js:41', 'readWhole', 30, 30))
    })

    it('sums what each route\'s sites allocated across its windows, keeps the most each held, and gives a window of two routes to neither', function () {
      const { sites } = makeSitesRecord().record.timeline
      assert.deepEqual(sites.routes.map(function route (r) { return [r.route, r.windows] }), [['bad', 2], ['good', 1]])
      assert.deepEqual(lines(sites.routes[0]), [
        'lib/ingest/buffered.js:120 parseWhole 160 160',
        'lib/ingest/gzip-framing.js:88 decodeWhole 100 100',
        'lib/ingest/read.js:41 readWhole 30 30'
      ])
      // the 5 MiB of zlib in the window /bad ended and /good began in are in neither
      assert.deepEqual(lines(sites.routes[1]), [
        'node:zlib:600 processCallback 40 0.25',
        'lib/parse/worker.js:30 parseBatch 20 null',
        'lib/json/records.js:200 flush 8 1'
      ])
      assert.equal(sites.spanning, 1)
      assert.equal(sites.idle, 0)
    })

    it('has each route\'s allocation over its windows, the whole its sites\' shares are of, so they sum to at most 100 %', function () {
      const { sites } = makeSitesRecord().record.timeline
      for (const entry of sites.routes) {
        const sum = entry.sites.reduce(function add (total, s) { return total + siteShare(s, entry) }, 0)
        assert.ok(sum > 0 && sum <= 1, `${entry.route}: ${sum}`)
      }
    })

    it('keeps at most maxSiteWindows, each route\'s heaviest among them, and adds up its summary from every window', function () {
      const start = 1_790_000_000_000
      const windows = Array.from({ length: 400 }, function window (_, k) {
        return sitesWindow([site('buffer', 'lib/ingest/read.js:41', 'readWhole', k === 334 ? 500 : 1, 1)], { at: start + (k + 1) * 2000 })
      })
      const requests = [{ phase: 'start', id: 1, route: 'bad', time: start }]
      const { record } = makeTestRecord({ siteWindows: windows, requests })
      const { siteWindows, sites, thinned } = record.timeline
      assert.equal(siteWindows.length, SITES_DEFAULTS.maxWindows)
      assert.deepEqual(thinned.siteWindows, { seen: 400, kept: SITES_DEFAULTS.maxWindows })
      assert.ok(siteWindows.some(function heaviest (w) { return w.sites[0].allocatedBytes === 500 * MiB }), 'the heaviest window kept')
      assert.equal(sites.routes[0].windows, 400)
      assert.equal(sites.routes[0].sites[0].allocatedBytes, 899 * MiB)
    })

    it('halves the windows first while they take over a quarter of a record that does not fit', function () {
      const start = 1_790_000_000_000
      const timeline = createTimeline({ interval: 100 })
      timeline.addRequest({ phase: 'start', id: 1, route: 'bad', time: start })
      for (let k = 0; k < 100; k++) {
        timeline.addSample(fakeSample(start + (k + 1) * 100, 90 * MiB))
        timeline.addSiteWindow(sitesWindow(Array.from({ length: 20 }, function many (_, j) { return site('heap', `lib/x${j}.js:${k + 1}`, 'f'.repeat(200), 1, 1) }), { at: start + (k + 1) * 100 }))
      }
      const text = recordText(function build (bounds) {
        return makeRecord({ id: 'r', experiment: 'ingest', params: null, status: 'done', source: 'engine', startedAt: start, endedAt: start + 1e4, results: null, error: null, options: null }, timeline.toRecord(bounds))
      }, 400_000)
      const { timeline: kept } = JSON.parse(text)
      assert.ok(Buffer.byteLength(text) <= 400_000)
      // 100 windows of 20 long sites are about 660 KB: halved twice, to 25, the record fits
      assert.equal(kept.siteWindows.length, 25)
      assert.deepEqual(kept.thinned.siteWindows, { seen: 100, kept: 25 })
      assert.equal(kept.samples.length, 100, 'the samples untouched')
    })

    it('reads a record with no sites, as the lab wrote them before it kept them, and refuses a site that is not one, naming it', function () {
      const { record } = makeSitesRecord()
      delete record.timeline.siteWindows
      delete record.timeline.sites
      assert.equal(readRunRecord(JSON.stringify(record), 'older.json').timeline.sites, undefined)
      const bad = makeSitesRecord().record
      bad.timeline.sites.routes[1].sites[2].heldBytes = '1 MiB'
      assert.throws(function read () { readRunRecord(JSON.stringify(bad), 'bad.json') }, /timeline\.sites\.routes\[1\]\.sites\[2\]\.heldBytes is not a number or null/)
      const kind = makeSitesRecord().record
      kind.timeline.siteWindows[0].sites[0].kind = 'stack'
      assert.throws(function read () { readRunRecord(JSON.stringify(kind), 'kind.json') }, /timeline\.siteWindows\[0\]\.sites\[0\]\.kind is not one of heap, buffer/)
    })
  })

  describe('the sites that moved (lib/runs/site-compare.js, npm run runs -- compare)', function () {
    const before = makeSitesRecord({ id: 'sites-a' }).record
    // a fix that halves /bad's parse and gives its body to a new line
    const after = makeSitesRecord({ id: 'sites-b', functionName: 'parseInBatches' }).record

    it('matches each route\'s sites by line and function, the largest change first', function () {
      const { routes, without } = compareSites(before, after)
      assert.deepEqual(without, [])
      assert.deepEqual(routes.map(function route (r) { return r.route }), ['bad', 'good'])
      const bad = routes[0].rows.map(function row (r) { return [r.line, r.allocated.a && r.allocated.a / MiB, r.allocated.b && r.allocated.b / MiB, r.allocated.difference / MiB, r.held.difference / MiB] })
      assert.deepEqual(bad, [
        ['lib/ingest/buffered.js:120 parseInBatches', null, 160, 160, 160],
        ['lib/ingest/buffered.js:120 parseWhole', 160, null, -160, -160],
        ['lib/ingest/gzip-framing.js:88 decodeWhole', 100, 100, 0, 0],
        ['lib/ingest/read.js:41 readWhole', 30, 30, 0, 0]
      ])
      assert.equal(routes[0].more, 0)
    })

    it('lists five sites a route, and more with all; says which run recorded none', function () {
      const many = makeSitesRecord({ id: 'many' }).record
      many.timeline.sites.routes[0].sites = Array.from({ length: 30 }, function one (_, k) { return site('heap', `lib/m.js:${k + 1}`, 'm', k + 1, 0) })
      assert.equal(compareSites(before, many).routes[0].rows.length, 5)
      assert.equal(compareSites(before, many).routes[0].more, 28)
      assert.equal(compareSites(before, many, { all: true }).routes[0].rows.length, 20)
      const older = makeSitesRecord({ id: 'older' }).record
      delete older.timeline.sites
      assert.deepEqual(compareSites(older, after).without, ['A'])
    })

    it('is what docs/runs.md says: a route\'s top sites, and the sites compare lists', function () {
      const page = fs.readFileSync(new URL('../docs/runs.md', import.meta.url), 'utf8').replace(/\s+/g, ' ')
      assert.ok(page.includes(`route's top ${SITES_DEFAULTS.topSites} over the run`))
      assert.ok(page.includes(`the ${SITE_ROWS.some} sites that moved most (\`--all\`: ${SITE_ROWS.all})`))
    })

    it('prints each route\'s sites that moved, after the figures', async function () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-sites-'))
      try {
        for (const record of [before, after]) fs.writeFileSync(path.join(dir, `${record.id}.json`), JSON.stringify(record))
        const { stdout } = await execFileAsync(process.execPath, [CLI, 'compare', 'sites-a', 'sites-b', '--dir', dir])
        const table = stdout.slice(stdout.indexOf('Sites that moved'))
        assert.match(table, /\| \/bad +\| lib\/ingest\/buffered\.js:120 parseInBatches \| heap +\| – +\| 160\.0 MiB +\| \+160\.0 MiB +\| – +\| 160\.0 MiB +\| \+160\.0 MiB +\|/)
        assert.match(table, /\| \/good +\| node:zlib:600 processCallback +\| buffer \| 40\.0 MiB +\| 40\.0 MiB +\| ±0\.0 MiB/)
        assert.ok(table.indexOf('parseInBatches') < table.indexOf('decodeWhole'), 'the largest change first')
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })
  })
})
