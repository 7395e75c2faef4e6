/**
 * Which code holds a real run's bytes (docs/metrics.md, "Allocation sites"): an ingest run of
 * /bad then /good through POST /experiments, as the dashboard starts one, leaves a record whose
 * `timeline.sites` puts /bad's growth in its buffering code and /good's in its chunk path. The
 * figures are memory, sampled: the body is large enough that hundreds of samples make the top
 * site, and the share asked for is well below the one measured. The fast part is in
 * test/runs-sites.test.js.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { startLab } from '../helpers.js'
import { runExperiment } from '../experiment-helpers.js'
import { growthByRoute, siteLine } from '../../lib/runs/sites.js'

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

  it('has /bad\'s top site in its buffering code, holding at least half of /bad\'s growth', function () {
    const [top] = sitesOf(record, 'bad')
    const growth = growthByRoute(record).get('bad')
    assert.ok(top, 'a /bad site')
    // the string and the parsed document, held at the request's peak (measured: about two thirds)
    assert.deepEqual([top.file, top.functionName], ['lib/ingest/buffered.js', 'parseWhole'], sitesOf(record, 'bad').slice(0, 4).map(siteLine).join(', '))
    assert.equal(top.kind, 'heap')
    assert.equal(growth.from, 'requests')
    assert.ok(top.heldBytes >= 0.5 * growth.bytes, `${top.heldBytes} B held of ${growth.bytes} B`)
  })

  it('has /good\'s top sites in its chunk path, none in the buffering code', function () {
    const top = sitesOf(record, 'good').slice(0, 3)
    assert.equal(top.length, 3, JSON.stringify(top))
    for (const site of top) assert.match(site.file ?? '', CHUNK_PATH, siteLine(site))
  })
})
