/**
 * Garbage collections as events (lib/metrics/gc-events.js), without the sampler's timers: a
 * forced full collection, after the turn of the loop that reports it, is an event with V8's
 * name for its kind, its duration, and the heap used before and after it; a window keeps at
 * most its cap and counts the rest, mark-compacts before scavenges. The events in the
 * sampler's samples: test/slow/metrics-sampler.test.js.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { setImmediate as turn } from 'node:timers/promises'
import { GC_EVENTS_PER_WINDOW, addEvent, watchGcEvents } from '../../lib/metrics/gc-events.js'
import { findCollector } from '../../lib/util/collect-garbage.js'

const MiB = 1024 * 1024
const collect = findCollector()

/** About 26 MiB of small arrays, held until the caller lets go. */
function allocate () {
  return Array.from({ length: 50_000 }, function row (_, i) { return new Array(64).fill(i) })
}

function event (kind, at) {
  return { at, kind, ms: 1, heapBefore: 2 * MiB, heapAfter: MiB }
}

describe('garbage collections as events', function () {
  let watcher = null
  before(function () {
    if (collect === null) this.skip()
  })
  afterEach(function () {
    watcher?.close()
    watcher = null
  })

  it('gives a forced mark-compact its kind, duration and the heap used before and after it', async function () {
    watcher = watchGcEvents()
    const window = watcher.openWindow()
    const held = { rows: allocate() }
    const from = Date.now()
    held.rows = null
    collect()
    const to = Date.now()
    // the observer hears of a collection on the loop's next turn
    await turn()
    const { gcEvents, gcEventsOmitted } = watcher.take(window)
    assert.equal(gcEventsOmitted, 0)
    const full = gcEvents.filter(function isFull (e) { return e.kind === 'mark-compact' && e.at >= from - 1 && e.at <= to + 1 })
    assert.ok(full.length >= 1, `no mark-compact between ${from} and ${to}: ${JSON.stringify(gcEvents)}`)
    const freed = full.find(function freedRows (e) { return e.heapBefore - e.heapAfter >= 16 * MiB })
    assert.ok(freed, `no mark-compact freed the 26 MiB let go: ${JSON.stringify(full)}`)
    assert.ok(freed.ms > 0)
    assert.ok(freed.heapAfter > 0)
    for (const e of gcEvents) {
      assert.deepEqual(Object.keys(e), ['at', 'kind', 'ms', 'heapBefore', 'heapAfter', 'cause'])
      // the spec's own collection, not a read of a heap profile: the run's
      assert.equal(e.cause, 'run')
      assert.ok(['scavenge', 'minor-mark-sweep', 'mark-compact', 'incremental-marking', 'weak-callbacks'].includes(e.kind), e.kind)
    }
  })

  it('hands each window the events since its last take, and another window the same ones', async function () {
    watcher = watchGcEvents()
    const one = watcher.openWindow()
    const two = watcher.openWindow()
    collect()
    await turn()
    const first = watcher.take(one).gcEvents
    assert.ok(first.some(function isFull (e) { return e.kind === 'mark-compact' }))
    assert.deepEqual(watcher.take(two).gcEvents, first)
    assert.ok(!watcher.take(one).gcEvents.some(function isFull (e) { return e.kind === 'mark-compact' }), 'taken twice')
  })

  it(`keeps at most its cap (${GC_EVENTS_PER_WINDOW} in a sample) and counts the rest`, async function () {
    watcher = watchGcEvents({ perWindow: 3 })
    const window = watcher.openWindow()
    for (let k = 0; k < 6; k++) collect()
    await turn()
    const { gcEvents, gcEventsOmitted } = watcher.take(window)
    assert.equal(gcEvents.length, 3)
    assert.ok(gcEventsOmitted >= 3, `${gcEventsOmitted} left out of 6 collections`)
  })

  it('makes room in a full window for a mark-compact by leaving out the latest scavenge', function () {
    const window = { events: [], omitted: 0 }
    for (let k = 0; k < 4; k++) addEvent(window, event('scavenge', k), 4)
    addEvent(window, event('mark-compact', 10), 4)
    assert.deepEqual(window.events.map(function at (e) { return e.at }), [0, 1, 2, 10])
    addEvent(window, event('scavenge', 11), 4)
    addEvent(window, event('incremental-marking', 12), 4)
    assert.deepEqual(window.events.map(function kind (e) { return e.kind }), ['scavenge', 'scavenge', 'mark-compact', 'incremental-marking'])
    for (const kind of ['mark-compact', 'mark-compact']) addEvent(window, event(kind, 13), 4)
    addEvent(window, event('mark-compact', 14), 4)
    assert.deepEqual(window.events.map(function kind (e) { return e.kind }), ['mark-compact', 'mark-compact', 'mark-compact', 'mark-compact'])
    assert.equal(window.omitted, 6)
  })

  it('is what docs/metrics.md says: its cap is the code\'s', function () {
    const page = fs.readFileSync(new URL('../../docs/metrics.md', import.meta.url), 'utf8').replace(/\s+/g, ' ')
    assert.ok(page.includes(`A sample keeps ${GC_EVENTS_PER_WINDOW}, mark-compacts first`))
  })

  it('throws a TypeError for a cap that is not a whole number', function () {
    assert.throws(function negative () { watchGcEvents({ perWindow: -1 }) }, TypeError)
    assert.throws(function fraction () { watchGcEvents({ perWindow: 2.5 }) }, TypeError)
  })
})
