/**
 * Each route of a run measured from its own start (lib/experiments/window.js): an ingest "Both"
 * run, where /good runs in the process /bad has just grown, and a module whose first window
 * leaves its garbage behind for the second. The engine's other specs are
 * test/experiment-engine.test.js's.
 */
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { createEngine } from '../../lib/experiments/engine.js'
import { findCollector } from '../../lib/util/collect-garbage.js'
import { labInTempDir } from '../helpers.js'
import { isEnd, runExperiment, watchRun } from '../experiment-helpers.js'

const MiB = 1024 * 1024

describe('each route measured from its own start', function () {
  describe('POST /experiments ingest, route "both"', function () {
    const lab = labInTempDir('experiment-windows')

    it('measures /good from a baseline of its own: an idle after a collection, and what its uploads held', async function () {
      this.timeout(120_000)
      const run = await runExperiment(lab.url, 'ingest', { route: 'both', bytes: '20MB' })
      assert.equal(run.status, 'done', JSON.stringify(run.error))
      const { bad, good } = run.result.routes
      const collects = findCollector() !== null
      for (const server of [bad.server, good.server]) {
        assert.equal(server.idleAfterCollection, collects)
        assert.equal(server.heldRequests, 1)
        if (server.peakReset) assert.equal(server.peakAboveIdle, Math.max(0, server.peakRss - server.idleRss))
      }
      // /bad holds the whole body inflated, /good a few batches: each from zero, whatever /bad left
      assert.ok(bad.server.heldPeak > 20e6, `/bad held ${bad.server.heldPeak} B`)
      assert.ok(good.server.heldPeak > 0 && good.server.heldPeak < bad.server.heldPeak / 4, `/good held ${good.server.heldPeak} B`)
      const row = run.result.tables[0].rows.find(function held (r) { return r.field === 'heldPeak' })
      assert.deepEqual(row.values, { bad: bad.server.heldPeak, good: good.server.heldPeak })
    })
  })

  describe('a module whose first window leaves garbage behind', function () {
    /** Window 1 makes 256 MiB of garbage and drops it; window 2 collects (as V8 would, any time), then holds 64 MiB. */
    function leavesGarbage (collect) {
      return async function twoWindows (ctx) {
        const first = ctx.measure()
        let garbage = []
        for (let k = 0; k < 256; k++) garbage.push(new Array(MiB / 8).fill(k + 0.5))
        const one = first()
        garbage = null
        await ctx.settle()
        const second = ctx.measure()
        collect()
        const held = Buffer.alloc(64 * MiB, 1)
        const two = second()
        return { one, two, held: held.length + (garbage?.length ?? 0) }
      }
    }

    it('gives the second window its own growth: not 0, and not less than what it held', async function () {
      this.timeout(60_000)
      const collect = findCollector()
      if (collect === null) this.skip()
      const events = new EventEmitter()
      const garbage = { name: 'garbage', title: 'Garbage', description: 'a test double', params: [], normalizeParams: Object.freeze }
      const registry = { garbage: { ...garbage, run: leavesGarbage(collect) } }
      const engine = createEngine({ options: {}, events, registry })
      const watch = watchRun(events, isEnd)
      const started = engine.start('garbage', {}, { baseUrl: 'http://127.0.0.1:1' })
      await watch.ended
      const { result } = engine.get(started.id)
      if (!result.two.peakReset) this.skip()
      assert.equal(result.two.idleAfterCollection, true)
      // 64 MiB held in the second window, less a margin for pages the process had free
      assert.ok(result.two.peakAboveIdle > 48 * MiB, `second window: ${(result.two.peakAboveIdle / MiB).toFixed(1)} MiB above its idle`)
      assert.ok(result.two.idleRss < result.one.peakRss - 128 * MiB, 'the second idle holds none of the first window\'s garbage')
    })
  })
})
