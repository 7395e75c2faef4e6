/**
 * The sampler alone, then GET /metrics (SSE, JSON, Prometheus) and
 * POST /metrics/peak/reset on a real server.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import { once } from 'node:events'
import { setTimeout as delay } from 'node:timers/promises'
import { createApp } from '../lib/http/app.js'
import { createSampler } from '../lib/metrics/sampler.js'
import { procAvailable } from '../lib/util/platform.js'
import { post } from './helpers.js'

const SMALL_BODY = zlib.gzipSync(JSON.stringify({ items: [{ id: 1 }] }))
const GZIP = { 'content-type': 'application/gzip' }

/** Like helpers' startLab, but keeps the app (its bus and sampler) and can listen on a unix socket. */
async function startMetricsLab (listenOn = { port: 0, host: '127.0.0.1' }, options) {
  const app = createApp(options)
  const server = http.createServer(app)
  server.listen(listenOn)
  await once(server, 'listening')
  const address = server.address()
  return {
    app,
    server,
    url: typeof address === 'string' ? null : `http://127.0.0.1:${address.port}`,
    close: async function () {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
      await app.close()
    }
  }
}

/** Split SSE text into blocks: { id, event, data, retry, comments }. */
function parseBlocks (text) {
  return text.split('\n\n').filter(Boolean).map(function (block) {
    const out = { comments: [] }
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) out.comments.push(line.slice(1).trim())
      else {
        const at = line.indexOf(': ')
        const field = line.slice(0, at)
        const value = line.slice(at + 2)
        if (field === 'id' || field === 'retry') out[field] = Number(value)
        else if (field === 'data') out.data = JSON.parse(value)
        else out[field] = value
      }
    }
    return out
  })
}

/** An SSE client: the raw text, the parsed events, and a wait for one that matches. */
function openStream (url, headers = {}) {
  return new Promise(function (resolve, reject) {
    const req = http.get(url, { headers: { accept: 'text/event-stream', ...headers } }, function (res) {
      const stream = {
        res,
        text: '',
        get blocks () {
          const complete = stream.text.slice(0, stream.text.lastIndexOf('\n\n') + 2)
          return parseBlocks(complete)
        },
        get events () { return stream.blocks.filter(function (b) { return b.event !== undefined }) },
        waitFor: async function (match, ms = 5000) {
          const deadline = Date.now() + ms
          while (Date.now() < deadline) {
            const found = stream.events.find(match)
            if (found) return found
            await delay(20)
          }
          throw new Error(`no matching event within ${ms} ms; got:\n${stream.text.slice(-2000)}`)
        },
        close: function () { req.destroy() }
      }
      res.setEncoding('utf8')
      res.on('data', function (chunk) { stream.text += chunk })
      res.on('error', function () {})
      resolve(stream)
    })
    req.on('error', reject)
  })
}

async function getJson (url, headers = { accept: 'application/json' }) {
  const res = await fetch(url, { headers })
  return { status: res.status, headers: res.headers, body: await res.json() }
}

