/**
 * What the sites view and a record say of a route's lines, held to what the label says
 * (docs/metrics.md, "Allocation sites"): a share is a part of its route's sampled allocation, so a
 * route's lines never sum past 100 %; the lab's own code is never a route's line; a site holds only
 * what it allocated since its route began; the collections the lab forces by reading a heap profile
 * are marked as the lab's; the help text quotes the interval the lab samples at.
 */
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import fs from 'node:fs'
import v8 from 'node:v8'
import vm from 'node:vm'
import { createAllocationSampler } from '../lib/allocation/sampler.js'
import { SITE_SAMPLING_DEFAULTS, createSiteSampling } from '../lib/metrics/alloc-sites.js'
import { watchGcEvents } from '../lib/metrics/gc-events.js'
import { labCollector, labRead } from '../lib/util/lab-gc.js'
import { readRunRecord } from '../lib/runs/format.js'
import { readWindow } from '../lib/allocation/site.js'
import { createSiteSummary, isLabSite, siteShare, sitesHelp } from '../lib/runs/sites.js'
import { formatBytes } from '../lib/util/units.js'
import { makeSitesRecord, site } from './runs-helpers.js'

const MiB = 1024 * 1024

/** A window as the sampler gives it, of `sites`, its totals `totalMiB` of heap (null: none said). */
function windowOf (at, routes, sites, totalMiB = null) {
  const totals = { heap: totalMiB === null ? null : { allocatedBytes: totalMiB * MiB, heldBytes: 0, samples: 1 }, buffer: null, omitted: { count: 0, allocatedBytes: 0, heldBytes: 0 } }
  const window = readWindow({ at, intervalBytes: 2 * MiB, windowMs: 2000, threads: ['main'], sites, totals, heapErrors: {} }, at)
  window.routes = routes
  return window
}

function shareSum (entry) {
  return entry.sites.reduce(function add (sum, s) { return sum + siteShare(s, entry) }, 0)
}

describe('a route\'s lines (lib/runs/sites.js)', function () {
  const LAB_SITES = [
    site('buffer', 'lib/metrics/peak.js:40', 'readPeakRss', 30, 30),
    site('heap', 'experiments/backpressure/tcp-queues.js:12', 'readConnectionQueues', 25, 1),
    site('heap', 'experiments/backpressure/run.js:154', 'readUpload', 20, 1),
    site('heap', 'lib/parse/parse-thread.js:37', 'answerSites', 15, null, 'parse thread 1')
  ]

  it('lists the lab\'s measuring code apart, never among a route\'s lines, and keeps a route\'s own line of the same file', function () {
    const routeOwn = site('heap', 'lib/parse/parse-thread.js:80', 'parseTask', 10, null, 'parse thread 1')
    const backpressureStage = site('buffer', 'experiments/backpressure/stages.js:30', 'push', 5, 5)
    const summary = createSiteSummary()
    summary.add(windowOf(1, ['bad'], [...LAB_SITES, routeOwn, backpressureStage]))
    summary.add(windowOf(2, [], [LAB_SITES[0]]))
    const { routes, lab } = summary.toJSON()
    const lines = routes[0].sites.map(function line (s) { return s.functionName })
    assert.deepEqual(lines, ['parseTask', 'push'])
    assert.deepEqual(lab.sites.map(function line (s) { return s.functionName }), ['readPeakRss', 'readConnectionQueues', 'readUpload', 'answerSites'])
    assert.equal(lab.allocatedBytes, 120 * MiB, 'an idle window\'s lab sites are the lab\'s too')
    assert.equal(routes[0].allocatedBytes, 15 * MiB, 'the lab\'s bytes are not the route\'s')
    for (const s of LAB_SITES) assert.ok(isLabSite(s), s.functionName)
  })

  it('gives shares of /bad and /good that sum to at most 100 % whatever the windows say', function () {
    const summary = createSiteSummary()
    // totals that say less than the sites (a record the lab did not write), a lab site heavier than
    // the route, one site in both routes, and a window of both routes, which is neither's
    summary.add(windowOf(1, ['bad'], [site('heap', 'lib/ingest/buffered.js:120', 'parseWhole', 160, 160), site('buffer', 'node:zlib:600', 'processCallback', 90, 90), LAB_SITES[0]], 10))
    summary.add(windowOf(2, ['bad'], [site('buffer', 'node:zlib:600', 'processCallback', 40, 120)], 400))
    summary.add(windowOf(3, ['bad', 'good'], [site('buffer', 'node:zlib:600', 'processCallback', 500, 500)], 500))
    summary.add(windowOf(4, ['good'], [site('buffer', 'node:zlib:600', 'processCallback', 1, 23), site('heap', 'lib/json/records.js:200', 'flush', 0.5, 0.5), LAB_SITES[1]], 2))
    const { routes } = summary.toJSON()
    assert.deepEqual(routes.map(function route (r) { return r.route }), ['bad', 'good'])
    for (const entry of routes) {
      for (const s of entry.sites) assert.ok(siteShare(s, entry) <= 1, `${entry.route} ${s.functionName}: ${siteShare(s, entry)}`)
      assert.ok(shareSum(entry) <= 1 + 1e-12, `${entry.route}'s lines sum to ${shareSum(entry)}`)
    }
  })

  it('holds no more on a route\'s line than it allocated in the route\'s windows: what a shared window allocated is neither route\'s', function () {
    const summary = createSiteSummary()
    summary.add(windowOf(1, ['bad', 'good'], [site('buffer', 'lib/limits/request-guard.js:178', 'guard', 2, 2)], 2))
    summary.add(windowOf(2, ['good'], [site('buffer', 'lib/limits/request-guard.js:178', 'guard', 0.5, 2)], 1))
    summary.add(windowOf(3, ['good'], [site('buffer', 'lib/limits/request-guard.js:178', 'guard', 1, 1)], 1))
    const [good] = summary.toJSON().routes
    const [guard] = good.sites
    // window 2 held 2 MiB of which it allocated 0.5: the rest came from the shared window
    assert.deepEqual([guard.allocatedBytes, guard.heldBytes], [1.5 * MiB, 1 * MiB])
  })

  it('refuses a record whose route allocated less than its sites, naming the member', function () {
    const { record } = makeSitesRecord()
    record.timeline.sites.routes[0].allocatedBytes = 1
    assert.throws(function read () { readRunRecord(JSON.stringify(record), 'forged.json') }, /timeline\.sites\.routes\[0\]\.allocatedBytes is less than its sites allocated/)
  })

  it('holds at /good only what /good allocated: /bad\'s Buffers, still alive, are not /good\'s held', function () {
    const sampler = createAllocationSampler({ intervalBytes: 64 * 1024, heap: false })
    sampler.start()
    try {
      const kept = []
      const summary = createSiteSummary()
      function badAllocates () { for (let k = 0; k < 64; k++) kept.push(Buffer.alloc(256 * 1024)) }
      function goodAllocates () { for (let k = 0; k < 64; k++) Buffer.alloc(16 * 1024) }
      badAllocates()
      summary.add(Object.assign(readWindow(sampler.window({ epoch: true }), 1), { routes: ['bad'] }))
      goodAllocates()
      summary.add(Object.assign(readWindow(sampler.window({ epoch: true }), 2), { routes: ['good'] }))
      const good = summary.toJSON().routes.find(function named (r) { return r.route === 'good' })
      assert.ok(kept.length === 64)
      for (const s of good?.sites ?? []) assert.ok((s.heldBytes ?? 0) <= s.allocatedBytes, `${s.functionName}: held ${s.heldBytes} of ${s.allocatedBytes} allocated`)
      assert.ok(shareSum(good ?? { sites: [] }) <= 1 + 1e-12)
    } finally {
      sampler.stop()
    }
  })
})

