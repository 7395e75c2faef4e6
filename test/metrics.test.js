/**
 * GET /metrics (SSE, JSON, Prometheus), its request events for the ingest and
 * upload routes, and POST /metrics/peak/reset, on a real server. The sampler
 * alone, and clients that stop reading, are test/slow/metrics-sampler.test.js's
 * and test/slow/metrics-slow-readers.test.js's.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import { setTimeout as delay } from 'node:timers/promises'
import { procAvailable } from '../lib/util/platform.js'
import { post } from './helpers.js'
import { startMetricsLab, until } from './metrics-helpers.js'

const SMALL_BODY = zlib.gzipSync(JSON.stringify({ items: [{ id: 1 }] }))
const GZIP = { 'content-type': 'application/gzip' }

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
      assert.deepEqual(Object.keys(body).sort(), ['allocationSites', 'clients', 'decoderBudget', 'disk', 'dropped', 'ended', 'history', 'lastCrash', 'lastResults', 'memoryBudget', 'requestsInFlight', 'sample'])
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
