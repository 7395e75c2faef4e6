/**
 * lib/metrics/stream.js without HTTP: the hub that frames samples and bus events once, keeps
 * them in a bounded history, replays after Last-Event-ID, drops samples (never events) for a
 * client whose socket pushes back, says what it dropped or lost, and lets go of everything it
 * took (bus listeners, sampler subscriptions, timers) when clients leave or it closes.
 */
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { LabError } from '../../lib/errors/index.js'
import { createMetricsHub } from '../../lib/metrics/stream.js'
import { FORWARDED_EVENTS } from '../../lib/metrics/hub-options.js'

/** A sampler the spec drives: `tick(interval, sample)` is a sample at that interval. */
function fakeSampler (interval = 100) {
  const subscribers = new Map()
  return {
    interval,
    subscribers,
    subscribe (every, listener) {
      assert.ok(!subscribers.has(every), `one subscription per interval (${every})`)
      subscribers.set(every, listener)
      return function unsubscribe () { subscribers.delete(every) }
    },
    snapshot () { return { time: 1, rss: 2 } },
    tick (every, sample) { subscribers.get(every)?.({ time: Date.now(), peakRss: 0, peakSource: 'VmHWM', ...sample }) }
  }
}

/** A response whose socket takes bytes while `accepting`, and says 'drain' when told. */
class FakeResponse extends EventEmitter {
  constructor () {
    super()
    this.chunks = []
    this.accepting = true
    this.headers = null
    this.ended = false
    this.destroyed = false
    this.writableLength = 0
  }

  writeHead (status, headers) { this.status = status; this.headers = headers }
  flushHeaders () {}
  write (chunk) { this.chunks.push(chunk); return this.accepting }
  end () { this.ended = true }
  destroy () { this.destroyed = true }
  drain () { this.accepting = true; this.emit('drain') }

  /** The SSE messages written, each as { id, event, data } (data parsed), comments and retry left out. */
  messages () {
    return this.chunks.join('').split('\n\n').filter(Boolean).flatMap(function parse (block) {
      const fields = {}
      for (const line of block.split('\n')) {
        const colon = line.indexOf(': ')
        if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 2)
      }
      if (fields.event === undefined) return []
      return [{ id: fields.id === undefined ? null : Number(fields.id), event: fields.event, data: JSON.parse(fields.data) }]
    })
  }
}

function setup (options = {}) {
  const events = new EventEmitter()
  const sampler = fakeSampler()
  const hub = createMetricsHub({ events, sampler, ...options })
  function connect (params) {
    const req = new EventEmitter()
    const res = new FakeResponse()
    const id = hub.attach(req, res, params)
    return { req, res, id }
  }
  return { events, sampler, hub, connect }
}

function events (res, name) {
  return res.messages().filter(function named (m) { return m.event === name })
}