async function until (check, ms, what) {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    const value = await check()
    if (value) return value
    await delay(25)
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`)
}

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

describe('GET /metrics', function () {
  let lab
  const streams = []
  before(async function () { lab = await startMetricsLab() })
  afterEach(function () {
    for (const stream of streams.splice(0)) stream.close()
  })
  after(async function () { await lab.close() })

  async function stream (query = '', headers) {
    const s = await openStream(`${lab.url}/metrics${query}`, headers)
    streams.push(s)
    return s
  }

  it('answers SSE headers and frames: retry first, then id, event and data', async function () {
    const s = await stream('?interval=50')
    assert.equal(s.res.statusCode, 200)
    assert.equal(s.res.headers['content-type'], 'text/event-stream')
    assert.equal(s.res.headers['cache-control'], 'no-cache')
    assert.equal(s.res.headers.connection, 'keep-alive')
    assert.equal(s.res.headers['x-accel-buffering'], 'no')
    await s.waitFor(function (e) { return e.event === 'sample' })
    assert.ok(s.text.startsWith('retry: 2000\n\n'), s.text.slice(0, 100))
    assert.match(s.text, /\n\nid: \d+\nevent: sample\ndata: \{"time":\d+,.*\}\n\n/)
    const samples = s.events.filter(function (e) { return e.event === 'sample' })
    assert.equal(samples[0].data.interval, 50)
    assert.equal(typeof samples[0].data.rss, 'number')
  })

  it('streams request events while POST /good runs', async function () {
    const s = await stream('?interval=1000')
    const answer = await post(`${lab.url}/good`, SMALL_BODY, GZIP)
    assert.equal(answer.status, 200, answer.text)
    const start = await s.waitFor(function (e) { return e.event === 'request' && e.data.phase === 'start' && e.data.route === 'good' })
    const end = await s.waitFor(function (e) { return e.event === 'request' && e.data.phase === 'end' && e.data.id === start.data.id })
    assert.equal(end.data.status, 200)
    assert.equal(end.data.items, 1)
    assert.ok(end.id > start.id)
  })

  it('replays only the events after Last-Event-ID to a client that reconnects', async function () {
    const first = await stream('?interval=1000')
    await post(`${lab.url}/good`, SMALL_BODY, GZIP)
    const seen = await first.waitFor(function (e) { return e.event === 'request' && e.data.phase === 'end' })
    first.close()
    // while nobody is connected
    await post(`${lab.url}/bad`, SMALL_BODY, GZIP)

    const again = await stream('?interval=1000', { 'last-event-id': String(seen.id) })
    await again.waitFor(function (e) { return e.event === 'request' && e.data.route === 'bad' && e.data.phase === 'end' })
    const ids = again.events.map(function (e) { return e.id })
    assert.ok(ids.every(function (id) { return id > seen.id }), `replayed ${ids} after ${seen.id}`)
    assert.ok(again.events.some(function (e) { return e.event === 'request' && e.data.route === 'bad' && e.data.phase === 'start' }))

    const byQuery = await stream(`?interval=1000&lastEventId=${seen.id}`)
    await byQuery.waitFor(function (e) { return e.event === 'request' && e.data.route === 'bad' && e.data.phase === 'end' })
    assert.ok(byQuery.events.every(function (e) { return e.id > seen.id }))

    // a fresh client gets live events only
    const fresh = await stream('?interval=1000')
    await delay(100)
    assert.equal(fresh.events.filter(function (e) { return e.event === 'request' }).length, 0)
  })

  it('answers 400 parameter.invalid for an interval outside 10 to 5000 ms', async function () {
    for (const bad of ['9', '5001', 'fast', '1e3', '']) {
      const res = await getJson(`${lab.url}/metrics?interval=${bad}`, { accept: 'text/event-stream' })
      assert.equal(res.status, 400, bad)
      assert.equal(res.body.error.type, 'parameter.invalid')
      assert.equal(res.body.error.parameter, 'interval')
    }
    const format = await getJson(`${lab.url}/metrics?format=xml`)
    assert.equal(format.status, 400)
    assert.equal(format.body.error.parameter, 'format')
  })

  it('answers 406 for an Accept it cannot meet', async function () {
    const res = await getJson(`${lab.url}/metrics`, { accept: 'image/png' })
    assert.equal(res.status, 406)
    assert.equal(res.body.error.type, 'media.not.acceptable')
  })

  it('answers a JSON snapshot for Accept: application/json and ?format=json', async function () {
    const s = await stream('?interval=100')
    await s.waitFor(function (e) { return e.event === 'sample' })
    for (const headers of [{ accept: 'application/json' }, {}]) {
      const url = headers.accept ? `${lab.url}/metrics` : `${lab.url}/metrics?format=json`
      const res = await getJson(url, headers)
      assert.equal(res.status, 200)
      assert.match(res.headers.get('content-type'), /^application\/json/)
      const body = res.body
      assert.deepEqual(Object.keys(body).sort(), ['clients', 'disk', 'dropped', 'ended', 'history', 'lastCrash', 'lastResults', 'memoryBudget', 'requestsInFlight', 'sample'])
      assert.deepEqual([body.lastCrash, body.lastResults], [null, []], 'a lab that never crashed and ran nothing')
      assert.ok(body.sample.rss > 0)
      assert.ok(body.sample.eventLoop.utilization >= 0, 'the stream is sampling, so the snapshot has event-loop figures')
      assert.equal(body.requestsInFlight, 0)
      assert.equal(body.clients.length, 1)
      assert.equal(body.clients[0].interval, 100)
      assert.equal(typeof body.clients[0].bufferedBytes, 'number')
      assert.equal(body.dropped, 0)
      assert.ok(body.history.size > 0)
      assert.ok(body.history.newestId >= body.history.oldestId)
    }
  })

  it('answers Prometheus text with gauges and the ingest counters', async function () {
    await post(`${lab.url}/good`, SMALL_BODY, GZIP)
    await post(`${lab.url}/bad`, zlib.gzipSync('{'), GZIP)
    const accepts = [
      'text/plain; version=0.0.4',
      'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1',
      'text/plain; version=0.0.4'
    ]
    for (const accept of accepts) {
      const res = await fetch(`${lab.url}/metrics`, { headers: { accept } })
      assert.equal(res.status, 200)
      assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8')
      const lines = (await res.text()).split('\n')
      assert.ok(lines.includes('# TYPE streamlab_rss_bytes gauge'))
      const rss = lines.find(function (l) { return l.startsWith('streamlab_rss_bytes ') })
      assert.ok(Number(rss.split(' ')[1]) > 1024 * 1024, rss)
      assert.ok(lines.includes('# TYPE streamlab_ingest_requests_total counter'))
      assert.ok(lines.some(function (l) { return /^streamlab_ingest_requests_total\{route="good",status="200"\} [1-9]/.test(l) }))
      assert.ok(lines.some(function (l) { return /^streamlab_ingest_requests_total\{route="bad",status="422"\} [1-9]/.test(l) }))
      const source = procAvailable() ? 'VmHWM' : 'sampled'
      assert.ok(lines.some(function (l) { return new RegExp(`^streamlab_peak_rss_bytes\\{source="${source}"\\} \\d+`).test(l) }), source)
      assert.ok(lines.includes('# TYPE streamlab_event_loop_delay_seconds gauge'))
      // default metrics, on the lab's registry, with the names 0.0.4 wants (also after an OpenMetrics Accept)
      assert.ok(lines.some(function (l) { return l.startsWith('process_cpu_user_seconds_total ') }))
    }
    const byQuery = await fetch(`${lab.url}/metrics?format=prometheus`)
    assert.match(await byQuery.text(), /^# HELP /)
  })

  it('leaves no sampler subscription behind when its clients go', async function () {
    const a = await stream('?interval=20')
    const b = await stream('?interval=30')
    await a.waitFor(function (e) { return e.event === 'sample' })
    await b.waitFor(function (e) { return e.event === 'sample' })
    assert.deepEqual(lab.app.locals.sampler.intervals, [20, 30])
    a.close()
    b.close()
    await until(function () { return !lab.app.locals.sampler.active }, 2000, 'the sampler to stop')
    const res = await getJson(`${lab.url}/metrics`)
    assert.equal(res.body.clients.length, 0)
  })
})

/**
 * A client that connects over a unix socket and never reads. A unix socket's
 * kernel buffer is ~200 KiB where loopback TCP's grows to 4 MiB, which at
 * 10 ms samples would take a minute and more to fill.
 */
async function startStalledClient (socketPath) {
  const socket = net.connect(socketPath)
  await once(socket, 'connect')
  socket.write('GET /metrics?interval=10 HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n')
  // never read: Node's readable buffer fills to its high-water mark, then the kernel's
  socket.pause()
  return socket
}

function snapshotOver (socketPath) {
  return new Promise(function (resolve, reject) {
    http.get({ socketPath, path: '/metrics?format=json' }, function (res) {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', function (chunk) { text += chunk })
      res.on('end', function () { resolve(JSON.parse(text)) })
    }).on('error', reject)
  })
}

describe('GET /metrics and the upload routes', function () {
  let lab
  let dataDir
  before(async function () {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-metrics-uploads-'))
    lab = await startMetricsLab(undefined, { dataDir, upload: { limit: 1000 } })
  })
  after(async function () {
    await lab.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('sends request events for /upload-buffer and /upload-stream, and counts them in requestsInFlight and the Prometheus counters', async function () {
    const s = await openStream(`${lab.url}/metrics?interval=1000`)
    try {
      // a streamed upload held open part-way: in flight until its last byte
      const req = http.request(`${lab.url}/upload-stream`, { method: 'POST', headers: { 'content-length': '100' } })
      const answered = new Promise(function (resolve, reject) {
        req.on('response', function (res) {
          let text = ''
          res.setEncoding('utf8')
          res.on('data', function (chunk) { text += chunk })
          res.on('end', function () { resolve({ status: res.statusCode, body: JSON.parse(text) }) })
        })
        req.on('error', reject)
      })
      req.write(Buffer.alloc(10))
      await until(async function () { return (await getJson(`${lab.url}/metrics`)).body.requestsInFlight === 1 }, 5000, 'the upload in flight')
      req.end(Buffer.alloc(90))
      const saved = await answered
      assert.equal(saved.status, 200, JSON.stringify(saved.body))
      assert.equal((await getJson(`${lab.url}/metrics`)).body.requestsInFlight, 0)
      const refused = await post(`${lab.url}/upload-buffer`, Buffer.alloc(2000), { 'content-type': 'application/octet-stream' })
      assert.equal(refused.status, 413)

      const streamed = await s.waitFor(function (e) { return e.event === 'request' && e.data.phase === 'end' && e.data.route === 'upload-stream' })
      assert.equal(streamed.data.status, 200)
      const buffered = await s.waitFor(function (e) { return e.event === 'request' && e.data.phase === 'end' && e.data.route === 'upload-buffer' })
      assert.equal(buffered.data.status, 413)
      assert.equal(buffered.data.errorType, 'entity.too.large')

      const text = await (await fetch(`${lab.url}/metrics?format=prometheus`)).text()
      assert.match(text, /^streamlab_ingest_requests_total\{route="upload-stream",status="200"\} 1$/m)
      assert.match(text, /^streamlab_ingest_requests_total\{route="upload-buffer",status="413"\} 1$/m)
      assert.match(text, /^# HELP streamlab_ingest_requests_total Ingest and upload requests/m)
      assert.match(text, /^# HELP streamlab_ingest_requests_in_flight Ingest and upload requests/m)
    } finally {
      s.close()
    }
  })

  it('rounds the ms of a refused request to 0.1 ms, as it does for an answered one', async function () {
    const s = await openStream(`${lab.url}/metrics?interval=1000`)
    try {
      assert.equal((await post(`${lab.url}/bad`, SMALL_BODY, { 'content-type': 'text/plain' })).status, 415)
      assert.equal((await post(`${lab.url}/upload-stream`, Buffer.alloc(2000), { 'content-type': 'application/octet-stream' })).status, 413)
      for (const route of ['bad', 'upload-stream']) {
        const end = await s.waitFor(function (e) { return e.event === 'request' && e.data.phase === 'end' && e.data.route === route })
        assert.ok(end.data.status >= 400, route)
        assert.equal(end.data.ms, Math.round(end.data.ms * 10) / 10, `${route}: ms ${end.data.ms}`)
      }
    } finally {
      s.close()
    }
  })
})

describe('GET /metrics with a client that stops reading', function () {
  const socketPath = path.join(os.tmpdir(), `streamlab-metrics-${process.pid}.sock`)
  const HISTORY = 100
  let lab
  let slow
  before(async function () {
    fs.rmSync(socketPath, { force: true })
    // no 'peak' events of its own: the experiment events below are to be the only ones it can miss
    lab = await startMetricsLab({ path: socketPath }, { metrics: { historySize: HISTORY, peakStep: Number.MAX_SAFE_INTEGER } })
  })
  after(async function () {
    slow?.destroy()
    await lab.close()
    fs.rmSync(socketPath, { force: true })
  })

  it('keeps at most a socket buffer of bytes for it, counts the samples it drops, and says what it lost', async function () {
    this.timeout(30000)
    slow = await startStalledClient(socketPath)
    const buffered = []
    const congested = await until(async function () {
      const s = await snapshotOver(socketPath)
      if (s.clients.length === 1) buffered.push(s.clients[0].bufferedBytes)
      return s.clients[0]?.dropped > 0 ? s : null
    }, 20000, 'the hub to drop samples')
    // long enough for the history to let go of every sample it had when the drops began
    const later = await until(async function () {
      const s = await snapshotOver(socketPath)
      return s.history.oldestId > congested.history.newestId ? s : null
    }, 10000, 'the history to roll over')
    buffered.push(later.clients[0].bufferedBytes)
    assert.ok(later.clients[0].dropped > congested.clients[0].dropped, 'drops keep rising while it does not read')
    assert.ok(later.dropped >= later.clients[0].dropped)
    assert.equal(later.clients[0].congested, true)
    // one socket high-water mark (16 KiB on Node 20, 64 KiB from Node 22) and a frame, not a backlog
    const most = Math.max(...buffered)
    assert.ok(most < 80 * 1024, `buffered ${most} bytes`)

    // events are never dropped for congestion; more of them than the history holds make a gap
    const events = lab.app.locals.events
    const EXPERIMENT_EVENTS = HISTORY + 50
    for (let i = 1; i <= EXPERIMENT_EVENTS; i++) events.emit('experiment', { id: 'x', phase: 'progress', time: Date.now(), step: i })
    assert.equal((await snapshotOver(socketPath)).clients[0].bufferedBytes, later.clients[0].bufferedBytes,
      'nothing more was buffered for it')

    // reading again: it hears how many samples it lost, which ids it missed, then the rest
    let text = ''
    slow.setEncoding('utf8')
    slow.on('data', function (chunk) { text += chunk })
    slow.resume()
    await until(function () { return text.includes(`"step":${EXPERIMENT_EVENTS}}`) }, 5000, 'the last experiment event')
    const notice = JSON.parse(/event: dropped\ndata: (\{.*\})\n\n/.exec(text)[1])
    assert.ok(notice.count > 0)
    assert.ok(notice.total >= notice.count)
    const steps = [...text.matchAll(/id: (\d+)\nevent: experiment\ndata: .*"step":(\d+)\}/g)].map(function (m) { return Number(m[2]) })
    const firstId = Number(/id: (\d+)\nevent: experiment\n/.exec(text)[1])
    // the gap starts at the first event it missed: dropped samples before it are not reported twice
    const gap = JSON.parse(/event: gap\ndata: (\{.*\})\n\n/.exec(text)[1])
    assert.deepEqual(gap, { from: firstId - (steps[0] - 1), to: firstId - 1 })
    assert.ok(steps.length > 0 && steps.length < EXPERIMENT_EVENTS, `got ${steps.length} experiment events`)
    assert.deepEqual(steps, steps.map(function (_, k) { return steps[0] + k }), 'what it got is in order, without holes')
    assert.equal(steps.at(-1), EXPERIMENT_EVENTS)

    slow.destroy()
    await until(async function () { return (await snapshotOver(socketPath)).clients.length === 0 }, 2000, 'the client to leave')
    assert.equal(lab.app.locals.sampler.active, false)
  })
})

describe('GET /metrics heartbeats and stalled clients', function () {
  const socketPath = path.join(os.tmpdir(), `streamlab-metrics-stall-${process.pid}.sock`)
  let lab
  let slow
  let reader
  before(async function () {
    fs.rmSync(socketPath, { force: true })
    lab = await startMetricsLab({ path: socketPath }, { metrics: { heartbeatMs: 100, stallMs: 300 } })
  })
  after(async function () {
    slow?.destroy()
    reader?.destroy()
    await lab.close()
    fs.rmSync(socketPath, { force: true })
  })

  it('sends heartbeat comments to a client that reads', async function () {
    reader = net.connect(socketPath)
    let text = ''
    reader.setEncoding('utf8')
    reader.on('data', function (chunk) { text += chunk })
    reader.write('GET /metrics?interval=5000 HTTP/1.1\r\nHost: localhost\r\n\r\n')
    await until(function () { return (text.match(/: heartbeat\n\n/g) ?? []).length >= 2 }, 3000, 'two heartbeats')
    reader.destroy()
  })

  it('ends a client whose socket has not drained for stallMs', async function () {
    this.timeout(30000)
    slow = await startStalledClient(socketPath)
    const closed = once(slow, 'close')
    await until(async function () { return (await snapshotOver(socketPath)).ended === 1 }, 20000, 'the hub to end the client')
    // the end of the stream sits behind the bytes it never read
    slow.resume()
    await closed
    assert.equal((await snapshotOver(socketPath)).clients.length, 0)
  })
})

describe('POST /metrics/peak/reset', function () {
  let lab
  let s
  before(async function () { lab = await startMetricsLab() })
  after(async function () {
    s?.close()
    await lab.close()
  })

  it('answers whether it reset the peak, and tells the stream', async function () {
    s = await openStream(`${lab.url}/metrics?interval=1000`)
    const res = await fetch(`${lab.url}/metrics/peak/reset`, { method: 'POST' })
    assert.equal(res.status, 200)
    const body = await res.json()
    assert.deepEqual(Object.keys(body).sort(), ['peakRss', 'reset', 'source', 'supported'])
    assert.equal(typeof body.reset, 'boolean')
    assert.ok(body.peakRss > 0)
    if (process.platform === 'linux' && body.source === 'VmHWM') {
      assert.equal(body.supported, true)
      // after the reset the peak is the current RSS, give or take what the request itself touched
      assert.ok(body.peakRss < process.memoryUsage.rss() + 32 * 1024 * 1024)
    }
    const event = await s.waitFor(function (e) { return e.event === 'peak' && e.data.reset === true })
    assert.equal(event.data.peakRss, body.peakRss)
    assert.equal(event.data.supported, body.supported)
  })
})