describe('the collections the lab causes (lib/util/lab-gc.js, gc-events.js)', function () {
  /** Node hands a collection's entry to its observers after the collection, on the loop. */
  function settle () { return new Promise(function later (resolve) { setTimeout(resolve, 50) }) }

  it('marks the mark-compact of a heap-profile read as the lab\'s, and one the run makes as the run\'s', async function () {
    v8.setFlagsFromString('--expose-gc')
    const gc = vm.runInNewContext('gc')
    const watch = watchGcEvents()
    const window = watch.openWindow()
    const sampler = createAllocationSampler({ heap: 'held', buffers: false })
    sampler.start()
    try {
      labRead(function read () { return sampler.window() })
      await settle()
      const { gcEvents: lab } = watch.take(window)
      assert.ok(lab.some(function forced (e) { return e.kind === 'mark-compact' && e.cause === 'lab' }), JSON.stringify(lab))
      gc()
      await settle()
      const { gcEvents: run } = watch.take(window)
      const full = run.filter(function full (e) { return e.kind === 'mark-compact' })
      assert.ok(full.length > 0 && full.every(function runs (e) { return e.cause === 'run' }), JSON.stringify(run))
    } finally {
      sampler.stop()
      watch.close()
    }
  })

  it('collects young garbage with a scavenge when the memory budget\'s pacer asks for a minor one, and all of it when asked for a full one', async function () {
    const watch = watchGcEvents()
    const window = watch.openWindow()
    const collect = labCollector()
    try {
      await settle()
      watch.take(window)
      collect({ type: 'minor' })
      await settle()
      const minor = watch.take(window).gcEvents
      assert.ok(minor.some(function scavenge (e) { return e.kind === 'scavenge' && e.cause === 'lab' }), JSON.stringify(minor))
      assert.ok(!minor.some(function full (e) { return e.kind === 'mark-compact' && e.cause === 'lab' }), JSON.stringify(minor))
      collect()
      await settle()
      const full = watch.take(window).gcEvents
      assert.ok(full.some(function full (e) { return e.kind === 'mark-compact' && e.cause === 'lab' }), JSON.stringify(full))
    } finally {
      watch.close()
    }
  })
})

describe('the sites view\'s help text', function () {
  it('quotes the interval the lab samples at, from the code\'s constant through the windows, and no figure of its own', async function () {
    const events = new EventEmitter()
    const sampling = createSiteSampling({ events, mode: 'always' })
    sampling.resume()
    try {
      const window = await sampling.collect()
      const summary = createSiteSummary()
      summary.add(Object.assign(readWindow(window, Date.now()), { routes: [] }))
      assert.equal(summary.toJSON().intervalBytes, SITE_SAMPLING_DEFAULTS.intervalBytes)
      assert.ok(sitesHelp(summary.toJSON().intervalBytes).includes(`about every ${formatBytes(SITE_SAMPLING_DEFAULTS.intervalBytes)} allocated`))
    } finally {
      sampling.close()
    }
    const view = fs.readFileSync(new URL('../dashboard/sites-view.js', import.meta.url), 'utf8')
    assert.doesNotMatch(view, /\d+(\.\d+)? ?(KiB|MiB)/, 'the view writes no interval of its own')
  })
})
