/**
 * The supervisor's rules without a process: which request a crash is put down
 * to and how it is told, the restart plan (at once for a crash a request
 * caused, else a backoff that doubles to a cap and starts again after a
 * worker stayed up), its options, and the crash record a reconnecting
 * dashboard gets replayed on GET /metrics. The supervisor at work (server.js,
 * real workers and bombs) is test/slow/supervisor.test.js's and
 * test/slow/supervisor-backoff.test.js's.
 */
import assert from 'node:assert/strict'
import { openEventStream } from '../lib/measure/event-stream.js'
import { defaultMemoryBudget } from '../lib/limits/memory-budget.js'
import { normalizeSupervisorOptions } from '../lib/supervisor/options.js'
import { describeCrash, likelyCulprit, planRestart } from '../lib/supervisor/crash-record.js'
import { startLab } from './helpers.js'

const MiB = 1024 * 1024

describe('GET /metrics after a restart', function () {
  let lab

  before(async function () {
    lab = await startLab()
  })
  after(async function () {
    await lab.close()
  })

  it('replays its whole history to a client whose Last-Event-ID is beyond any it issued, crash first; a client with no id gets the crash alone, then live events', async function () {
    const crash = { reason: 'memory-limit', pid: 1, rss: 300 * MiB, budget: 256 * MiB, route: 'bad', time: Date.now(), restartMs: 200 }
    lab.app.locals.events.emit('crash', crash)
    lab.app.locals.events.emit('peak', { time: Date.now(), reset: true, supported: true, peakRss: 1 })
    const fresh = await openEventStream(`${lab.url}/metrics?interval=1000`)
    const reconnected = await openEventStream(`${lab.url}/metrics?interval=1000`, { lastEventId: 987654 })
    const replayed = await reconnected.waitFor(function isCrash (e) { return e.event === 'crash' })
    await reconnected.waitFor(function isPeak (e) { return e.event === 'peak' })
    assert.deepEqual(replayed.data, crash)
    assert.equal(replayed.id, 1)
    // a live event after both connected: whatever the fresh client got before it is all it was replayed
    lab.app.locals.events.emit('peak', { time: Date.now(), reset: true, supported: true, peakRss: 2 })
    await fresh.waitFor(function isLivePeak (e) { return e.event === 'peak' && e.data.peakRss === 2 })
    const shapes = fresh.events.filter(function notSample (e) { return e.event !== 'sample' }).map(function shape (e) { return [e.event, e.id === null ? 'no id' : 'id', e.data.peakRss] })
    assert.deepEqual(shapes, [['crash', 'no id', undefined], ['peak', 'id', 2]], 'the crash record with no id, then live: the first peak is not replayed')
    assert.deepEqual(fresh.events[0].data, crash)
    fresh.close()
    reconnected.close()
  })
})

describe('the crash record', function () {
  it('puts a crash down to a buffering route in flight (/bad, then /upload-buffer), else to the latest request', function () {
    assert.equal(likelyCulprit({ good: 1, bad: 1 }, ['bad', 'good']), 'bad')
    assert.equal(likelyCulprit({ 'upload-buffer': 1, bad: 1 }, ['bad', 'upload-buffer']), 'bad')
    assert.equal(likelyCulprit({ 'upload-buffer': 2, 'upload-stream': 1, good: 1 }, ['upload-buffer', 'upload-buffer', 'upload-stream', 'good']), 'upload-buffer')
    assert.equal(likelyCulprit({ good: 1, 'upload-stream': 1 }, ['good', 'upload-stream']), 'upload-stream')
    assert.equal(likelyCulprit({}, []), null)
  })

  it('says which request was in flight, upload routes included', function () {
    const crash = { reason: 'memory-limit', pid: 12, rss: 300 * MiB, budget: 256 * MiB }
    assert.equal(describeCrash({ ...crash, route: 'upload-buffer' }),
      'worker 12 killed: RSS 300 MiB passed the 256 MiB budget while POST /upload-buffer was in flight')
    assert.equal(describeCrash({ ...crash, route: null }),
      'worker 12 killed: RSS 300 MiB passed the 256 MiB budget with no ingest or upload request in flight')
  })
})

describe('planRestart', function () {
  const options = { restartBackoffMs: 250, maxRestartBackoffMs: 10_000, restartWindowMs: 60_000 }
  const alone = { requestCaused: false, upMs: 100 }

  it('restarts the first crash with no request in flight at once, then waits 250 ms, doubling up to 10 s', function () {
    let streak = 0
    const delays = []
    for (let crash = 0; crash < 9; crash++) {
      const plan = planRestart(streak, alone, options)
      streak = plan.streak
      delays.push(plan.backoffMs)
    }
    assert.deepEqual(delays, [0, 250, 500, 1000, 2000, 4000, 8000, 10_000, 10_000])
    assert.equal(planRestart(5000, alone, options).backoffMs, 10_000, 'a long run stays at the cap')
  })

  it('restarts a crash a request caused at once, and neither counts it nor resets the count', function () {
    assert.deepEqual(planRestart(0, { requestCaused: true, upMs: 100 }, options), { streak: 0, backoffMs: 0 })
    assert.deepEqual(planRestart(4, { requestCaused: true, upMs: 100 }, options), { streak: 4, backoffMs: 0 })
    assert.deepEqual(planRestart(4, alone, options), { streak: 5, backoffMs: 2000 })
  })

  it('starts again from nothing after a worker that stayed up for the restart window, whatever killed it', function () {
    assert.deepEqual(planRestart(6, { requestCaused: false, upMs: 60_000 }, options), { streak: 1, backoffMs: 0 })
    assert.deepEqual(planRestart(6, { requestCaused: true, upMs: 61_000 }, options), { streak: 0, backoffMs: 0 })
    assert.deepEqual(planRestart(6, { requestCaused: false, upMs: 0 }, options), { streak: 7, backoffMs: 8000 }, 'never ready: no uptime')
  })
})

describe('normalizeSupervisorOptions', function () {
  it('takes the default budget from defaultMemoryBudget(): a quarter of the memory, at least 1 GiB', function () {
    assert.equal(normalizeSupervisorOptions().memoryLimit, defaultMemoryBudget())
    assert.ok(defaultMemoryBudget() >= 1024 * MiB)
  })

  it('refuses a backoff cap below the first delay, and no delay at all', function () {
    assert.throws(function capBelow () { normalizeSupervisorOptions({ restartBackoffMs: 500, maxRestartBackoffMs: 100 }) }, TypeError)
    assert.throws(function none () { normalizeSupervisorOptions({ restartBackoffMs: 0 }) }, TypeError, 'a worker dying at birth must not loop hot')
    const options = { restartBackoffMs: 100 }
    assert.equal(normalizeSupervisorOptions(options).maxRestartBackoffMs, 10_000)
    assert.deepEqual(options, { restartBackoffMs: 100 }, 'the caller\'s object is not changed')
  })
})
