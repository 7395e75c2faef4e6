/**
 * No client can starve the others: a body that drips or stalls is cut with
 * 408 (on every route that reads a body), and connections and /metrics
 * streams past their caps get 503 JSON with Retry-After. Every cap gives its
 * place back when its client leaves. Limits are tiny and margins wide: the
 * specs wait for outcomes, never for a clock. The options of these limits are
 * test/client-limit-options.test.js's.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import net from 'node:net'
import zlib from 'node:zlib'
import { setTimeout as delay } from 'node:timers/promises'
import { startLab, post } from '../helpers.js'

const SMALL = zlib.gzipSync(JSON.stringify({ items: [{ id: 1 }, { id: 2 }] }))

/** Wait for `check()` to hold; the deadline is only there to fail instead of hanging. */
async function until (check, what, ms = 10_000) {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await check()) return
    await delay(20)
  }
  throw new Error(`gave up waiting for ${what}`)
}

/** Read one raw HTTP answer: status, headers (lower-cased) and JSON body. */
function parseAnswer (buffer) {
  const text = buffer.toString('latin1')
  const headEnd = text.indexOf('\r\n\r\n')
  const status = Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0)
  const headers = {}
  for (const line of text.slice(0, headEnd).split('\r\n').slice(1)) {
    const at = line.indexOf(':')
    headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim()
  }
  const length = Number(headers['content-length'] ?? NaN)
  const bodyText = Buffer.from(text.slice(headEnd + 4, Number.isNaN(length) ? undefined : headEnd + 4 + length), 'latin1').toString('utf8')
  let json = null
  try {
    json = JSON.parse(bodyText)
  } catch {
    // not JSON: the assertion on `json` says so
  }
  return { status, headers, json, text }
}

/**
 * A client on a raw socket: writes `head`, then `drip` pieces of the body
 * every `everyMs` until the server answers or hangs up; resolves with the
 * answer once the server has closed the connection.
 */
function slowClient (port, head, { drip = [], everyMs = 100 } = {}) {
  return new Promise(function exchange (resolve, reject) {
    const socket = net.connect(port, '127.0.0.1')
    const received = []
    let timer = null
    let k = 0
    socket.on('data', function keep (chunk) { received.push(chunk) })
    socket.on('error', function ignore () {})
    socket.on('close', function answered () {
      clearInterval(timer)
      resolve(parseAnswer(Buffer.concat(received)))
    })
    socket.on('connect', function start () {
      socket.write(head)
      timer = setInterval(function dripOne () {
        if (received.length > 0 || k >= drip.length || socket.destroyed) return
        socket.write(drip[k++])
      }, everyMs)
    })
    setTimeout(function giveUp () {
      socket.destroy()
      reject(new Error('the server neither answered nor closed the connection'))
    }, 15_000).unref()
  })
}

/** The body of `buf` split into one-byte pieces. */
function bytesOf (buf) {
  return Array.from(buf, function piece (byte) { return Buffer.from([byte]) })
}

/** A GET that opens its own connection and closes it after the answer. */
function getOnce (url, headers = {}) {
  return new Promise(function ask (resolve, reject) {
    const req = http.get(url, { agent: false, headers: { connection: 'close', ...headers } }, function onResponse (res) {
      const parts = []
      res.on('data', function keep (c) { parts.push(c) })
      res.on('end', function done () {
        const text = Buffer.concat(parts).toString()
        resolve({ status: res.statusCode, headers: res.headers, json: JSON.parse(text) })
      })
    })
    req.on('error', reject)
  })
}

/** An SSE stream: resolves once its answer's head arrived, with `close()`. */
function openStream (url) {
  return new Promise(function open (resolve, reject) {
    const req = http.get(url, { agent: false, headers: { accept: 'text/event-stream' } }, function onResponse (res) {
      const parts = []
      res.on('data', function keep (c) { parts.push(c) })
      res.on('error', function ignore () {})
      resolve({
        status: res.statusCode,
        headers: res.headers,
        get json () { return JSON.parse(Buffer.concat(parts).toString()) },
        ended: new Promise(function ended (done) { res.on('close', done) }),
        close: function close () { req.destroy() }
      })
    })
    req.on('error', reject)
  })
}

