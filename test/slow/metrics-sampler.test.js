/**
 * The metrics sampler (lib/metrics/sampler.js) alone, on real timers: its
 * samples and what they hold, the event-loop delay and GC pauses of each
 * window, samples every interval and never more than the time allows, two
 * intervals at once, timers stopped when the last subscriber leaves, each collection as an
 * event (the events alone: test/units/gc-events.test.js).
 */
import assert from 'node:assert/strict'
import { setTimeout as delay } from 'node:timers/promises'
import { createSampler } from '../../lib/metrics/sampler.js'
import { findCollector } from '../../lib/util/collect-garbage.js'
import { procAvailable } from '../../lib/util/platform.js'
import { until } from '../metrics-helpers.js'

describe('the sampler', function () {
  const unsubscribes = []
  let sampler
  beforeEach(function () { sampler = createSampler() })
  afterEach(function () {
    for (const unsubscribe of unsubscribes.splice(0)) unsubscribe()
    sampler.close()
  })

  it('emits samples with memory, peak, event-loop and GC figures', async function () {
    const sample = await new Promise(function (resolve) {
      unsubscribes.push(sampler.subscribe(20, resolve))
    })
    for (const key of ['time', 'seq', 'rss', 'heapTotal', 'heapUsed', 'external', 'arrayBuffers', 'peakRss']) {
      assert.equal(typeof sample[key], 'number', key)
      assert.ok(Number.isFinite(sample[key]) && sample[key] >= 0, key)
    }
    assert.ok(Math.abs(sample.time - Date.now()) < 1000)
    assert.equal(sample.interval, 20)
    assert.ok(sample.rss > sample.heapUsed)
    assert.ok(sample.peakRss >= sample.rss)
    assert.equal(sample.peakSource, procAvailable() ? 'VmHWM' : 'sampled')
    assert.deepEqual(Object.keys(sample.eventLoop).sort(), ['max', 'p50', 'p99', 'utilization'])
    assert.ok(sample.eventLoop.utilization >= 0 && sample.eventLoop.utilization <= 1)
    assert.equal(typeof sample.gc.count, 'number')
    assert.equal(typeof sample.gc.pauseMs, 'number')
  })

  it('measures event-loop delay and GC pauses in the window since the last sample', async function () {
    const samples = []
    // windows several probe ticks long (the probe ticks every 50 ms)
    unsubscribes.push(sampler.subscribe(200, function (s) { samples.push(s) }))
    await delay(250)
    // block the loop for 450 ms, longer than two sampling windows, so some
    // tick falls due inside the block and comes at least 250 ms late
    const start = Date.now()
    let keep = []
    while (Date.now() - start < 450) {
      keep.push({ at: Date.now(), pad: 'x'.repeat(64) })
      if (keep.length > 50_000) keep = []
    }
    await delay(450)
    const blocked = samples.find(function (s) { return s.eventLoop.max !== null && s.eventLoop.max >= 100 })
    assert.ok(blocked, `no sample saw the 450 ms block: ${JSON.stringify(samples.map(function (s) { return s.eventLoop }))}`)
    assert.ok(samples.some(function (s) { return s.gc.count > 0 && s.gc.pauseMs > 0 }), 'no sample counted a GC pause')
  })

  it('hands the samples each collection as an event, a forced mark-compact with the heap it freed', async function () {
    const collect = findCollector()
    if (collect === null) this.skip()
    const samples = []
    unsubscribes.push(sampler.subscribe(20, function (s) { samples.push(s) }))
    await until(function one () { return samples.length >= 1 }, 15000, 'a sample')
    assert.ok(Array.isArray(samples[0].gcEvents))
    assert.equal(typeof samples[0].gcEventsOmitted, 'number')
    const held = { rows: Array.from({ length: 50_000 }, function row (_, i) { return new Array(64).fill(i) }) }
    const from = Date.now()
    held.rows = null
    collect()
    const seen = samples.length
    function freedRows (e) { return e.kind === 'mark-compact' && e.at >= from - 1 && e.heapBefore - e.heapAfter >= 16 * 1024 * 1024 }
    await until(function freed () { return samples.slice(seen).some(function holds (s) { return s.gcEvents.some(freedRows) }) }, 15000, 'the mark-compact in a sample')
    const sample = samples.slice(seen).find(function holds (s) { return s.gcEvents.some(freedRows) })
    assert.ok(sample.gc.count >= 1)
    assert.ok(sample.gcEvents.find(freedRows).at <= sample.time, 'an event comes after its collection')
  })

  // Timers fire late on a busy machine, never early: the specs wait for the samples they need
  // (no fixed sleep) and bound the count from above by the time that really passed.
  it('samples every interval: 10 samples at 50 ms, never more than the time allows', async function () {
    const samples = []
    const started = Date.now()
    unsubscribes.push(sampler.subscribe(50, function (s) { samples.push(s) }))
    await until(function tenSamples () { return samples.length >= 10 }, 15000, 'ten samples')
    const elapsed = Date.now() - started
    assert.ok(samples.length <= elapsed / 50 + 2, `${samples.length} samples in ${elapsed} ms`)
    for (let i = 1; i < samples.length; i++) assert.ok(samples[i].seq > samples[i - 1].seq)
  })

  it('serves two intervals at once and sampler.on("sample") at its default', async function () {
    const fast = []
    const slow = []
    const emitted = []
    function onSample (s) { emitted.push(s) }
    const started = Date.now()
    unsubscribes.push(sampler.subscribe(20, function (s) { fast.push(s) }))
    unsubscribes.push(sampler.subscribe(200, function (s) { slow.push(s) }))
    sampler.on('sample', onSample)
    assert.deepEqual(sampler.intervals, [20, 100, 200])
    await until(function enough () { return fast.length >= 10 && slow.length >= 2 && emitted.length >= 3 }, 15000, 'samples at every interval')
    sampler.off('sample', onSample)
    const elapsed = Date.now() - started
    assert.deepEqual(sampler.intervals, [20, 200])
    assert.ok(slow.length <= elapsed / 200 + 1, `slow: ${slow.length} in ${elapsed} ms`)
    assert.ok(emitted.length <= elapsed / 100 + 1, `emitted: ${emitted.length} in ${elapsed} ms`)
    assert.ok(fast.length > slow.length, `fast: ${fast.length}, slow: ${slow.length}`)
    assert.ok(slow.every(function (s) { return s.interval === 200 }))
  })

  it('stops its timers when the last subscriber leaves, and no sample arrives after', async function () {
    let count = 0
    const first = sampler.subscribe(10, function () { count++ })
    const second = sampler.subscribe(10, function () { count++ })
    await delay(60)
    first()
    assert.equal(sampler.active, true, 'one subscriber left')
    second()
    second()
    assert.equal(sampler.active, false)
    assert.deepEqual(sampler.intervals, [])
    const seen = count
    // every sample taken bumps seq, delivered or not: a leaked timer would too
    const seq = sampler.snapshot().seq
    await delay(80)
    assert.equal(count, seen)
    assert.equal(sampler.snapshot().seq, seq + 1, 'sampling went on after the last subscriber left')
  })

  it('stops everything on close(), and an unsubscribe after it is harmless', function () {
    const unsubscribe = sampler.subscribe(10, function () {})
    sampler.on('sample', function () {})
    sampler.close()
    assert.equal(sampler.active, false)
    assert.equal(sampler.listenerCount('sample'), 0)
    unsubscribe()
    const again = sampler.subscribe(10, function () {})
    unsubscribe()
    assert.equal(sampler.active, true, 'a stale unsubscribe must not end a new subscription')
    again()
    assert.equal(sampler.active, false)
  })

  it('answers snapshot() at any time, with null event-loop figures while idle', function () {
    const s = sampler.snapshot()
    assert.ok(s.rss > 0)
    assert.equal(s.interval, null)
    assert.deepEqual(s.eventLoop, { p50: null, p99: null, max: null, utilization: null })
    assert.equal(sampler.active, false, 'a snapshot starts nothing')
  })

  it('throws a TypeError for an interval outside 10 to 5000 ms', function () {
    for (const bad of [9, 5001, 12.5, '100', NaN]) {
      assert.throws(function () { sampler.subscribe(bad, function () {}) }, TypeError)
      assert.throws(function () { createSampler({ interval: bad }) }, TypeError)
    }
    assert.equal(sampler.active, false)
  })
})
