/**
 * Allocation sites in the metrics (docs/metrics.md, "Allocation sites"): a lab that samples
 * them names the lines that allocated /bad's Buffers in its `sites` events, on the bus, the
 * stream and in the JSON snapshot, with the parse threads beside the main thread; by default only while an
 * experiment runs or a stream asks, and never with `metrics.allocationSampling: 'off'`.
 * The windows are taken with `collect()` rather than waited for.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import { Buffer } from 'node:buffer'
import { createApp } from '../app.js'
import { startMetricsLab, until } from './metrics-helpers.js'
import { generatedGzip, getJson, post } from './helpers.js'

const MiB = 1024 * 1024
const GZIP = { 'content-type': 'application/json', 'content-encoding': 'gzip' }

/** An SSE stream whose `sample` and `sites` events are parsed as they come. */
function openSamples (url) {
  return new Promise(function connect (resolve, reject) {
    const req = http.get(url, { headers: { accept: 'text/event-stream' } }, function onResponse (res) {
      const stream = { status: res.statusCode, samples: [], sites: [], close: function closeStream () { req.destroy() } }
      let text = ''
      res.setEncoding('utf8')
      res.on('data', function readEvents (chunk) {
        text += chunk
        let end
        while ((end = text.indexOf('\n\n')) !== -1) {
          const block = text.slice(0, end)
          text = text.slice(end + 2)
          const data = /^data: (.*)$/m.exec(block)
          if (/^event: sample$/m.test(block) && data) stream.samples.push(JSON.parse(data[1]))
          if (/^event: sites$/m.test(block) && data) stream.sites.push(JSON.parse(data[1]))
        }
      })
      res.on('error', function ignoreAfterClose () {})
      resolve(stream)
    })
    req.on('error', reject)
  })
}

