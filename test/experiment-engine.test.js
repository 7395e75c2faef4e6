/**
 * The experiment engine (lib/experiments/engine.js) on registries of one
 * module whose run the spec controls: a failed run, the server's RSS in the
 * result, progress events, the runs it keeps, a module deaf to its signal,
 * a change of a run's live params, and a registry entry that is not an
 * experiment. /experiments over HTTP is
 * test/experiments.test.js's.
 */
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { createEngine } from '../lib/experiments/engine.js'
import { integerEntry, liveEntry, normalizeBySchema } from '../lib/experiments/params.js'
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

  describe('live params (PATCH /experiments/:id)', function () {
    const schema = [
      liveEntry(integerEntry('delayMs', { default: 5, min: 0, max: 1000, label: 'delay', help: '' })),
      integerEntry('bytes', { default: 10, max: 100, label: 'bytes', help: '' })
    ]
    function refusal (parameter) {
      return function names (err) { return err.status === 400 && err.type === 'parameter.invalid' && err.details.parameter === parameter }
    }
    function liveRegistry (run) {
      return { fake: { name: 'fake', title: 'Fake', description: 'a test double', params: schema, normalizeParams: function check (raw) { return Object.freeze(normalizeBySchema(schema, raw)) }, run } }
    }

    it('tells the run, which reads the new params from ctx.params', async function () {
      let release
      const told = []
      let seen = null
      const { engine, events } = engineWith(liveRegistry(async function listening (ctx) {
        ctx.onParams(function heard (params, changed) { told.push({ delayMs: params.delayMs, changed }) })
        await new Promise(function wait (resolve) { release = resolve })
        seen = ctx.params.delayMs
        return { cells: [{}] }
      }))
      const watch = watchRun(events, isEnd)
      const run = engine.start('fake', { delayMs: 5 }, { baseUrl: 'http://127.0.0.1:1' })
      const changed = engine.change(run.id, { delayMs: '50' })
      assert.equal(changed.params.delayMs, 50)
      assert.equal(changed.params.bytes, 10)
      release()
      await watch.ended
      assert.deepEqual(told, [{ delayMs: 50, changed: ['delayMs'] }])
      assert.equal(seen, 50)
      assert.throws(function changeEnded () { engine.change(run.id, { delayMs: 1 }) }, { type: 'experiment.not.running', status: 409 })
    })

    it('answers 400 naming the field for a param set at the start, a bad value, or nothing to change', async function () {
      let release
      const { engine, events } = engineWith(liveRegistry(async function waiting () {
        await new Promise(function wait (resolve) { release = resolve })
        return {}
      }))
      const watch = watchRun(events, isEnd)
      const run = engine.start('fake', {}, { baseUrl: 'http://127.0.0.1:1' })
      assert.throws(function notLive () { engine.change(run.id, { bytes: 20 }) }, refusal('params.bytes'))
      assert.throws(function outOfRange () { engine.change(run.id, { delayMs: 5000 }) }, refusal('params.delayMs'))
      assert.throws(function unknown () { engine.change(run.id, { other: 1 }) }, refusal('params.other'))
      assert.throws(function nothing () { engine.change(run.id, {}) }, refusal('params'))
      assert.equal(engine.get(run.id).params.delayMs, 5)
      release()
      await watch.ended
    })
  })

  it('refuses a registry entry that is not an experiment module', function () {
    assert.throws(function badRegistry () {
      createEngine({ options: {}, events: new EventEmitter(), registry: { x: { name: 'y' } } })
    }, TypeError)
  })
})
