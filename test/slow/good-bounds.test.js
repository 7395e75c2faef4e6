/**
 * POST /good is bounded by construction: a record too dense to parse
 * within a thread's share is refused before JSON.parse runs, requests
 * queued for a pipeline give up when the queue is stuck (but keep their
 * turn while it moves), and clients that vanish while queued leave nothing
 * counted and no slot held.
 */
import assert from 'node:assert/strict'
import crypto from 'node:crypto'
import http from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import zlib from 'node:zlib'
import { labInTempDir, post, waitFor } from '../helpers.js'
import { createParsePool } from '../../lib/parse/pool.js'

const SMALL = zlib.gzipSync('{"items":[{"id":1},{"id":2},{"id":3}]}')

/** Start a /good upload and keep it open: headers and the first bytes only. */
function holdOpen (port, body = SMALL) {
  const req = http.request({ port, host: '127.0.0.1', path: '/good', method: 'POST', headers: { 'content-type': 'application/gzip', 'content-length': body.length } })
  const answer = new Promise(function read (resolve) {
    req.on('response', function collect (res) {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', function keep (c) { text += c })
      res.on('end', function done () { resolve({ status: res.statusCode, headers: res.headers, body: JSON.parse(text) }) })
    })
    req.on('error', function gone () { resolve(null) })
  })
  req.write(body.subarray(0, 4))
  return {
    answer,
    finish: function finish () { req.end(body.subarray(4)) },
    /** Send the rest `size` bytes at a time, one slice every `everyMs`, then end. */
    trickle: async function trickle (size, everyMs) {
      for (let at = 4; at < body.length; at += size) {
        if (req.destroyed) return
        req.write(body.subarray(at, at + size))
        await sleep(everyMs)
      }
      req.end()
    },
    vanish: function vanish () { req.destroy() }
  }
}

/** Requests the lab has started and not ended, from its own event bus. */
function countInFlight (events) {
  const open = new Set()
  events.on('request', function track (event) {
    if (event.phase === 'start') open.add(event.id)
    else if (event.phase === 'end') open.delete(event.id)
  })
  return open
}

describe('POST /good: records too dense to parse', function () {
  const lab = labInTempDir('good-dense')

  for (const [shape, unit] of [['tiny objects', '{}'], ['tiny arrays', '[3]'], ['numbers', '0.9'], ['nested arrays', '[[[[1]]]]']]) {
    it(`answers 413 record.too.dense to one record of ${shape} past the parse cost, and keeps serving`, async function () {
      const record = '[' + Array(Math.ceil(3.5 * 1024 * 1024 / (unit.length + 1))).fill(unit).join(',') + ']'
      const res = await post(`${lab.url}/good`, zlib.gzipSync(`{"items":[{"id":1},${record}]}`))
      assert.equal(res.status, 413)
      assert.equal(res.body.error.type, 'record.too.dense')
      assert.ok(res.body.error.projected > res.body.error.limit)
      // the offset of the batch the record was parsed in: the record's own, or the first of its batch
      assert.ok([10, 19].includes(res.body.error.offset), `offset ${res.body.error.offset}`)
      assert.equal((await post(`${lab.url}/good`, SMALL)).status, 200)
    })
  }

  it('parses as many dense records as a body holds, each within the cost', async function () {
    const records = Array(400).fill('[' + Array(5000).fill('{"k":3}').join(',') + ']').join(',')
    const res = await post(`${lab.url}/good`, zlib.gzipSync(`{"items":[${records}]}`))
    assert.equal(res.status, 200)
    assert.equal(res.body.summary.items, 400)
    assert.equal(res.body.summary.numbers, 400 * 5000)
  })
})

