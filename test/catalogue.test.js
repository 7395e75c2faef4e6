/**
 * The catalogue of bad inputs (docs/errors.md): each gets its status, its
 * error type as JSON, and leaves the server serving.
 */
import assert from 'node:assert/strict'
import net from 'node:net'
import zlib from 'node:zlib'
import { startLab, post } from './helpers.js'

const DOC = '{"items":[{"id":1,"s":"caf\\u00e9"},{"id":2,"n":[1.5,2]}]}'
const GZ = zlib.gzipSync(DOC)

function withByte (buf, at, value) {
  const copy = Buffer.from(buf)
  copy[at < 0 ? copy.length + at : at] = value
  return copy
}

/** Send raw bytes over TCP and read the whole answer. */
function rawRequest (port, chunks, { gapMs = 0, endAfter = true } = {}) {
  return new Promise(function exchange (resolve, reject) {
    const socket = net.connect(port, '127.0.0.1')
    const received = []
    socket.on('data', function keep (c) { received.push(c) })
    socket.on('error', function ignore () {})
    socket.on('close', function done () {
      // the first response only: a second one may follow on the same socket
      const text = Buffer.concat(received).toString('latin1')
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0)
      const headEnd = text.indexOf('\r\n\r\n')
      const length = Number(/^content-length: *(\d+)/im.exec(text.slice(0, headEnd))?.[1] ?? NaN)
      let json = null
      try {
        json = JSON.parse(Buffer.from(text.slice(headEnd + 4, Number.isNaN(length) ? undefined : headEnd + 4 + length), 'latin1').toString('utf8'))
      } catch {
        // not JSON: the test says so
      }
      resolve({ status, json, text })
    })
    let k = 0
    function next () {
      if (k < chunks.length) {
        socket.write(chunks[k++])
        setTimeout(next, gapMs)
      } else if (endAfter) socket.end()
    }
    socket.on('connect', next)
    setTimeout(function giveUp () { socket.destroy(); reject(new Error('no answer')) }, 10000).unref()
  })
}

