/**
 * The backpressure experiment run through POST /experiments, a client process
 * and all: behind "pipeline" a slow consumer keeps the server's buffers at
 * their bounds and the pause reaches the client; behind "ignore" the
 * consumer's buffer grows until the cap stops it and the lab runs on; a
 * PATCH of the live params shows in later samples. Each asserts what must
 * hold whatever the machine's speed: bounds, upper limits a timer sets, and
 * queues that a body larger than every buffer must fill. The schema, the
 * stages in process and the /proc/net/tcp reader are test/backpressure.test.js's.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { BATCH_BYTES } from '../../experiments/backpressure/stages.js'
import { validateResult } from '../../lib/experiments/result-contract.js'
import { ensureInput } from '../../lib/measure/inputs.js'
import { procAvailable } from '../../lib/util/platform.js'
import { processAlive } from '../../lib/util/process-alive.js'
import { startLabProcess } from '../../lib/measure/lab-process.js'
import { call, isEnd, runExperiment, watchRun } from '../experiment-helpers.js'
import { generatedGzip, labInTempDir, post, waitFor } from '../helpers.js'

const BODY = '20MB'
/** Past its bound a stream holds one chunk or batch more at most (experiments/backpressure/result.js). */
const SLACK = 2 * BATCH_BYTES

function samplesOf (events) {
  return events.filter(function hasPipeline (e) { return e.phase === 'progress' && e.pipeline }).map(function pipeline (e) { return e.pipeline })
}

