/**
 * Which code holds a real run's bytes (docs/metrics.md, "Allocation sites"): an ingest run of
 * /bad then /good through POST /experiments, as the dashboard starts one, leaves a record whose
 * `timeline.sites` puts /bad's bytes in its buffering code and /good's in its chunk path, each
 * route's shares summing to at most 100 %, the lab's own code in no route's lines. The figures
 * are memory, sampled: the body is large enough that hundreds of samples make the top site. The
 * fast part is in test/runs-sites.test.js and test/site-shares.test.js.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { startLab } from '../helpers.js'
import { runExperiment } from '../experiment-helpers.js'
import { siteLine } from '../../lib/allocation/site.js'
import { isLabSite, siteShare } from '../../lib/runs/sites.js'

/** /good's chunk path: zlib's output chunks, the record scanner, the parse threads' batches. */
const CHUNK_PATH = /^(node:zlib$|lib\/ingest\/(streamed|gzip-framing|decoder-memory)\.js$|lib\/json\/|lib\/parse\/)/

function sitesOf (record, route) {
  return record.timeline.sites.routes.find(function named (r) { return r.route === route })?.sites ?? []
}

describe('which code holds the bytes of a run through POST /experiments', function () {
  this.timeout(240_000)
  let dataDir
  let lab
  let record

  before(async function runIngest () {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-runs-sites-'))
    lab = await startLab({ dataDir })
    const run = await runExperiment(lab.url, 'ingest', { route: 'both', bytes: '50MB' })
    assert.equal(run.status, 'done', JSON.stringify(run.error))
    await lab.app.locals.runRecorder.settled()
    record = await (await fetch(`${lab.url}/runs/${run.id}`)).json()
  })

  after(async function stopLab () {
    await lab?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('has /bad\'s top sites in its buffering code, the parse among them', function () {
    const sites = sitesOf(record, 'bad')
    const names = sites.slice(0, 4).map(siteLine).join(', ')
    // the string and the parsed document, held at the request's peak, and the inflated body's join
    const parse = sites.slice(0, 3).find(function whole (s) { return s.file === 'lib/ingest/buffered.js' && s.functionName === 'parseWhole' })
    assert.ok(parse, names)
    assert.equal(parse.kind, 'heap')
    assert.ok(sites.slice(0, 3).some(function join (s) { return s.file === 'lib/ingest/gzip-framing.js' }), names)
  })

  it('gives each route shares of its own allocation that sum to at most 100 %, no line holding more than it allocated, none of the lab\'s', function () {
    for (const entry of record.timeline.sites.routes) {
      let sum = 0
      for (const s of entry.sites) {
        sum += siteShare(s, entry)
        assert.ok(!isLabSite(s), `${entry.route}: ${siteLine(s)}`)
        assert.ok(s.heldBytes === null || s.heldBytes <= s.allocatedBytes, `${entry.route}: ${siteLine(s)} held ${s.heldBytes} of ${s.allocatedBytes}`)
      }
      assert.ok(sum <= 1 + 1e-9, `${entry.route}'s lines sum to ${sum}`)
    }
  })

  it('has /good\'s top sites in its chunk path, none in the buffering code', function () {
    const top = sitesOf(record, 'good').slice(0, 3)
    assert.equal(top.length, 3, JSON.stringify(top))
    for (const site of top) assert.match(site.file ?? '', CHUNK_PATH, siteLine(site))
  })
})

describe('which code holds the bytes of a run of /bad alone, its last window closed as the run ends', function () {
  this.timeout(240_000)
  let dataDir
  let lab

  before(async function startIt () {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-runs-sites-bad-'))
    lab = await startLab({ dataDir })
  })

  after(async function stopLab () {
    await lab?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('keeps the window the run ended in: /bad\'s parse among its top sites', async function () {
    const run = await runExperiment(lab.url, 'ingest', { route: 'bad', bytes: '50MB' })
    assert.equal(run.status, 'done', JSON.stringify(run.error))
    await lab.app.locals.runRecorder.settled()
    const record = await (await fetch(`${lab.url}/runs/${run.id}`)).json()
    const top = sitesOf(record, 'bad').slice(0, 3)
    assert.ok(top.some(function whole (s) { return s.file === 'lib/ingest/buffered.js' && s.functionName === 'parseWhole' }),
      `${record.timeline.siteWindows?.length} windows: ${top.map(siteLine).join(', ')}`)
    // the last window closed when the run ended, after the timer's last tick
    assert.ok(record.timeline.siteWindows.at(-1).time >= run.endedAt - 1000, `last window at ${record.timeline.siteWindows.at(-1).time}, run ended ${run.endedAt}`)
  })
})