describe('the catalogue of bad inputs', function () {
  this.timeout(20000)
  let lab
  before(async function () {
    lab = await startLab({ limits: { bodyIdleMs: 400, inflight: 4 } }, { headersTimeout: 500, connectionsCheckingInterval: 100 })
  })
  after(async function () { await lab.close() })

  const bodies = [
    ['an empty body', Buffer.alloc(0), 400, 'gzip.truncated'],
    ['a body that is not gzip', Buffer.from('{"items":[]}'), 400, 'gzip.invalid'],
    ['a gzip header only', GZ.subarray(0, 10), 400, 'gzip.truncated'],
    ['a truncated gzip stream', GZ.subarray(0, GZ.length - 12), 400, 'gzip.truncated'],
    ['a CRC mismatch', withByte(GZ, -8, GZ[GZ.length - 8] ^ 0xff), 400, 'gzip.invalid'],
    ['a length mismatch', withByte(GZ, -4, GZ[GZ.length - 4] ^ 0xff), 400, 'gzip.invalid'],
    ['trailing garbage after the gzip stream', Buffer.concat([GZ, Buffer.from('garbage')]), 400, 'gzip.invalid'],
    ['invalid JSON at the start', zlib.gzipSync('x' + DOC), 422, 'json.invalid', 0],
    ['invalid JSON in the middle', zlib.gzipSync(DOC.replace('"id":2', '"id" 2')), 422, 'json.invalid', 41],
    ['invalid JSON at the end', zlib.gzipSync(DOC.slice(0, -2)), 422, 'json.invalid', DOC.length - 2],
    ['a UTF-8 byte order mark', zlib.gzipSync(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(DOC)])), 422, 'json.invalid', 0],
    ['a string where the document should be', zlib.gzipSync('"just text"'), 422, 'json.items.missing'],
    ['a number where the items array should be', zlib.gzipSync('{"items":5}'), 422, 'json.items.missing'],
    ['arrays nested one past limits.depth', zlib.gzipSync('{"items":[' + '['.repeat(999) + ']'.repeat(999) + ']}'), 422, 'json.too.deep', 1008],
    ['invalid JSON before nesting past limits.depth (the first fault wins)', zlib.gzipSync('{"items":[x,' + '['.repeat(1200) + ']'.repeat(1200) + ']}'), 422, 'json.invalid', 10]
  ]
  for (const [name, body, status, type, offset] of bodies) {
    it(`answers ${status} ${type} to ${name}, on both routes`, async function () {
      for (const route of ['bad', 'good']) {
        const res = await post(`${lab.url}/${route}`, body)
        assert.equal(res.status, status, `${route}: ${res.text}`)
        assert.equal(res.body.error.type, type, route)
        if (offset !== undefined) assert.equal(res.body.error.offset, offset, route)
      }
    })
  }

  const accepted = [
    ['invalid UTF-8 inside a string (decoded to U+FFFD, as JSON.parse sees it)', Buffer.concat([Buffer.from('{"items":[{"s":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}]}')]), 1],
    ['numbers beyond double range (Infinity, as JSON.parse gives)', Buffer.from('{"items":[{"n":1e400},{"n":-1e400}]}'), 2],
    ['duplicate keys (the last wins, as in JSON.parse)', Buffer.from('{"items":[{"id":1,"id":5}]}'), 1]
  ]
  for (const [name, text, items] of accepted) {
    it(`accepts ${name}, with the same summary on both routes`, async function () {
      const body = zlib.gzipSync(text)
      const bad = await post(`${lab.url}/bad`, body)
      const good = await post(`${lab.url}/good`, body)
      assert.equal(bad.status, 200, bad.text)
      assert.equal(good.status, 200, good.text)
      assert.equal(good.body.summary.items, items)
      assert.deepEqual(good.body.summary, bad.body.summary)
    })
  }

  it('accepts a chunked body (no Content-Length)', async function () {
    for (const route of ['bad', 'good']) {
      const res = await rawRequest(lab.port, [
        `POST /${route} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/gzip\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
        `${GZ.length.toString(16)}\r\n`, GZ, '\r\n0\r\n\r\n'
      ], { endAfter: false })
      assert.equal(res.status, 200, res.text)
      assert.equal(res.json.summary.items, 2)
    }
  })

  it('answers 400 when Content-Length is shorter than the body (the body is cut there)', async function () {
    for (const route of ['bad', 'good']) {
      // the bytes past Content-Length arrive later, as what HTTP must read as the next request
      const res = await rawRequest(lab.port, [
        Buffer.concat([
          Buffer.from(`POST /${route} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/gzip\r\nContent-Length: ${GZ.length - 10}\r\n\r\n`),
          GZ.subarray(0, GZ.length - 10)
        ]),
        GZ.subarray(GZ.length - 10)
      ], { gapMs: 300 })
      assert.equal(res.status, 400, res.text)
      assert.equal(res.json.error.type, 'gzip.truncated')
    }
  })

  it('answers 408 request.timeout when Content-Length is longer than the body and the client waits', async function () {
    for (const route of ['bad', 'good']) {
      const res = await rawRequest(lab.port, [
        `POST /${route} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/gzip\r\nContent-Length: ${GZ.length + 100}\r\n\r\n`, GZ
      ], { endAfter: false })
      assert.equal(res.status, 408, res.text)
      assert.equal(res.json.error.type, 'request.timeout')
    }
  })

  it('answers 408 request.timeout to a client that sends its headers too slowly', async function () {
    const head = 'POST /good HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/gzip\r\n'
    const res = await rawRequest(lab.port, head.split('').concat(['X-Slow: 1\r\n']), { gapMs: 40, endAfter: false })
    assert.equal(res.status, 408, res.text)
    assert.equal(res.json.error.type, 'request.timeout')
  })

  it('answers 431 headers.too.large to oversized headers, as JSON', async function () {
    const res = await rawRequest(lab.port, [`GET /metrics HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`])
    assert.equal(res.status, 431)
    assert.equal(res.json.error.type, 'headers.too.large')
  })

  it('answers 400 request.malformed to garbage that is not HTTP', async function () {
    const res = await rawRequest(lab.port, ['HELLO THERE\r\n\r\n'])
    assert.equal(res.status, 400)
    assert.equal(res.json.error.type, 'request.malformed')
  })

  const headerCases = [
    ['a missing Content-Type', {}, 415, 'media.unsupported'],
    ['a wrong Content-Type', { 'content-type': 'text/csv' }, 415, 'media.unsupported'],
    ['an unknown Content-Encoding', { 'content-type': 'application/json', 'content-encoding': 'compress' }, 415, 'encoding.unsupported'],
    ['too many gzip layers', { 'content-type': 'application/gzip', 'content-encoding': 'gzip, gzip, gzip' }, 413, 'encoding.too.many']
  ]
  for (const [name, headers, status, type] of headerCases) {
    it(`answers ${status} ${type} to ${name}`, async function () {
      for (const route of ['bad', 'good']) {
        const res = await post(`${lab.url}/${route}`, GZ, headers)
        assert.equal(res.status, status, res.text)
        assert.equal(res.body.error.type, type)
      }
    })
  }

  it('answers 405 with Allow to a wrong method, and 404 to an unknown path, as JSON', async function () {
    for (const [method, path, allow] of [['GET', '/good', 'POST'], ['GET', '/bad', 'POST'], ['POST', '/generate', 'GET, HEAD'], ['PUT', '/metrics', 'GET, HEAD']]) {
      const res = await fetch(lab.url + path, { method })
      assert.equal(res.status, 405, `${method} ${path}`)
      assert.equal(res.headers.get('allow'), allow)
      assert.equal((await res.json()).error.type, 'method.not.allowed')
    }
    const missing = await fetch(`${lab.url}/etc/passwd`)
    assert.equal(missing.status, 404)
    assert.equal((await missing.json()).error.type, 'route.not.found')
  })

  const queries = [
    ['/good?format=xml', 'POST', 'format'],
    ['/bad?format=json&format=array', 'POST', 'format'],
    ['/generate?size=-1', 'GET', 'size'],
    ['/generate?size=1e99', 'GET', 'size'],
    ['/generate?format=../../etc', 'GET', 'format'],
    ['/generate?seed=abc', 'GET', 'seed'],
    ['/generate?level=12', 'GET', 'level'],
    ['/generate?bytes=lots', 'GET', 'bytes'],
    ['/metrics?interval=0', 'GET', 'interval'],
    ['/metrics?interval=abc', 'GET', 'interval']
  ]
  for (const [path, method, parameter] of queries) {
    it(`answers 400 parameter.invalid naming ${parameter} for ${method} ${path}`, async function () {
      const res = await fetch(lab.url + path, { method, headers: { 'content-type': 'application/gzip', accept: 'application/json' }, body: method === 'POST' ? GZ : undefined })
      assert.equal(res.status, 400, path)
      const body = await res.json()
      assert.equal(body.error.type, 'parameter.invalid')
      assert.equal(body.error.parameter, parameter)
    })
  }

  it('answers 503 server.busy with Retry-After past the in-flight limit', async function () {
    // four uploads that never finish hold every place, until the idle timeout frees them
    const held = [1, 2, 3, 4].map(function hold () {
      return rawRequest(lab.port, [`POST /good HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/gzip\r\nContent-Length: 1000\r\n\r\n`, GZ.subarray(0, 5)], { endAfter: false })
    })
    await new Promise(function settle (resolve) { setTimeout(resolve, 150) })
    const res = await post(`${lab.url}/bad`, GZ)
    assert.equal(res.status, 503, res.text)
    assert.equal(res.headers.get('retry-after'), '1')
    assert.equal(res.body.error.type, 'server.busy')
    await Promise.all(held)
    const after = await post(`${lab.url}/good`, GZ)
    assert.equal(after.status, 200, 'serves again once the stalled uploads time out')
  })
})
