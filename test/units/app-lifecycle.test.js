/**
 * One lifecycle (whoever starts it closes it): an app keeps what it holds to itself, and
 * `app.close()` stops everything it started. Two apps in one process do not
 * see each other's requests; an app that served /good (its parse threads at
 * work) and /metrics (its sampler and a stream) leaves no handle, timer or
 * thread behind once closed; close() can be called twice; a closed app
 * answers 503 server.closing.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import zlib from 'node:zlib'
import { startLab, post } from '../helpers.js'
import { createApp } from '../../app.js'

/** A body that inflates past ingest.inlineParse (64 KiB), so its batches go to the parse threads. */
const BODY = zlib.gzipSync(JSON.stringify({
  items: Array.from({ length: 5000 }, function item (_, i) { return { id: i, name: `item ${i}`, values: [i, i / 3, -i] } })
}))

async function waitFor (condition, ms = 20000) {
  const until = Date.now() + ms
  while (!condition()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${condition.name}`)
    await new Promise(function later (resolve) { setTimeout(resolve, 20) })
  }
}

/** Active resources by type (timers, sockets, file requests ...), as Node counts them. */
function resourcesByType () {
  const counts = {}
  for (const type of process.getActiveResourcesInfo()) counts[type] = (counts[type] ?? 0) + 1
  return counts
}

/** Threads of this process, from /proc (null where there is none). */
function threadCount () {
  try {
    return Number(/^Threads:\s+(\d+)/m.exec(fs.readFileSync('/proc/self/status', 'latin1'))[1])
  } catch {
    return null
  }
}

/** Types of which there are more now than in `before`, with both counts. */
function grown (before, after) {
  const out = {}
  for (const [type, count] of Object.entries(after)) {
    if (count > (before[type] ?? 0)) out[type] = `${before[type] ?? 0} -> ${count}`
  }
  return out
}

/** A /good upload whose last bytes are held back until `finish()`: its request streams meanwhile. */
function heldUpload (port, body) {
  const req = http.request({
    host: '127.0.0.1', port, path: '/good', method: 'POST', agent: false, headers: { 'content-type': 'application/gzip', 'content-length': body.length }
  })
  const answered = new Promise(function answer (resolve, reject) {
    req.on('response', function read (res) {
      const parts = []
      res.on('data', function keep (chunk) { parts.push(chunk) })
      res.on('end', function ended () { resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(parts).toString()) }) })
    })
    req.on('error', reject)
  })
  req.write(body.subarray(0, body.length - 10))
  return {
    answered,
    finish: function finish () { req.end(body.subarray(body.length - 10)) }
  }
}

/** Open a /metrics stream and read its first sample; the stream stays open (`stream.req`), its end resolves `stream.ended`. */
function openStream (url) {
  return new Promise(function stream (resolve, reject) {
    const req = http.get(`${url}/metrics?interval=50`, { headers: { accept: 'text/event-stream' } }, function read (res) {
      let text = ''
      const ended = new Promise(function whenEnded (done) { res.on('end', done); res.on('close', done) })
      res.setEncoding('utf8')
      res.on('data', function keep (chunk) {
        text += chunk
        if (/event: sample\n/.test(text)) resolve({ req, ended })
      })
    })
    req.on('error', reject)
  })
}

describe('the app lifecycle', function () {
  this.timeout(60000)

  describe('two apps in one process', function () {
    let one
    let two
    before(async function start () {
      one = await startLab()
      two = await startLab()
    })
    after(async function stop () {
      await one?.close()
      await two?.close()
    })

    it('keep their own parse threads and budgets', function () {
      const a = one.app.locals.ingest
      const b = two.app.locals.ingest
      assert.notEqual(a, b)
      assert.notEqual(a.pool, b.pool)
      assert.notEqual(a.budget, b.budget)
      assert.notEqual(a.pipelines.gate, b.pipelines.gate)
      assert.notEqual(a.largeRecordGate, b.largeRecordGate)
      assert.notEqual(one.app.locals.admission, two.app.locals.admission)
      assert.notEqual(one.app.locals.sampler, two.app.locals.sampler)
    })

    it('do not see each other\'s requests: a /good in flight on one is in its state and metrics only', async function () {
      const seenByTwo = []
      function recordTwo (event) { seenByTwo.push(event) }
      two.app.locals.events.on('request', recordTwo)
      try {
        const upload = heldUpload(one.port, BODY)
        await waitFor(function oneStreams () { return one.app.locals.ingest.snapshot().active === 1 })
        assert.equal(two.app.locals.ingest.snapshot().active, 0)
        assert.deepEqual(two.app.locals.ingest.snapshot(), { active: 0, queued: 0, budgetUsed: 0, waiting: 0, gathering: 0 })
        const metricsOne = await (await fetch(`${one.url}/metrics`, { headers: { accept: 'application/json' } })).json()
        const metricsTwo = await (await fetch(`${two.url}/metrics`, { headers: { accept: 'application/json' } })).json()
        assert.equal(metricsOne.requestsInFlight, 1)
        assert.equal(metricsTwo.requestsInFlight, 0)
        upload.finish()
        const answer = await upload.answered
        assert.equal(answer.status, 200)
        assert.equal(answer.body.summary.items, 5000)
        assert.deepEqual(seenByTwo, [])
        await waitFor(function oneIdle () { return one.app.locals.ingest.snapshot().active === 0 })
      } finally {
        two.app.locals.events.removeListener('request', recordTwo)
      }
    })

    it('close one and the other still answers, from threads of its own', async function () {
      const lab = await startLab()
      await lab.close()
      assert.equal(lab.app.locals.ingest.pool.threads.size, 0)
      const answer = await post(`${one.url}/good`, BODY)
      assert.equal(answer.status, 200, answer.text)
      assert.equal(one.app.locals.ingest.pool.threads.size, one.app.locals.options.parseThreads)
    })
  })

  describe('close()', function () {
    /**
     * Start a lab, have it serve /good (parse threads at work) and /metrics (a snapshot, and a
     * stream still open: sampler timers running), then close the app while the server still
     * listens, and the server after it.
     */
    async function serveAndClose () {
      const lab = await startLab()
      const good = await post(`${lab.url}/good`, BODY)
      assert.equal(good.status, 200, good.text)
      const snapshot = await fetch(`${lab.url}/metrics`, { headers: { accept: 'application/json' } })
      assert.equal(snapshot.status, 200)
      await snapshot.arrayBuffer()
      const stream = await openStream(lab.url)
      assert.equal(lab.app.locals.sampler.active, true)
      await lab.app.close()
      // the app ended the stream itself and stopped sampling
      const gaveUp = new Promise(function wait (resolve) { setTimeout(resolve, 5000, 'still open').unref() })
      assert.notEqual(await Promise.race([stream.ended, gaveUp]), 'still open', 'close() ended the /metrics stream')
      assert.equal(lab.app.locals.sampler.active, false)
      await lab.close()
      return lab
    }

    it('leaves no handle, timer or thread of the app behind', async function () {
      // a first app warms up what the process keeps whatever happens (libuv's thread pool, zlib)
      await serveAndClose()
      const resourcesBefore = resourcesByType()
      const threadsBefore = threadCount()

      const lab = await serveAndClose()
      const ingest = lab.app.locals.ingest
      assert.equal(ingest.pool.closed, true)
      assert.equal(ingest.pool.threads.size, 0)
      assert.equal(lab.app.locals.sampler.active, false)
      assert.equal(lab.app.locals.admission.garbageTimer, null)
      // what is left settles within a moment: sockets closing, terminated threads joining
      let extra = {}
      await waitFor(function nothingLeft () {
        extra = grown(resourcesBefore, resourcesByType())
        return Object.keys(extra).length === 0 && (threadsBefore === null || threadCount() <= threadsBefore)
      }, 10000).catch(function say () {
        assert.fail(`left behind: ${JSON.stringify(extra)}, threads ${threadsBefore} -> ${threadCount()}`)
      })
    })

    it('can be called twice, and a closed app answers 503 server.closing', async function () {
      const lab = await startLab()
      try {
        const first = lab.app.close()
        assert.equal(lab.app.close(), first)
        await first
        await lab.app.close()
        const refused = await post(`${lab.url}/good`, BODY)
        assert.equal(refused.status, 503)
        assert.equal(refused.body.error.type, 'server.closing')
        assert.equal(refused.headers.get('retry-after'), '1')
        const metrics = await fetch(`${lab.url}/metrics`, { headers: { accept: 'application/json' } })
        assert.equal(metrics.status, 503)
        await metrics.arrayBuffer()
      } finally {
        await lab.close()
      }
    })

    it('stops the parts already started when createApp refuses an option part way', async function () {
      const threadsBefore = threadCount()
      if (threadsBefore === null) this.skip()
      // the database's options are checked after the parse threads started
      assert.throws(function build () { createApp({ database: { url: 42 } }) }, TypeError)
      await waitFor(function threadsGone () { return threadCount() <= threadsBefore }, 10000)
    })

    it('stops a pool whose batches are queued: they are refused, not left waiting', async function () {
      const lab = await startLab()
      const pool = lab.app.locals.ingest.pool
      const bytes = function batch () { return new TextEncoder().encode('[{"id":1}]') }
      // far more than the threads can finish while the lab closes, even on a busy machine
      const jobs = Promise.allSettled(Array.from({ length: 2000 }, function run () { return pool.run({ kind: 'records', bytes: bytes() }) }))
      await lab.close()
      const settled = await jobs
      assert.ok(settled.some(function refused (s) { return s.status === 'rejected' }), 'some queued batch was refused')
      await assert.rejects(pool.run({ kind: 'records', bytes: bytes() }), /parse pool closed/)
    })
  })
})