describe('the metrics hub (lib/metrics/stream.js)', function () {
  it('answers an event stream, tells the client its retry delay first, and sends nothing old', function () {
    const { hub, events: bus, connect } = setup({ retryMs: 1234 })
    bus.emit('request', { phase: 'start', id: 'before' })
    const { res } = connect()
    assert.equal(res.status, 200)
    assert.equal(res.headers['Content-Type'], 'text/event-stream')
    assert.equal(res.headers['X-Accel-Buffering'], 'no')
    assert.equal(res.chunks[0], 'retry: 1234\n\n')
    assert.deepEqual(res.messages(), [], 'a client without Last-Event-ID starts live')
    hub.close()
  })

  it('forwards each bus event to every client, framed once with the next id', function () {
    const { hub, events: bus, connect } = setup()
    const a = connect()
    const b = connect()
    bus.emit('experiment', { id: 'x', status: 'running' })
    bus.emit('crash', { reason: 'memory-limit' })
    assert.deepEqual(a.res.messages(), [
      { id: 1, event: 'experiment', data: { id: 'x', status: 'running' } },
      { id: 2, event: 'crash', data: { reason: 'memory-limit' } }
    ])
    assert.equal(a.res.chunks.at(-1), b.res.chunks.at(-1), 'the same frame to both')
    assert.deepEqual(FORWARDED_EVENTS, ['request', 'experiment', 'peak', 'crash', 'run-record', 'sites'])
    hub.close()
  })

  it('opens a fresh stream with the last crash record, without an id, then goes on live', function () {
    const { hub, events: bus, sampler, connect } = setup()
    const crash = { reason: 'memory-limit', pid: 41, rss: 300, budget: 256, route: 'bad', time: 1000, restartMs: 250 }
    bus.emit('crash', crash)
    bus.emit('request', { phase: 'start', id: 'before' })
    const { res } = connect()
    assert.equal(res.chunks[0], 'retry: 2000\n\n')
    assert.deepEqual(res.messages(), [{ id: null, event: 'crash', data: crash }], 'the crash first, and nothing else of the history')
    sampler.tick(100, { rss: 5 })
    assert.deepEqual(res.messages().map(function shape (m) { return [m.id, m.event] }), [[null, 'crash'], [3, 'sample']])
    assert.equal(hub.snapshot().clients[0].sent, 2)
    hub.close()
  })

  it('sends no crash to a fresh stream of a worker that replaced none, nor ahead of a reconnecting client\'s replay', function () {
    const { hub, events: bus, connect } = setup()
    assert.deepEqual(connect().res.messages(), [])
    bus.emit('crash', { reason: 'exit', time: 1 })
    bus.emit('request', { phase: 'start', id: 'after' })
    assert.deepEqual(connect({ lastEventId: 1 }).res.messages().map(function shape (m) { return [m.id, m.event] }), [[2, 'request']])
    assert.deepEqual(connect({ lastEventId: 99 }).res.messages().map(function shape (m) { return [m.id, m.event] }), [[1, 'crash'], [2, 'request']],
      'an id from a process that died: the history, its crash event with its id')
    hub.close()
  })

  it('shows the last crash record and each experiment\'s latest result in the snapshot', function () {
    const { hub, events: bus } = setup()
    assert.deepEqual([hub.snapshot().lastCrash, hub.snapshot().lastResults], [null, []])
    bus.emit('restore', { results: [{ id: 'u', name: 'upload', params: null, time: 5, result: { tables: [] } }] })
    const crash = { reason: 'memory-limit', route: 'bad', time: 10 }
    bus.emit('crash', crash)
    bus.emit('experiment', { id: 'i', name: 'ingest', phase: 'start', time: 20, params: { route: 'both' } })
    bus.emit('experiment', { id: 'i', name: 'ingest', phase: 'result', time: 30, result: { verdicts: [] } })
    const snapshot = hub.snapshot()
    assert.deepEqual(snapshot.lastCrash, crash)
    assert.deepEqual(snapshot.lastResults, [
      { id: 'i', name: 'ingest', params: { route: 'both' }, time: 30, result: { verdicts: [] } },
      { id: 'u', name: 'upload', params: null, time: 5, result: { tables: [] } }
    ])
    hub.close()
  })

  it('sends a sample only to the clients of its interval, with one sampler subscription per interval', function () {
    const { hub, sampler, connect } = setup()
    const fast = connect({ interval: 10 })
    const slow = connect({ interval: 1000 })
    const fastToo = connect({ interval: 10 })
    assert.deepEqual([...sampler.subscribers.keys()].sort(), [10, 1000])
    sampler.tick(10, { rss: 1 })
    sampler.tick(1000, { rss: 2 })
    assert.deepEqual(events(fast.res, 'sample').map(function rss (m) { return m.data.rss }), [1])
    assert.deepEqual(events(fastToo.res, 'sample').map(function rss (m) { return m.data.rss }), [1])
    assert.deepEqual(events(slow.res, 'sample').map(function rss (m) { return m.data.rss }), [2])
    fast.req.emit('close')
    assert.ok(sampler.subscribers.has(10), 'still one client at 10 ms')
    fastToo.req.emit('close')
    assert.ok(!sampler.subscribers.has(10), 'the last client at 10 ms gone: no more sampling at 10 ms')
    hub.close()
  })

  it('replays what came after Last-Event-ID, and everything it holds for an id from a process that died', function () {
    const { hub, events: bus, connect } = setup()
    for (let k = 1; k <= 3; k++) bus.emit('request', { phase: 'start', id: `r${k}` })
    assert.deepEqual(connect({ lastEventId: 1 }).res.messages().map(function id (m) { return m.id }), [2, 3])
    assert.deepEqual(connect({ lastEventId: 3 }).res.messages(), [])
    assert.deepEqual(connect({ lastEventId: 999 }).res.messages().map(function id (m) { return m.id }), [1, 2, 3])
    hub.close()
  })

  it('drops samples for a congested client, keeps its events, and says how many it dropped on drain', function () {
    const { hub, events: bus, sampler, connect } = setup()
    const { res } = connect()
    sampler.tick(100, { rss: 1 })
    res.accepting = false
    sampler.tick(100, { rss: 2 }) // written, and the socket pushes back
    sampler.tick(100, { rss: 3 })
    bus.emit('request', { phase: 'start', id: 'kept' })
    sampler.tick(100, { rss: 4 })
    assert.equal(hub.dropped, 2)
    res.drain()
    assert.deepEqual(events(res, 'sample').map(function rss (m) { return m.data.rss }), [1, 2])
    assert.deepEqual(events(res, 'request').map(function id (m) { return m.data.id }), ['kept'])
    assert.deepEqual(events(res, 'dropped').map(function notice (m) { return m.data }), [{ count: 2, total: 2 }])
    assert.equal(hub.snapshot().clients[0].dropped, 2)
    hub.close()
  })

  it('tells a client that fell behind the history which ids it lost', function () {
    const { hub, events: bus, connect } = setup({ historySize: 3 })
    const { res } = connect()
    res.accepting = false
    bus.emit('request', { phase: 'start', id: 'a' }) // written, then pushed back
    for (const id of ['b', 'c', 'd', 'e']) bus.emit('request', { phase: 'start', id })
    res.drain()
    assert.deepEqual(events(res, 'gap').map(function lost (m) { return m.data }), [{ from: 2, to: 2 }])
    assert.deepEqual(events(res, 'request').map(function id (m) { return m.data.id }), ['a', 'c', 'd', 'e'])
    hub.close()
  })

  it('refuses the stream past maxClients with 503 server.busy and Retry-After, before writing a byte', function () {
    const { hub, connect } = setup({ maxClients: 1 })
    connect()
    const res = new FakeResponse()
    assert.throws(function tooMany () { hub.attach(new EventEmitter(), res) }, function busy (err) {
      assert.ok(err instanceof LabError)
      assert.deepEqual([err.status, err.type, err.headers['Retry-After']], [503, 'server.busy', '5'])
      return true
    })
    assert.equal(res.status, undefined)
    hub.close()
  })

  it('counts ingest and upload requests in flight from the bus', function () {
    const { hub, events: bus } = setup()
    bus.emit('request', { phase: 'start', id: 1 })
    bus.emit('request', { phase: 'start', id: 2 })
    bus.emit('request', { phase: 'end', id: 1 })
    assert.equal(hub.requestsInFlight, 1)
    assert.equal(hub.snapshot().requestsInFlight, 1)
    hub.close()
  })

  it('emits a peak event on the bus when a sample finds the kernel peak risen past peakStep', function () {
    const { hub, events: bus, sampler, connect } = setup({ peakStep: 100 })
    const peaks = []
    bus.on('peak', function record (data) { peaks.push(data) })
    const { res } = connect()
    sampler.tick(100, { peakRss: 1000 })
    sampler.tick(100, { peakRss: 1050 })
    sampler.tick(100, { peakRss: 1200 })
    assert.deepEqual(peaks.map(function figures (p) { return [p.reset, p.peakRss, p.previousPeakRss] }), [[false, 1200, 1000]])
    assert.equal(events(res, 'peak').length, 1, 'and its clients get it like any bus event')
    hub.close()
  })

  it('sends a bus payload it cannot serialise as an error, without throwing into the emitter', function () {
    const { hub, events: bus, connect } = setup()
    const { res } = connect()
    bus.emit('experiment', { big: 1n })
    assert.match(events(res, 'experiment')[0].data.error, /event not serialisable/)
    hub.close()
  })

  it('ends a client whose socket has not drained for stallMs', async function () {
    const { hub, events: bus, sampler, connect } = setup({ heartbeatMs: 10, stallMs: 10 })
    const { res } = connect()
    res.accepting = false
    bus.emit('request', { phase: 'start', id: 'x' })
    // a heartbeat every 10 ms looks; on a busy machine it may take a few
    for (let waited = 0; !res.destroyed && waited < 2000; waited += 10) await sleep(10)
    assert.ok(res.destroyed)
    assert.equal(hub.clientCount, 0)
    assert.equal(hub.snapshot().ended, 1)
    assert.equal(sampler.subscribers.size, 0)
    hub.close()
  })

  it('lets go of the bus, its clients and the sampler when it closes', function () {
    const { hub, events: bus, sampler, connect } = setup()
    const { req, res } = connect()
    hub.close()
    assert.ok(res.ended)
    assert.equal(hub.clientCount, 0)
    assert.equal(sampler.subscribers.size, 0)
    for (const name of [...FORWARDED_EVENTS, 'restore']) assert.equal(bus.listenerCount(name), 0, name)
    assert.equal(req.listenerCount('close'), 0)
    assert.equal(res.listenerCount('drain'), 0)
    assert.throws(function closed () { hub.attach(new EventEmitter(), new FakeResponse()) }, /closed/)
  })

  it('checks its options: TypeErrors for a missing bus or sampler and for out-of-range figures', function () {
    const events = new EventEmitter()
    assert.throws(function noBus () { createMetricsHub({ sampler: fakeSampler() }) }, /events must be an EventEmitter/)
    assert.throws(function noSampler () { createMetricsHub({ events }) }, /sampler must be a sampler/)
    assert.throws(function badSize () { createMetricsHub({ events, sampler: fakeSampler(), historySize: 0 }) },
      { name: 'TypeError', message: 'option historySize must be an integer from 1 to 1000000, got 0' })
    assert.throws(function badInterval () { setup().hub.attach(new EventEmitter(), new FakeResponse(), { interval: 5 }) }, TypeError)
  })
})
