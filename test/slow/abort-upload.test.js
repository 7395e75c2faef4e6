/**
 * The abort-upload experiment (experiments/abort-upload/): the run through the
 * engine and through POST /experiments, the result's shape as the dashboard and
 * the bench read it, the bench flags derived from the schema, and the CLI. Its
 * two routes, and what each leaves when a client aborts mid-body, are
 * test/abort-upload-routes.test.js's.
 *
 * What pipe() leaves is asserted as measured on Node 20 and 24 (Linux): one
 * descriptor and one file per aborted upload, still there after a GC and a
 * wait. pipeline() leaves nothing. How many bytes a left file holds depends on
 * how much the route had read when its client hung up: asserted exactly only
 * where the client waits for the server to have written them.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { EventEmitter } from 'node:events'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs, promisify } from 'node:util'
import { createEngine } from '../../lib/experiments/engine.js'
import { EXPERIMENTS } from '../../experiments/index.js'
import { DEFAULTS } from '../../lib/config/options.js'
import { processAlive } from '../../lib/util/process-alive.js'
import * as abortUpload from '../../experiments/abort-upload/index.js'
import * as bench from '../../experiments/abort-upload/bench.js'
import { demo, screenshot } from '../../experiments/abort-upload/figures.js'
import { optionsFromSchema, paramsFromFlags } from '../../lib/experiments/schema-options.js'
import { call } from '../experiment-helpers.js'
import { labInTempDir } from '../helpers.js'

const CLI = fileURLToPath(new URL('../../scripts/bench.js', import.meta.url))
const SMALL = Object.freeze({ uploads: 4, sweep: 'single', bytes: '64KB', abortAt: 50, waitSeconds: 1 })

/** What the dashboard's generic table and the bench's report read from a result. */
function assertResultShape (result) {
  assert.ok(Array.isArray(result.cells) && result.cells.length > 0, 'cells')
  for (const cell of result.cells) {
    for (const key of ['route', 'uploads', 'aborted', 'fdsLeft', 'fdsLeftLater', 'fdsOrphaned', 'filesLeft', 'leftBytes',
      'heapGrowthBytes', 'rssGrowthBytes', 'fdsClosedByCleanUp', 'cleanedUp', 'fdSource']) {
      assert.ok(Object.hasOwn(cell, key), `cell has ${key}`)
      assert.notEqual(typeof cell[key], 'object', `${key} is a scalar the table shows as a column`)
    }
    assert.ok(Number.isFinite(cell.server?.peakRss), 'the measurement window')
  }
  assert.ok(Array.isArray(result.charts) && result.charts.length === 3)
  for (const chart of result.charts) {
    assert.equal(typeof chart.title, 'string')
    assert.equal(typeof chart.x, 'string')
    assert.equal(typeof chart.y, 'string')
    for (const s of chart.series) {
      assert.equal(typeof s.label, 'string')
      for (const p of s.points) assert.ok(Number.isFinite(p.x) && (p.y === null || Number.isFinite(p.y)), JSON.stringify(p))
    }
  }
  for (const p of result.published) {
    assert.deepEqual(Object.keys(p).sort(), ['label', 'measured', 'source', 'unit', 'value'])
  }
  for (const v of result.verdicts) assert.ok(['leaks', 'clean'].includes(v.verdict) && typeof v.text === 'string')
  assert.ok(Number.isSafeInteger(result.input.bytes))
}

/** The truth measured on Node 20 and 24: pipe() leaves a descriptor and a file per aborted upload, for good; pipeline() nothing. */
function assertWhatEachLeaves (result, uploads) {
  const pipe = result.cells.find(function isPipe (c) { return c.route === 'pipe' })
  const pipeline = result.cells.find(function isPipeline (c) { return c.route === 'pipeline' })
  assert.equal(pipeline.aborted, uploads)
  assert.equal(pipeline.fdsLeft, 0)
  assert.equal(pipeline.fdsLeftLater, 0)
  assert.equal(pipeline.filesLeft, 0)
  assert.equal(pipeline.leftBytes, 0)
  assert.equal(pipe.aborted, uploads)
  assert.ok(pipe.fdsLeft >= uploads, `pipe() left ${pipe.fdsLeft} descriptors for ${uploads} aborted uploads`)
  assert.ok(pipe.fdsLeftLater >= uploads, `still ${pipe.fdsLeftLater} after a GC and the wait`)
  assert.ok(pipe.fdsOrphaned <= pipe.fdsLeftLater)
  assert.equal(pipe.filesLeft, uploads)
  // what a file holds depends on how much the route had read when its client hung up (under load, nothing)
  assert.ok(pipe.leftBytes >= 0 && pipe.leftBytes <= uploads * result.input.abortAtBytes, String(pipe.leftBytes))
  assert.ok(pipe.fdsClosedByCleanUp >= uploads)
  for (const cell of result.cells) assert.equal(cell.cleanedUp, true, `${cell.route}: nothing left after the clean-up`)
  assert.deepEqual(result.verdicts.map(function verdict (v) { return [v.route, v.verdict] }), [['pipe', 'leaks'], ['pipeline', 'clean']])
}