describe('backpressure experiment (runs)', function () {
  this.timeout(120_000)
  const lab = labInTempDir('backpressure-runs')

  it('behind "pipeline", a slow consumer keeps every buffer at its bound and the pause reaches the client', async function () {
    const watch = watchRun(lab.app.locals.events, isEnd)
    const run = await runExperiment(lab.url, 'backpressure', { bytes: BODY, delayMs: 20, seconds: 5 })
    const samples = samplesOf(await watch.ended)
    assert.equal(run.status, 'done', JSON.stringify(run.error))
    assert.deepEqual(validateResult(run.result), [])
    const cell = run.result.cells[0]
    // 20 MB at 20 ms a 64 KiB batch takes six seconds at the least: the time box ends it
    assert.equal(cell.stoppedBy, 'time')
    assert.ok(samples.length >= 8, `${samples.length} samples`)
    const stages = run.result.tables.find(function named (t) { return t.name === 'stages' })
    for (const column of stages.columns) {
      const bound = stages.rows.find(function row (r) { return r.field === 'bound' }).values[column.key]
      const peak = stages.rows.find(function row (r) { return r.field === 'peak' }).values[column.key]
      assert.ok(peak <= bound + SLACK, `${column.key} held ${peak} against its bound ${bound}`)
    }
    for (const s of samples) {
      // the server inflated no more than the consumer took and its streams hold
      const inflatedBounds = s.stages.slice(2).reduce(function sum (t, stage) { return t + stage.bound + SLACK }, 0)
      assert.ok(s.read.inflatedBytes - s.consumer.consumedBytes <= inflatedBounds, `at ${s.ms} ms: ${s.read.inflatedBytes} inflated, ${s.consumer.consumedBytes} consumed`)
      assert.ok(s.consumer.queuedBatches <= 3, `at ${s.ms} ms the consumer's queue held ${s.consumer.queuedBatches} batches`)
    }
    if (procAvailable()) {
      // the 4 MB of gzip cannot all fit the streams: it waits in the kernels and in the client
      // (where the kernel's queues cannot be read, most of the wait is in them, unseen)
      assert.ok(samples.some(function clientWaits (s) { return s.client?.waitingBytes > 0 || s.kernel.clientSendQueue > 0 }), 'the client had bytes waiting')
      assert.ok(samples.some(function queued (s) { return s.kernel.serverReceiveQueue > 0 }), 'the server\'s receive queue held bytes')
    } else {
      assert.ok(samples.every(function unread (s) { return s.kernel.source === null && s.kernel.serverReceiveQueue === null }))
    }
    // everywhere: the bytes the client sent waited unread in the kernels, more than one read of the socket
    assert.ok(samples.some(function unread (s) { return s.read.unreadBytes > s.stages[0].bound }), `at most ${Math.max(...samples.map(function unread (s) { return s.read.unreadBytes }))} bytes unread`)
    const judged = run.result.verdicts.filter(function judged (v) { return ['bounded', 'unbounded', 'reached the client', 'did not reach the client'].includes(v.verdict) })
    assert.deepEqual(judged.map(function verdict (v) { return [v.verdict, v.ok] }), [['bounded', true], ['reached the client', true]], JSON.stringify(judged))
  })

  it('behind "ignore", the consumer\'s buffer grows past every bound until the cap stops it, and the lab runs on', async function () {
    const cap = 4 * 1024 * 1024
    const watch = watchRun(lab.app.locals.events, isEnd)
    // a second a batch: the body fills the cap long before the consumer has taken four batches
    const run = await runExperiment(lab.url, 'backpressure', { bytes: BODY, mode: 'ignore', delayMs: 1000, cap, seconds: 60 })
    const samples = samplesOf(await watch.ended)
    assert.equal(run.status, 'done', JSON.stringify(run.error))
    const cell = run.result.cells[0]
    assert.equal(cell.stoppedBy, 'cap')
    assert.equal(run.result.answer.status, 413)
    assert.equal(run.result.stop.type, 'buffer.cap.exceeded')
    assert.ok(run.result.stop.held > cap)
    assert.ok(cell.peakHeldBytes > cap)
    assert.ok(cell.consumedBytes < 8 * BATCH_BYTES, `the consumer took ${cell.consumedBytes}`)
    assert.ok(samples.every(function sameMode (s) { return s.settings.mode === 'ignore' }))
    assert.deepEqual(run.result.verdicts.map(function verdict (v) { return [v.verdict, v.ok] }), [['grew', true], ['stopped', true]])
    // alive: the lab answers, and streams the next upload
    const body = await generatedGzip({ bytes: 100_000, format: 'ndjson' })
    const next = await post(`${lab.url}/backpressure/after-the-cap?delayMs=0`, body)
    assert.equal(next.status, 200, next.text)
  })

  it('applies a PATCH of the delay and the rate while it runs, and refuses one of a param set at the start', async function () {
    const events = lab.app.locals.events
    const watch = watchRun(events, isEnd)
    const firstSample = new Promise(function waitForSample (resolve) {
      events.on('experiment', function onProgress (e) {
        if (e.phase !== 'progress' || !e.pipeline) return
        events.off('experiment', onProgress)
        resolve(e)
      })
    })
    const started = await call(`${lab.url}/experiments`, 'POST', { name: 'backpressure', params: { bytes: BODY, delayMs: 10, seconds: 6 } })
    assert.equal(started.status, 202)
    const url = `${lab.url}/experiments/${started.body.id}`
    await firstSample
    const refused = await call(url, 'PATCH', { params: { highWaterMark: '1MiB' } })
    assert.equal(refused.status, 400)
    assert.equal(refused.body.error.parameter, 'params.highWaterMark')
    const changed = await call(url, 'PATCH', { params: { delayMs: 200, rate: '64KiB' } })
    assert.equal(changed.status, 200, JSON.stringify(changed.body))
    assert.equal(changed.body.params.delayMs, 200)
    const samples = samplesOf(await watch.ended)
    const from = samples.findIndex(function applied (s) { return s.settings.delayMs === 200 })
    assert.ok(from >= 0, 'a later sample shows the new delay')
    assert.ok(samples.slice(from).some(function paced (s) { return s.settings.rate === 65536 }), 'a later sample shows the client\'s new rate')
    const window = samples.slice(from)
    const first = window[0]
    const last = window.at(-1)
    const seconds = (last.ms - first.ms) / 1000
    assert.ok(seconds >= 1, `${seconds} s after the change`)
    // 200 ms a batch: no more than one batch each 200 ms (and the one under way) can have been taken
    const most = (seconds / 0.2 + 1) * (BATCH_BYTES + 32 * 1024)
    assert.ok(last.consumer.consumedBytes - first.consumer.consumedBytes <= most, `${last.consumer.consumedBytes - first.consumer.consumedBytes} bytes consumed in ${seconds} s`)
    const after = await call(url, 'PATCH', { params: { delayMs: 5 } })
    assert.equal(after.status, 409)
  })

  it('cancelled, leaves no client process and stops the upload on the server', async function () {
    const events = lab.app.locals.events
    const ends = []
    function onRequest (e) { if (e.route === 'backpressure' && e.phase === 'end') ends.push(e) }
    events.on('request', onRequest)
    try {
      const firstSample = new Promise(function waitForSample (resolve) {
        events.on('experiment', function onProgress (e) {
          if (e.phase !== 'progress' || !e.pipeline) return
          events.off('experiment', onProgress)
          resolve(e)
        })
      })
      const started = await call(`${lab.url}/experiments`, 'POST', { name: 'backpressure', params: { bytes: BODY, delayMs: 50, seconds: 60 } })
      await firstSample
      const url = `${lab.url}/experiments/${started.body.id}`
      const { pids } = (await call(url)).body
      assert.equal(pids.length, 1)
      const cancelled = await call(url, 'DELETE')
      assert.equal(cancelled.body.status, 'cancelled')
      await waitFor(function clientGone () { return !processAlive(pids[0]) }, 10_000)
      // at 50 ms a batch the body would take over a minute: only a stop ends it this soon
      await waitFor(function uploadEnded () { return ends.length === 1 }, 10_000)
      assert.equal(ends[0].errorType, 'request.aborted')
    } finally {
      events.off('request', onRequest)
    }
  })
})