describe('allocation sites in the metrics', function () {
  describe('with metrics.allocationSampling: always', function () {
    let lab
    let body
    before(async function () {
      lab = await startMetricsLab(undefined, { metrics: { allocationSampling: 'always' }, parseThreads: 1 })
      body = await generatedGzip({ size: 40_000 })
    })
    after(async function () { await lab.close() })

    it('names the lines that allocated /bad\'s Buffers, marked main, in the JSON snapshot, beside the parse thread', async function () {
      const sites = lab.app.locals.allocationSites
      const unsubscribe = lab.app.locals.sampler.subscribe(1000, function ignoreSample () {})
      // every window closed from here on, the 2 s timer's too: it may close the one with /bad's bytes first
      const windows = []
      function onSites (window) { windows.push(window) }
      lab.app.locals.events.on('sites', onSites)
      try {
        assert.equal(sites.active, true)
        const answer = await post(`${lab.url}/bad`, body, GZIP)
        assert.equal(answer.status, 200, answer.text)
        const inflated = JSON.parse(answer.text).summary.inflatedBytes
        assert.ok(inflated > 4 * MiB, `${inflated}`)
        // the inflated body is one Buffer of its size at least: sampled for certain, in one window
        function holdsBody (w) { return w.totals.buffer.allocatedBytes >= inflated }
        for (let k = 0; k < 50 && !windows.some(holdsBody); k++) {
          await sites.collect()
          if (!windows.some(holdsBody)) await new Promise(function wait (resolve) { setTimeout(resolve, 100) })
        }
        const window = windows.find(holdsBody)
        assert.ok(window, JSON.stringify(windows.map(function totals (w) { return w.totals })))
        const { body: snapshot } = await getJson(`${lab.url}/metrics?format=json`)
        const newest = snapshot.allocationSites
        assert.ok(newest && newest.at >= window.at && windows.some(function same (w) { return w.at === newest.at }), 'the snapshot carries the newest window')
        assert.equal(snapshot.sample.allocationSites, undefined, 'not in the sample too')
        assert.deepEqual(window.threads, ['main', 'parse thread 1'])
        assert.equal(window.intervalBytes, 2 * 1024 * 1024)
        const site = window.sites.find(function lab (s) { return s.kind === 'buffer' && s.thread === 'main' && s.file.startsWith('lib/ingest/') })
        assert.ok(site, JSON.stringify(window.sites, null, 1))
        assert.ok(Number.isInteger(site.line) && site.allocatedBytes > 0)
      } finally {
        lab.app.locals.events.off('sites', onSites)
        unsubscribe()
      }
      assert.equal(sites.active, false, 'nobody listens: nothing is sampled')
    })

    it('closes the window at the start of a new route\'s first request, at most once in 250 ms', async function () {
      const sites = lab.app.locals.allocationSites
      const events = lab.app.locals.events
      const unsubscribe = lab.app.locals.sampler.subscribe(1000, function ignoreSample () {})
      try {
        await sites.collect()
        events.emit('request', { phase: 'start', id: 'cut-1', route: 'bad', time: Date.now() })
        await new Promise(function wait (resolve) { setTimeout(resolve, 300) })
        const before = sites.latest
        events.emit('request', { phase: 'start', id: 'cut-2', route: 'bad', time: Date.now() })
        assert.equal(sites.latest, before, 'the same route: the window goes on')
        const start = Date.now() - 1
        events.emit('request', { phase: 'end', id: 'cut-1', route: 'bad', time: start })
        events.emit('request', { phase: 'start', id: 'cut-3', route: 'good', time: start })
        const cut = await until(function closed () { return sites.latest?.at === start && sites.latest }, 2000, 'the window closed at /good\'s start')
        assert.ok(cut.windowMs >= 250, `${cut.windowMs} ms`)
        // the request's own time, not when the spec got here, says how long after the last window it is
        events.emit('request', { phase: 'start', id: 'cut-4', route: 'express-json', time: start + 100 })
        await new Promise(function wait (resolve) { setTimeout(resolve, 50) })
        assert.equal(sites.latest, cut, 'within 250 ms of the last window: no other')
      } finally {
        unsubscribe()
        for (const id of ['cut-2', 'cut-3', 'cut-4']) events.emit('request', { phase: 'end', id, route: 'bad', time: Date.now() })
      }
    })

    it('sends each window to a stream once, as a sites event, and none in the samples', async function () {
      const stream = await openSamples(`${lab.url}/metrics?interval=50`)
      try {
        await until(function sampling () { return stream.samples.length > 0 }, 5000, 'a sample')
        const window = await lab.app.locals.allocationSites.collect()
        assert.ok(window)
        const sent = await until(function carried () { return stream.sites.find(function same (w) { return w.at === window.at }) }, 5000, 'the sites event')
        assert.deepEqual(sent, JSON.parse(JSON.stringify(window)))
        const after = stream.samples.length
        await until(function more () { return stream.samples.length > after + 2 }, 5000, 'more samples')
        assert.equal(stream.sites.filter(function same (w) { return w.at === window.at }).length, 1)
        assert.ok(stream.samples.every(function none (s) { return s.allocationSites === undefined }))
      } finally {
        stream.close()
      }
    })
  })

  describe('by default', function () {
    let lab
    before(async function () { lab = await startMetricsLab(undefined, { parseThreads: 1 }) })
    after(async function () { await lab.close() })

    it('samples while an experiment runs, or a stream asks, and not otherwise', async function () {
      const sites = lab.app.locals.allocationSites
      const alloc = Buffer.alloc
      const watching = await openSamples(`${lab.url}/metrics?interval=1000`)
      try {
        await until(function sampling () { return lab.app.locals.sampler.active }, 5000, 'the sampler sampling')
        assert.equal(sites.active, false)
        assert.equal(Buffer.alloc, alloc)
        lab.app.locals.events.emit('experiment', { id: 'run-1', name: 'ingest', phase: 'start', time: Date.now() })
        assert.equal(sites.active, true)
        assert.notEqual(Buffer.alloc, alloc)
        lab.app.locals.events.emit('experiment', { id: 'run-1', name: 'ingest', phase: 'result', time: Date.now(), result: {} })
        assert.equal(sites.active, false)
        assert.equal(Buffer.alloc, alloc)

        const asking = await openSamples(`${lab.url}/metrics?interval=1000&allocationSites=1`)
        await until(function asked () { return sites.active }, 5000, 'sites sampled for the stream that asks')
        asking.close()
        await until(function released () { return !sites.active }, 5000, 'sites no longer sampled')
        assert.equal(Buffer.alloc, alloc)
      } finally {
        watching.close()
      }
    })

    it('closes a run\'s last window as the run ends, on the bus once settled', async function () {
      const { events, allocationSites: sites } = lab.app.locals
      const seen = []
      function onSites (window) { seen.push(window) }
      const watching = await openSamples(`${lab.url}/metrics?interval=1000`)
      events.on('sites', onSites)
      try {
        await until(function sampling () { return lab.app.locals.sampler.active }, 5000, 'the sampler sampling')
        // a window still being collected (an earlier run's, behind a parse thread that was starting) would be this run's last
        await sites.settled()
        events.emit('experiment', { id: 'run-2', name: 'ingest', phase: 'start', time: Date.now() })
        const end = Date.now()
        events.emit('experiment', { id: 'run-2', name: 'ingest', phase: 'result', time: end, result: {} })
        assert.equal(sites.active, false)
        await sites.settled()
        assert.ok(seen.length > 0 && seen.at(-1).at >= end, JSON.stringify(seen.map(function at (w) { return [w.at - end, w.windowMs] })))
        assert.deepEqual(seen.at(-1).threads, ['main', 'parse thread 1'])
      } finally {
        events.off('sites', onSites)
        watching.close()
      }
    })

    it('answers 400 parameter.invalid to an allocationSites that is not 1 or 0', async function () {
      const { status, body } = await getJson(`${lab.url}/metrics?format=sse&allocationSites=yes`)
      assert.equal(status, 400)
      assert.equal(body.error.type, 'parameter.invalid')
      assert.match(body.error.message, /allocationSites/)
    })
  })

  it('never samples with metrics.allocationSampling: off, even when a stream asks', async function () {
    const lab = await startMetricsLab(undefined, { metrics: { allocationSampling: 'off' }, parseThreads: 1 })
    const stream = await openSamples(`${lab.url}/metrics?interval=50&allocationSites=1`)
    try {
      lab.app.locals.events.emit('experiment', { id: 'run-1', name: 'ingest', phase: 'start', time: Date.now() })
      await until(function sampled () { return stream.samples.length > 0 }, 5000, 'a sample')
      assert.equal(lab.app.locals.allocationSites.active, false)
      assert.deepEqual(stream.sites, [])
    } finally {
      stream.close()
      await lab.close()
    }
  })

  it('refuses an allocationSampling it does not know, naming the option', function () {
    assert.throws(function make () { createApp({ metrics: { allocationSampling: 'sometimes' } }) },
      function named (err) { return err instanceof TypeError && /metrics\.allocationSampling/.test(err.message) && /experiment, always, off/.test(err.message) })
  })
})
