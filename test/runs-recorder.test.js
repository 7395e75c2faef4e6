/**
 * The records the experiment engine keeps (lib/runs/recorder.js, store.js): one file per
 * finished run in <dataDir>/runs/, whatever became of the run, with the samples, request spans
 * and marks of its time; the last N kept; none written past the disk quota. On registries of
 * one module whose run the spec controls, as test/experiment-engine.test.js; a real run through
 * POST /experiments is test/slow/runs.test.js's.
 */
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { createEngine } from '../lib/experiments/engine.js'
import { createSampler } from '../lib/metrics/sampler.js'
import { createDiskQuota } from '../lib/limits/disk-quota.js'
import { createRunRecorder } from '../lib/runs/recorder.js'
import { readRunRecord } from '../lib/runs/format.js'
import { routesResult, site, sitesWindow } from './runs-helpers.js'
import { isEnd, watchRun } from './experiment-helpers.js'

const MiB = 1024 * 1024

describe('run records of the experiment engine', function () {
  let dataDir
  let sampler
  let closers

  beforeEach(function () {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-runs-'))
    sampler = createSampler({ interval: 20 })
    closers = []
  })

  afterEach(async function () {
    for (const close of closers) await close()
    sampler.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  /** An engine with a recorder on `dataDir`, and a registry of one module whose run the spec gives. */
  function recordingEngine (run, { keep = 50, diskQuota = null, sites = null } = {}) {
    const events = new EventEmitter()
    const recorder = createRunRecorder({ dir: path.join(dataDir, 'runs'), keep, sampler, events, sites, diskQuota, options: { parseThreads: 2 }, warn: function quiet () {} })
    closers.push(recorder.close)
    const registry = { fake: { name: 'fake', title: 'A <b>fake</b> run', description: 'a test double', params: [], normalizeParams: function freeze (raw) { return Object.freeze({ ...raw }) }, run } }
    const engine = createEngine({ options: {}, events, registry, recorder })
    return { engine, events, recorder }
  }

  /** Start a run, wait for its end and for its record to be written. */
  async function runOnce ({ engine, events, recorder }, params = {}) {
    const watch = watchRun(events, isEnd)
    const { id } = engine.start('fake', params, { baseUrl: 'http://127.0.0.1:1' })
    await watch.ended
    await recorder.settled()
    return id
  }

  function recordOf (id) {
    return readRunRecord(fs.readFileSync(path.join(dataDir, 'runs', `${id}.json`)), id)
  }

  it('writes one record per finished run to <dataDir>/runs/<id>.json: what ran, its result, samples, spans and marks', async function () {
    const lab = recordingEngine(async function busy (ctx) {
      const end = ctx.measure()
      ctx.progress({ done: 0, total: 1, stage: 'load', route: 'good' })
      lab.events.emit('request', { phase: 'start', id: 1, route: 'good', time: Date.now(), compressedBytes: 100 })
      const held = Buffer.alloc(8 * MiB, 1)
      await sleep(120)
      lab.events.emit('request', { phase: 'end', id: 1, route: 'good', time: Date.now(), status: 200, ms: 120, heldPeak: held.length, held: { read: held.length }, bounds: {} })
      ctx.progress({ done: 1, total: 1, stage: 'load', route: 'good' })
      end()
      return routesResult({ good: { peak: held.length, mbps: 10, p99: 120 } })
    })
    const events = []
    lab.events.on('run-record', function note (e) { events.push(e) })
    const id = await runOnce(lab, { route: 'good' })
    const record = recordOf(id)
    assert.equal(record.id, id)
    assert.deepEqual({ ...record.run, startedAt: 0, endedAt: 0 }, {
      experiment: 'fake', title: 'A <b>fake</b> run', params: { route: 'good' }, seed: null, routes: ['good'], status: 'done', startedAt: 0, endedAt: 0, source: 'engine'
    })
    assert.equal(record.where.options.parseThreads, 2)
    assert.equal(record.results.tables[0].rows[2].values.good, 8 * MiB)
    assert.ok(Number.isFinite(record.results.server.peakRss), 'the engine\'s server figures are in the results')
    assert.equal(record.timeline.interval, 20)
    assert.ok(record.timeline.samples.length >= 3, `${record.timeline.samples.length} samples over 120 ms at 20 ms`)
    for (const sample of record.timeline.samples) {
      assert.ok(sample.time >= record.run.startedAt && sample.time <= record.run.endedAt, 'samples of the run\'s time only')
    }
    assert.deepEqual(record.timeline.spans.map(function span (s) { return [s.route, s.status, s.heldPeak] }), [['good', 200, 8 * MiB]])
    // the engine's own resets before each measurement are the lab's: kept apart, not drawn as the user's
    assert.deepEqual(record.timeline.marks.map(function mark (m) { return [m.kind, m.label] }), [['lab-peak-reset', 'peak reset by the lab'], ['lab-peak-reset', 'peak reset by the lab'], ['stage', 'load /good']])
    assert.deepEqual(events.map(function event (e) { return [e.id, e.file, e.bytes > 0] }), [[id, `${id}.json`, true]])
  })

  it('keeps the bus\'s windows of sites, the one that closes as the run ends too', async function () {
    // as lib/metrics/alloc-sites.js does: the run's end closes a window, on the bus once settled() resolves
    let closing = null
    const sites = { settled: function settled () { return closing } }
    function windowOf (functionName) {
      return sitesWindow([site('buffer', 'routes/fake.js:1', functionName, 1, 1)], { at: Date.now() })
    }
    const lab = recordingEngine(async function sampled () {
      lab.events.emit('sites', windowOf('during'))
      return routesResult({ good: { peak: MiB, mbps: 10, p99: 120 } })
    }, { sites })
    lab.events.on('experiment', function closeLastWindow (e) {
      if (e.phase === 'result') closing = sleep(50).then(function sendLast () { lab.events.emit('sites', windowOf('last')) })
    })
    const record = recordOf(await runOnce(lab))
    assert.deepEqual(record.timeline.siteWindows.map(function named (w) { return w.sites[0].functionName }), ['during', 'last'])
    assert.equal(lab.events.listenerCount('sites'), 0, 'the recorder listens no more')
  })

  it('records a failed run with its error, and a cancelled one', async function () {
    const failing = recordingEngine(async function broken () { throw new Error('the module broke') })
    const failed = recordOf(await runOnce(failing))
    assert.equal(failed.run.status, 'failed')
    assert.equal(failed.results, null)
    assert.equal(failed.error.message, 'the module broke')

    const slow = recordingEngine(function waitForCancel (ctx) {
      return new Promise(function cancelled (resolve, reject) { ctx.signal.addEventListener('abort', function () { reject(ctx.signal.reason) }) })
    })
    const { id } = slow.engine.start('fake', {}, { baseUrl: 'http://127.0.0.1:1' })
    await slow.engine.cancel(id)
    await slow.recorder.settled()
    assert.equal(recordOf(id).run.status, 'cancelled')
  })

  it('keeps the last N runs, the newest', async function () {
    const lab = recordingEngine(async function quick () { return routesResult({ good: { peak: 1, mbps: 1, p99: 1 } }) }, { keep: 2 })
    const ids = []
    for (let k = 0; k < 3; k++) {
      ids.push(await runOnce(lab))
      // file times a few ms apart, so "newest" is not a tie
      await sleep(15)
    }
    const files = fs.readdirSync(path.join(dataDir, 'runs')).sort()
    assert.deepEqual(files, [`${ids[1]}.json`, `${ids[2]}.json`].sort())
    assert.deepEqual((await lab.recorder.store.list()).map(function id (r) { return r.id }), [ids[2], ids[1]])
  })

  it('writes nothing with keep 0', async function () {
    const lab = recordingEngine(async function quick () { return routesResult({ good: { peak: 1, mbps: 1, p99: 1 } }) }, { keep: 0 })
    await runOnce(lab)
    assert.equal(fs.existsSync(path.join(dataDir, 'runs')), false)
  })

  it('counts each record against the disk quota, and writes none past it: the run\'s result stands', async function () {
    const diskQuota = createDiskQuota({ dir: dataDir, quota: 64 * 1024 })
    const lab = recordingEngine(async function quick () { return routesResult({ good: { peak: 1, mbps: 1, p99: 1 } }) }, { diskQuota })
    const written = await runOnce(lab)
    const cost = diskQuota.snapshot().used
    assert.ok(cost >= fs.statSync(path.join(dataDir, 'runs', `${written}.json`)).size, `the record counts: ${cost} bytes used`)

    // the rest of the quota taken by a write in flight (an upload, say)
    const upload = await diskQuota.reserve(64 * 1024 - cost)
    closers.unshift(upload.release)
    const events = []
    lab.events.on('run-record', function note (e) { events.push(e) })
    const refused = await runOnce(lab)
    assert.equal(lab.engine.get(refused).status, 'done')
    assert.equal(fs.existsSync(path.join(dataDir, 'runs', `${refused}.json`)), false)
    assert.equal(events[0].error.type, 'disk.quota.exceeded')
    assert.deepEqual(fs.readdirSync(path.join(dataDir, 'runs')), [`${written}.json`], 'no temporary file left behind')
  })
})
