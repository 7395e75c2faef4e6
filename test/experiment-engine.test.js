/**
 * The experiment engine (lib/experiments/engine.js) on registries of one
 * module whose run the spec controls: a failed run, the server's RSS in the
 * result, progress events, the runs it keeps, a module deaf to its signal,
 * and a registry entry that is not an experiment. /experiments over HTTP is
 * test/experiments.test.js's.
 */
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { createEngine } from '../lib/experiments/engine.js'
import { isEnd, watchRun } from './experiment-helpers.js'

describe('experiment engine', function () {
  /** A registry of one module whose run the spec controls. */
  function fakeRegistry (run, normalizeParams = function freeze (raw) { return Object.freeze({ ...raw }) }) {
    return { fake: { name: 'fake', title: 'Fake', description: 'a test double', params: [], normalizeParams, run } }
  }

  function engineWith (registry, settings = {}) {
    const events = new EventEmitter()
    const engine = createEngine({ options: {}, events, registry, ...settings })
    return { engine, events }
  }

  it('marks a run failed with the module\'s error, and is free again', async function () {
    const { engine, events } = engineWith(fakeRegistry(async function failing () {
      throw new Error('the module broke')
    }))
    const watch = watchRun(events, isEnd)
    const run = engine.start('fake', {}, { baseUrl: 'http://127.0.0.1:1' })
    const seen = await watch.ended
    assert.equal(seen.at(-1).phase, 'error')
    const state = engine.get(run.id)
    assert.equal(state.status, 'failed')
    assert.deepEqual(state.error, { status: 500, type: 'internal', message: 'the module broke' })
    assert.equal(engine.runningId(), null)
  })

  it('puts the server\'s idle and peak RSS into the result, and gives measure() windows', async function () {
    let window = null
    const { engine, events } = engineWith(fakeRegistry(async function measuring (ctx) {
      const end = ctx.measure()
      const held = Buffer.alloc(8 * 1024 * 1024, 1)
      window = end()
      return { held: held.length }
    }))
    const watch = watchRun(events, isEnd)
    const run = engine.start('fake', {}, { baseUrl: 'http://127.0.0.1:1' })
    await watch.ended
    const { result } = engine.get(run.id)
    assert.equal(result.held, 8 * 1024 * 1024)
    assert.ok(result.server.peakRss >= window.peakRss)
    assert.ok(result.server.idleRss > 0)
    if (window.peakReset) assert.ok(window.peakAboveIdle >= 0)
  })

  it('sends progress events at most every progressIntervalMs, and always the last', async function () {
    const { engine, events } = engineWith(fakeRegistry(async function chatty (ctx) {
      for (let done = 0; done <= 1000; done++) ctx.progress({ done, total: 1000 })
    }), { progressIntervalMs: 60_000 })
    const watch = watchRun(events, isEnd)
    engine.start('fake', {}, { baseUrl: 'http://127.0.0.1:1' })
    const progress = (await watch.ended).filter(function isProgress (e) { return e.phase === 'progress' })
    assert.deepEqual(progress.map(function done (e) { return e.done }), [0, 1000])
  })

  it('keeps only the last `keep` runs', async function () {
    const { engine, events } = engineWith(fakeRegistry(async function quick () { return {} }), { keep: 2 })
    const ids = []
    for (let k = 0; k < 3; k++) {
      const watch = watchRun(events, isEnd)
      ids.push(engine.start('fake', {}, { baseUrl: 'http://127.0.0.1:1' }).id)
      await watch.ended
    }
    assert.deepEqual(engine.recent().map(function id (r) { return r.id }), [ids[2], ids[1]])
    assert.throws(function getOldest () { engine.get(ids[0]) }, { type: 'experiment.not.found', status: 404 })
  })

  it('gives up on a module deaf to its signal after cancelGraceMs', async function () {
    const { engine } = engineWith(fakeRegistry(function deaf () {
      return new Promise(function never () {})
    }), { cancelGraceMs: 50 })
    const run = engine.start('fake', {}, { baseUrl: 'http://127.0.0.1:1' })
    const state = await engine.cancel(run.id)
    assert.equal(state.status, 'cancelled')
    assert.equal(engine.runningId(), null)
    await assert.rejects(engine.cancel(run.id), { type: 'experiment.not.running', status: 409 })
  })

  it('refuses a registry entry that is not an experiment module', function () {
    assert.throws(function badRegistry () {
      createEngine({ options: {}, events: new EventEmitter(), registry: { x: { name: 'y' } } })
    }, TypeError)
  })
})