describe('the abort-upload experiment', function () {
  this.timeout(120_000)
  const lab = labInTempDir('abort-upload-experiment')

  afterEach(async function () {
    const { body } = await call(`${lab.url}/experiments`)
    if (body.running) await call(`${lab.url}/experiments/${body.running}`, 'DELETE')
  })

  it('is in the registry with its schema', async function () {
    assert.equal(EXPERIMENTS['abort-upload'], abortUpload)
    const listed = (await call(`${lab.url}/experiments`)).body.experiments.find(function mine (e) { return e.name === 'abort-upload' })
    assert.deepEqual(listed.params.map(function paramName (p) { return p.name }), ['route', 'uploads', 'sweep', 'bytes', 'abortAt', 'waitSeconds'])
  })

  it('runs through the engine: pipeline() leaves nothing, pipe() a descriptor and a file per aborted upload', async function () {
    const events = new EventEmitter()
    const engine = createEngine({ options: lab.app.locals.options, events, registry: { [abortUpload.name]: abortUpload } })
    const ended = new Promise(function waitForEnd (resolve) {
      events.on('experiment', function onEvent (e) { if (e.phase !== 'progress' && e.phase !== 'start') resolve(e) })
    })
    const progress = []
    events.on('experiment', function onProgress (e) { if (e.phase === 'progress') progress.push(e) })
    const started = engine.start('abort-upload', SMALL, { baseUrl: lab.url })
    const end = await ended
    const run = engine.get(started.id)
    assert.equal(end.phase, 'result', JSON.stringify(run.error))
    assertResultShape(run.result)
    assertWhatEachLeaves(run.result, SMALL.uploads)
    assert.ok(progress.some(function live (e) { return e.stage === 'load' && e.route === 'abort-upload/pipe' }), 'progress events while the uploads run')
    for (const pid of run.pids) assert.equal(processAlive(pid), false, `client process ${pid} is gone`)
    const after = (await call(`${lab.url}/abort-upload`)).body
    assert.equal(after.fds.open, 0)
    assert.equal(after.files, 0)
  })

  it('runs through POST /experiments, and its figures read the result', async function () {
    const res = await call(`${lab.url}/experiments`, 'POST', { name: 'abort-upload', params: { ...SMALL, waitSeconds: 0 } })
    assert.equal(res.status, 202, JSON.stringify(res.body))
    let run
    for (;;) {
      await new Promise(function later (resolve) { setTimeout(resolve, 200) })
      run = (await call(`${lab.url}/experiments/${res.body.id}`)).body
      if (run.status !== 'running') break
    }
    assert.equal(run.status, 'done', JSON.stringify(run.error))
    assertResultShape(run.result)
    assertWhatEachLeaves(run.result, SMALL.uploads)
    assert.equal(run.result.server.peakRss > 0, true, 'the engine\'s whole-run figure')
    const lines = screenshot.figures(run)
    assert.ok(lines.some(function pipeLine (l) { return l.startsWith(`req.pipe(file), ${SMALL.uploads} aborted: `) }), lines.join('\n'))
    assert.match(demo.summary(run.result), /req\.pipe\(file\): 4 aborted uploads left 4 descriptors open/)
    const rows = demo.rows(run.result)
    assert.equal(rows.length, run.result.cells.length)
    for (const row of rows) assert.equal(row.length, demo.header.length)
  })

  it('answers 400 parameter.invalid naming the field, and bounds what a cell reserves on disk', async function () {
    for (const [params, parameter] of [[{ uploads: 0 }, 'params.uploads'], [{ abortAt: 100 }, 'params.abortAt'],
      [{ uploads: 500, bytes: '64MB' }, 'params.bytes'], [{ route: 'fetch' }, 'params.route']]) {
      const res = await call(`${lab.url}/experiments`, 'POST', { name: 'abort-upload', params })
      assert.equal(res.status, 400, JSON.stringify(params))
      assert.equal(res.body.error.parameter, parameter)
    }
  })

  it('cleans up what it left when cancelled mid-run', async function () {
    const res = await call(`${lab.url}/experiments`, 'POST', { name: 'abort-upload', params: { route: 'pipe', uploads: 20, sweep: 'single', bytes: '64KB', waitSeconds: 60 } })
    assert.equal(res.status, 202)
    const waiting = await new Promise(function untilWaiting (resolve) {
      const events = lab.app.locals.events
      events.on('experiment', function onProgress (e) {
        if (e.id === res.body.id && e.phase === 'progress' && e.stage === 'wait') {
          events.off('experiment', onProgress)
          resolve(e)
        }
      })
    })
    assert.match(waiting.cell, /^20 descriptors open, 20 files left/)
    const cancelled = await call(`${lab.url}/experiments/${res.body.id}`, 'DELETE')
    assert.equal(cancelled.body.status, 'cancelled')
    const after = (await call(`${lab.url}/abort-upload`)).body
    assert.equal(after.fds.open, 0)
    assert.equal(after.files, 0)
  })
})