describe('POST /good: queued requests', function () {
  const lab = labInTempDir('good-queue', { ingest: { activePipelines: 1, queueMs: 300 } })

  it('answers 503 server.busy with Retry-After to a request that waited past the deadline with no place coming free', async function () {
    const holder = holdOpen(lab.port)
    await waitFor(function streaming () { return lab.app.locals.ingest.snapshot().active === 1 })
    const res = await post(`${lab.url}/good`, SMALL)
    assert.equal(res.status, 503)
    assert.equal(res.body.error.type, 'server.busy')
    assert.equal(res.headers.get('retry-after'), '1')
    assert.ok(res.body.error.stuckMs >= 300 && res.body.error.waitedMs >= res.body.error.stuckMs, JSON.stringify(res.body.error))
    holder.finish()
    assert.equal((await holder.answer).status, 200)
    assert.equal((await post(`${lab.url}/good`, SMALL)).status, 200)
  })

  it('answers 503 server.busy to a request queued behind a body sent above the floor but nowhere near its end', async function () {
    // about 650 KB of gzip at about 20 KB/s: five times the 4 KB/s floor, some 30 s from its end,
    // past the sixty deadlines (18 s) a queue waits on a body ahead
    const items = Array.from({ length: 10000 }, function item (_, id) { return { id, s: crypto.randomBytes(50).toString('hex') } })
    const sender = holdOpen(lab.port, zlib.gzipSync(JSON.stringify({ items })))
    await waitFor(function streaming () { return lab.app.locals.ingest.snapshot().active === 1 })
    const sending = sender.trickle(2048, 100)
    const res = await post(`${lab.url}/good`, SMALL)
    assert.equal(res.status, 503, JSON.stringify(res.body))
    assert.equal(res.body.error.type, 'server.busy')
    sender.vanish()
    await sending
    await waitFor(function free () { return lab.app.locals.ingest.snapshot().active === 0 })
    assert.equal((await post(`${lab.url}/good`, SMALL)).status, 200)
  })

  it('forgets clients that vanish while queued: nothing stays counted, no slot stays held', async function () {
    const open = countInFlight(lab.app.locals.events)
    const holder = holdOpen(lab.port)
    await waitFor(function streaming () { return lab.app.locals.ingest.snapshot().active === 1 })
    const waiting = Array.from({ length: 12 }, function queue () { return holdOpen(lab.port) })
    await waitFor(function queued () { return lab.app.locals.ingest.snapshot().queued >= 1 })
    for (const client of waiting) client.vanish()
    holder.finish()
    assert.equal((await holder.answer).status, 200)
    assert.equal((await post(`${lab.url}/good`, SMALL)).status, 200)
    await waitFor(function settled () { return open.size === 0 && lab.app.locals.ingest.snapshot().queued === 0 && lab.app.locals.ingest.snapshot().active === 0 })
  })
})

describe('POST /good: a queue that moves', function () {
  const QUEUE_MS = 1500
  const lab = labInTempDir('good-queue-moving', { ingest: { activePipelines: 1, queueMs: QUEUE_MS } })

  function state () { return lab.app.locals.ingest.snapshot() }

  it('serves a request that waited longer than the deadline while places kept coming free', async function () {
    this.timeout(30000)
    const clients = [holdOpen(lab.port)]
    await waitFor(function streaming () { return state().active === 1 })
    // one at a time, so the queue's order is the order of `clients`
    for (let k = 1; k <= 3; k++) {
      clients.push(holdOpen(lab.port))
      await waitFor(function inLine () { return state().queued === k })
    }
    const queuedAt = performance.now()
    for (let k = 0; k < 3; k++) {
      // the place comes free every 0.4 deadlines: the queue moves, though the last one waits longer than a deadline
      await sleep(QUEUE_MS * 0.4)
      clients[k].finish()
      assert.equal((await clients[k].answer).status, 200)
      await waitFor(function nextServed () { return state().queued === 2 - k })
    }
    const waited = performance.now() - queuedAt
    assert.ok(waited > QUEUE_MS, `the last request waited ${Math.round(waited)} ms, more than the ${QUEUE_MS} ms deadline`)
    clients[3].finish()
    const last = await clients[3].answer
    assert.equal(last.status, 200, JSON.stringify(last.body))
    assert.equal(last.body.summary.items, 3)
  })

  it('keeps a request its turn while the pipeline ahead reads its body at a useful pace, however long it takes', async function () {
    this.timeout(30000)
    // about 130 KB of gzip that does not compress away: random hex
    const items = Array.from({ length: 2000 }, function item (_, id) { return { id, s: crypto.randomBytes(50).toString('hex') } })
    const body = zlib.gzipSync(JSON.stringify({ items }))
    const sender = holdOpen(lab.port, body)
    await waitFor(function streaming () { return state().active === 1 })
    const queued = holdOpen(lab.port)
    await waitFor(function inLine () { return state().queued === 1 })
    queued.finish()
    const queuedAt = performance.now()
    // 2 KiB every 40 ms: about 50 KB/s, far above the 4 KB/s floor, for longer than the deadline
    await sender.trickle(2048, 40)
    const first = await sender.answer
    assert.equal(first.status, 200, JSON.stringify(first.body))
    assert.equal(first.body.summary.items, 2000)
    const waited = performance.now() - queuedAt
    assert.ok(waited > QUEUE_MS, `the queued request waited ${Math.round(waited)} ms with no place coming free, more than the ${QUEUE_MS} ms deadline`)
    const last = await queued.answer
    assert.equal(last.status, 200, JSON.stringify(last.body))
  })
})

describe('the parse pool', function () {
  it('drops a queued batch whose request is gone, and still parses the rest', async function () {
    const pool = createParsePool(2)
    try {
      const gone = new AbortController()
      const bytes = function batch () { return new TextEncoder().encode('[{"id":1}]') }
      // fill both threads, queue one more, then abort it
      const busy = [pool.run({ kind: 'records', bytes: bytes() }), pool.run({ kind: 'records', bytes: bytes() })]
      const dropped = pool.run({ kind: 'records', bytes: bytes() }, { signal: gone.signal })
      gone.abort(new Error('client gone'))
      await assert.rejects(dropped, /client gone/)
      for (const answer of await Promise.all(busy)) assert.equal(answer.tally.items, 1)
      assert.equal(pool.queued, 0)
    } finally {
      await pool.destroy()
    }
  })
})