/** A short run behind pipeline: what the measured run would otherwise pay for once. */
async function warmUp (url) {
  const run = await runExperiment(url, 'backpressure', { bytes: '20MB', mode: 'pipeline', delayMs: 0, seconds: 5 })
  assert.equal(run.status, 'done', JSON.stringify(run.error))
}

describe('backpressure experiment (runs) in a lab with little room', function () {
  this.timeout(120_000)
  const ROOM = 48 * 1024 * 1024
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-backpressure-room-'))
  const lab = { url: null }
  let started = null
  let limit = 0
  before(async function startLabWithRoom () {
    this.timeout(120_000)
    // the body made first, where the lab reads it: the generator's garbage is not the upload's
    await ensureInput({ bytes: 100_000_000, format: 'ndjson', dir: path.join(dataDir, 'bench') })
    // a lab process of its own, its budget its idle worker's RSS and the room: whatever this
    // suite's own process holds, the room is the lab's
    const env = { ...process.env, STREAMLAB_DATA_DIR: dataDir }
    // each warmed up by a short run first: a fresh process's first upload grows its code and heap
    // once, by tens of MiB (docs/backpressure.md), which is no room's
    const probe = await startLabProcess([], { env })
    let idle
    try {
      await warmUp(probe.url)
      idle = (await call(`${probe.url}/metrics?format=json`)).body.sample.rss
    } finally {
      await probe.stop()
    }
    limit = Math.ceil((idle + ROOM) / 0.9 / 1048576) * 1048576
    started = await startLabProcess(['--memory-limit', `${limit / 1048576}MiB`], { env })
    lab.url = started.url
    await warmUp(lab.url)
  })
  after(async function stopLab () {
    await started?.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('behind "ignore", the lab\'s memory budget stops the consumer\'s growth where the cap would not', async function () {
    // 100 MB arrive in seconds; at a second a batch the consumer takes a few MB of them
    const run = await runExperiment(lab.url, 'backpressure', { bytes: '100MB', mode: 'ignore', delayMs: 1000, cap: '1GiB', seconds: 60 })
    assert.equal(run.status, 'done', JSON.stringify(run.error))
    const cell = run.result.cells[0]
    assert.equal(cell.stoppedBy, 'budget', JSON.stringify(run.result.answer))
    assert.ok(['memory.budget.exceeded', 'memory.busy'].includes(run.result.stop.type), run.result.stop.type)
    assert.equal(run.result.answer.status, run.result.stop.status)
    // it grew into its reservation, past every bound, and was stopped within the room it had
    assert.ok(cell.peakHeldBytes > 4 * BATCH_BYTES, `held ${cell.peakHeldBytes}`)
    // within the room the run found (the budget, 0.9 of the limit, less the worker's RSS at its
    // start), give or take what that RSS moved while it ran: far from the 95 MiB the body would
    // have piled up unstopped
    const room = 0.9 * limit - run.result.server.idleRss
    assert.ok(cell.peakHeldBytes < room + 16 * 1024 * 1024, `held ${cell.peakHeldBytes} in a room of ${room}`)
    assert.equal((await call(`${lab.url}/experiments`)).status, 200)
  })
})