describe('npm run bench -- abort-upload', function () {
  this.timeout(120_000)

  it('takes its flags from the experiment\'s schema, with no default of its own', function () {
    // each parameter's name in kebab case: `abortAt` -> `--abort-at`
    assert.deepEqual(Object.keys(bench.options), abortUpload.params.map(function kebab (p) { return p.name.replace(/[A-Z]/g, function dash (c) { return `-${c.toLowerCase()}` }) }))
    assert.deepEqual(Object.keys(bench.options), ['route', 'uploads', 'sweep', 'bytes', 'abort-at', 'wait-seconds'])
    for (const spec of Object.values(bench.options)) assert.deepEqual(spec, { type: 'string' })
    assert.deepEqual(optionsFromSchema(abortUpload.params), bench.options)
    const none = bench.normalize(parseArgs({ args: [], options: bench.options }).values)
    assert.deepEqual(none, abortUpload.normalizeParams({}, DEFAULTS), 'no flags: the experiment\'s defaults')
    const some = bench.normalize(parseArgs({ args: ['--abort-at', '25', '--bytes', '2MB'], options: bench.options }).values)
    assert.equal(some.abortAt, 25)
    assert.equal(some.bytes, 2_000_000)
    assert.throws(function outOfRange () { bench.normalize({ 'abort-at': '100' }) }, { name: 'TypeError', message: /^--abort-at 100: expected an integer from 0 to 99/ })
    assert.throws(function unknownRoute () { paramsFromFlags(abortUpload, { route: 'x' }, {}) }, /^TypeError: --route x: expected one of both, pipe, pipeline/)
    for (const flag of Object.keys(bench.options)) assert.ok(bench.usage.includes(`--${flag} `), flag)
    assert.match(bench.usage, /--uploads N +Aborted uploads \(highest\) \(default 100, 1 to 500\)/)
  })

  it('runs on a fresh lab and writes the table and the charts', async function () {
    const out = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'streamlab-abort-bench-'))
    try {
      const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'abort-upload', '--uploads', '3', '--sweep', 'single', '--bytes', '64KB',
        '--wait-seconds', '0', '--out', out])
      assert.match(stdout, /\| req\.pipe\(file\) +\| 3 +\| 3 +\| [3-9]/)
      assert.match(stdout, /LEAKS: req\.pipe\(file\)/)
      assert.match(stdout, /clean: pipeline\(req, file\)/)
      const results = JSON.parse(await fs.promises.readFile(path.join(out, 'results.json'), 'utf8'))
      assert.equal(results.experiment, 'abort-upload')
      assertWhatEachLeaves(results, 3)
      const files = await fs.promises.readdir(out)
      for (const name of ['abort-upload-fds.svg', 'abort-upload-bytes.svg', 'abort-upload-heap.svg', 'report.html']) assert.ok(files.includes(name), name)
    } finally {
      await fs.promises.rm(out, { recursive: true, force: true })
    }
  })

  it('gives the screenshots a shot whose params the schema knows', function () {
    assert.equal(screenshot.name, 'abort-upload')
    assert.deepEqual(abortUpload.normalizeParams(screenshot.params, DEFAULTS).uploads, 100)
    for (const plan of Object.values(demo.plans)) abortUpload.normalizeParams(plan, DEFAULTS)
  })
})