describe('slow bodies', function () {
  this.timeout(30_000)
  let lab
  before(async function () {
    // one /good pipeline, so a drip that held it would hold up everyone; the rate is
    // judged over 500 ms, the idle limit (2 s) is twenty drip gaps away
    lab = await startLab({
      limits: { bodyIdleMs: 2000, minBodyRate: 2000, bodyRateWindowMs: 500 },
      ingest: { activePipelines: 1 }
    })
  })
  after(async function () { await lab.close() })

  it('cuts a /good body that drips one byte every 100 ms with 408 request.too.slow, and serves a normal request meanwhile', async function () {
    const body = zlib.gzipSync(JSON.stringify({ items: [{ id: 1 }] }))
    const drip = slowClient(lab.port,
      `POST /good HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/gzip\r\nContent-Length: ${body.length}\r\n\r\n`,
      { drip: bytesOf(body) })
    // the drip holds the only pipeline by now, or will once this one is done: either way both must end
    await delay(150)
    const normal = await post(`${lab.url}/good`, SMALL)
    assert.equal(normal.status, 200, normal.text)
    assert.equal(normal.body.summary.items, 2)

    const cut = await drip
    assert.equal(cut.status, 408, cut.text)
    assert.equal(cut.headers.connection, 'close')
    assert.equal(cut.json.error.type, 'request.too.slow')
    assert.equal(cut.json.error.limit, 2000)
    assert.equal(cut.json.error.windowMs, 500)
    assert.ok(cut.json.error.rate < 2000, `rate ${cut.json.error.rate}`)
    assert.ok(cut.json.error.received < body.length)
  })

  it('cuts a drip on every body route: /bad and /upload-stream', async function () {
    for (const path of ['/bad', '/upload-stream']) {
      const cut = await slowClient(lab.port,
        `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/gzip\r\nContent-Length: 1000\r\n\r\n`,
        { drip: bytesOf(Buffer.alloc(1000, 0x61)) })
      assert.equal(cut.status, 408, `${path}: ${cut.text}`)
      assert.equal(cut.json.error.type, 'request.too.slow', path)
    }
  })

  it('answers 408 request.too.slow to a POST /experiments body that drips', async function () {
    const cut = await slowClient(lab.port,
      'POST /experiments HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n',
      { drip: bytesOf(Buffer.from(JSON.stringify({ name: 'ingest', params: {} }).padEnd(200, ' '))) })
    assert.equal(cut.status, 408, cut.text)
    assert.equal(cut.json.error.type, 'request.too.slow')
  })

  it('lets a body through that arrives steadily at ten times the minimum rate', async function () {
    // stored (level 0) gzip: the bytes on the wire are about the JSON's
    const items = Array.from({ length: 600 }, function item (_, i) { return { id: i, s: 'x'.repeat(40) } })
    const body = zlib.gzipSync(JSON.stringify({ items }), { level: 0 })
    const pieces = []
    for (let at = 0; at < body.length; at += 400) pieces.push(body.subarray(at, at + 400))
    // 400 bytes every 20 ms: 20,000 bytes/s against a minimum of 2000, for more than two windows
    const res = await slowClient(lab.port,
      `POST /good HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/gzip\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
      { drip: pieces, everyMs: 20 })
    assert.ok(pieces.length * 20 > 1000, 'the body takes longer than the rate window')
    assert.equal(res.status, 200, res.text)
    assert.equal(res.json.summary.items, 600)
  })

  it('still serves /good once the drips are gone', async function () {
    const res = await post(`${lab.url}/good`, SMALL)
    assert.equal(res.status, 200, res.text)
  })
})

describe('stalled bodies, with no minimum rate', function () {
  this.timeout(30_000)
  let lab
  before(async function () {
    lab = await startLab({ limits: { bodyIdleMs: 300, minBodyRate: 0 } })
  })
  after(async function () { await lab.close() })

  it('answers 408 request.timeout to a half-sent POST /experiments body, and closes the connection', async function () {
    const cut = await slowClient(lab.port,
      'POST /experiments HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":"in')
    assert.equal(cut.status, 408, cut.text)
    assert.equal(cut.headers.connection, 'close')
    assert.equal(cut.json.error.type, 'request.timeout')
    assert.equal(cut.json.error.timeoutMs, 300)
  })

  it('lets go of the stalled bodies: a whole POST /experiments body is still read', async function () {
    const res = await fetch(`${lab.url}/experiments`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"no-such-experiment"}' })
    assert.equal(res.status, 400)
    assert.equal((await res.json()).error.type, 'experiment.unknown')
  })
})

describe('the connection cap', function () {
  this.timeout(30_000)
  let lab
  const held = []
  before(async function () {
    lab = await startLab({}, { maxConnections: 3 })
  })
  after(async function () {
    for (const socket of held) socket.destroy()
    await lab.close()
  })

  it('answers 503 server.busy with Retry-After past maxConnections, as JSON on the raw socket, and admits again once one leaves', async function () {
    for (let k = 0; k < 3; k++) {
      const socket = net.connect(lab.port, '127.0.0.1')
      socket.on('error', function ignore () {})
      held.push(socket)
    }
    await until(function full () { return lab.server.openConnections === 3 }, 'three open connections')

    const refused = await slowClient(lab.port, 'GET /experiments HTTP/1.1\r\nHost: localhost\r\n\r\n')
    assert.equal(refused.status, 503, refused.text)
    assert.equal(refused.headers['retry-after'], '1')
    assert.equal(refused.json.error.type, 'server.busy')
    assert.equal(refused.json.error.limit, 3)
    assert.equal(lab.server.openConnections, 3, 'a refused connection takes no place')

    held.pop().destroy()
    await until(function freed () { return lab.server.openConnections === 2 }, 'a place to come free')
    const admitted = await getOnce(`${lab.url}/experiments`)
    assert.equal(admitted.status, 200)
    assert.ok(Array.isArray(admitted.json.experiments))
  })
})

describe('the /metrics stream cap', function () {
  this.timeout(30_000)
  let lab
  const streams = []
  before(async function () {
    lab = await startLab({ metrics: { maxClients: 4 } })
  })
  after(async function () {
    for (const stream of streams) stream.close()
    await lab.close()
  })

  it('answers 503 server.busy with Retry-After to streams past maxClients, serves other requests meanwhile, and admits again once one leaves', async function () {
    // a flood at a 100 ms interval: four get their stream, the rest a 503
    const flood = await Promise.all(Array.from({ length: 24 }, function open () { return openStream(`${lab.url}/metrics?interval=100`) }))
    streams.push(...flood)
    const open = flood.filter(function ok (s) { return s.status === 200 })
    const refused = flood.filter(function busy (s) { return s.status === 503 })
    assert.equal(open.length, 4)
    assert.equal(refused.length, 20)
    await Promise.all(refused.map(function ended (s) { return s.ended }))
    for (const stream of refused) {
      assert.equal(stream.headers['retry-after'], '5')
      assert.equal(stream.json.error.type, 'server.busy')
      assert.equal(stream.json.error.limit, 4)
    }

    const other = await post(`${lab.url}/good`, SMALL)
    assert.equal(other.status, 200, other.text)
    const snapshot = await getOnce(`${lab.url}/metrics?format=json`)
    assert.equal(snapshot.status, 200)
    assert.equal(snapshot.json.clients.length, 4)

    open[0].close()
    await until(async function freed () {
      return (await getOnce(`${lab.url}/metrics?format=json`)).json.clients.length === 3
    }, 'the stream to leave')
    const again = await openStream(`${lab.url}/metrics?interval=100`)
    streams.push(again)
    assert.equal(again.status, 200)
  })
})
