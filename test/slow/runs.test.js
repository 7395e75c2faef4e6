/**
 * A real run's record (lib/runs/, docs/runs.md): an ingest run of /bad then /good through
 * POST /experiments, as the dashboard starts one, leaves its record in <dataDir>/runs/ with the
 * figures the run reported and the timeline of its samples, spans and marks; a lab started
 * again on the same folder lists and serves it; and `npm run runs -- compare` reads it. The
 * fast part (the format, the recorder on a test double, the routes, compare) is in test/runs-*.test.js.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { startLab } from '../helpers.js'
import { runExperiment } from '../experiment-helpers.js'

const CLI = fileURLToPath(new URL('../../scripts/runs.js', import.meta.url))

describe('the record of a run through POST /experiments', function () {
  this.timeout(120_000)
  let dataDir
  let lab
  let run

  before(async function runIngest () {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-runs-slow-'))
    lab = await startLab({ dataDir })
    run = await runExperiment(lab.url, 'ingest', { route: 'both', bytes: '4MB', concurrency: 2 })
    await lab.app.locals.runRecorder.settled()
  })

  after(async function stopLab () {
    await lab?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('is in <dataDir>/runs/<id>.json with the results the run reported, peaks included', async function () {
    assert.equal(run.status, 'done', JSON.stringify(run.error))
    const record = await (await fetch(`${lab.url}/runs/${run.id}`)).json()
    assert.ok(fs.existsSync(path.join(dataDir, 'runs', `${run.id}.json`)))
    assert.deepEqual(record.results, run.result)
    assert.deepEqual(record.run.params, run.params)
    assert.deepEqual(record.run.routes, ['bad', 'good'])
    assert.equal(record.run.startedAt, run.startedAt)
    assert.equal(record.run.endedAt, run.endedAt)
  })

  it('has the timeline: samples of the run\'s time, a span per upload, a mark per measurement window', async function () {
    const { timeline } = await (await fetch(`${lab.url}/runs/${run.id}`)).json()
    assert.ok(timeline.samples.length >= 2, `${timeline.samples.length} samples`)
    assert.ok(timeline.samples.every(function inRun (s) { return s.time >= run.startedAt && s.time <= run.endedAt }))
    assert.ok(timeline.samples.every(function hasSpaces (s) { return Object.keys(s.heapSpaces).length > 0 }))
    // the two measured uploads per route: the warm-up is left out, as the live page leaves it out
    for (const route of ['bad', 'good']) {
      const spans = timeline.spans.filter(function ofRoute (s) { return s.route === route })
      assert.equal(spans.length, 2, route)
      assert.ok(spans.every(function ended (s) { return s.status === 200 && s.end >= s.start }), route)
      // /bad's stages set what they hold as they take it whole; /good's are read only when a sample lands in the upload
      if (route === 'bad') assert.ok(spans.every(function held (s) { return s.heldPeak > 0 }), JSON.stringify(spans))
    }
    const kinds = timeline.marks.map(function kind (m) { return m.kind })
    assert.equal(kinds.filter(function labReset (k) { return k === 'lab-peak-reset' }).length, 3, 'the run\'s own reset and one per route, the lab\'s')
    assert.equal(kinds.filter(function userReset (k) { return k === 'peak-reset' }).length, 0, 'no reset drawn as the user\'s')
    assert.deepEqual(timeline.marks.filter(function stage (m) { return m.kind === 'stage' }).map(function label (m) { return m.label }),
      ['input', 'bound', 'warm-up /bad', 'load /bad', 'warm-up /good', 'load /good'])
  })

  it('is listed and served by a lab started again on the same data directory', async function () {
    const before = await (await fetch(`${lab.url}/runs/${run.id}`)).json()
    await lab.close()
    lab = await startLab({ dataDir })
    const { runs } = await (await fetch(`${lab.url}/runs`)).json()
    assert.deepEqual(runs.filter(function ofTheLab (r) { return !r.lesson }).map(function id (r) { return r.id }), [run.id])
    assert.deepEqual(await (await fetch(`${lab.url}/runs/${run.id}`)).json(), before)
  })

  it('compares with itself in npm run runs: every ratio 1.00x, no rule holds', async function () {
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'compare', run.id, run.id, '--dir', path.join(dataDir, 'runs'), '--fail-if', '*.peak>+0%'])
    // a small body's peak can be 0.0 MiB above idle (pages reused): its ratio is then n/a, never another
    const peak = /^\| bad +\| peak above idle \| (.+?) +\| (.+?) +\| (1\.00x|n\/a) +\|/m.exec(stdout)
    assert.ok(peak !== null && peak[1] === peak[2], stdout)
    assert.match(stdout, /^\| good +\| latency p99 +\|.*\| 1\.00x \|/m)
    assert.match(stdout, /^pass \*\.peak>\+0% on good: \+0\.0%/m)
  })
})
