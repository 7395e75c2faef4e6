/**
 * What the HTTP server answers before (or instead of) Express, over raw
 * sockets: every error is JSON, with its status, `Content-Type:
 * application/json` and a dotted type, and the lab serves on afterwards.
 * lib/http/server.js; the types are in docs/errors.md.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import net from 'node:net'
import zlib from 'node:zlib'
import { startLab } from './helpers.js'

const GZ = zlib.gzipSync('{"items":[{"id":1},{"id":2}]}')
const ERRORS_MD = new URL('../docs/errors.md', import.meta.url)
/** Only a failure waits this long: every exchange below ends on an event, not a timer. */
const GIVE_UP_MS = 10000

/**
 * Parse the answers in what a connection received: 1xx interim heads are
 * counted apart, a final answer is whole once its Content-Length has arrived
 * (or, without one, when the connection closed).
 */
function parseAnswers (buffer, closed) {
  const text = buffer.toString('latin1')
  const answers = []
  let interim = 0
  let at = 0
  while (at < text.length) {
    const headEnd = text.indexOf('\r\n\r\n', at)
    if (headEnd === -1) break
    const lines = text.slice(at, headEnd).split('\r\n')
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0])?.[1] ?? 0)
    const headers = {}
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':')
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
    }
    if (status >= 100 && status < 200) {
      interim++
      at = headEnd + 4
      continue
    }
    const length = headers['content-length'] === undefined ? NaN : Number(headers['content-length'])
    const bodyEnd = Number.isNaN(length) ? (closed ? text.length : -1) : headEnd + 4 + length
    if (bodyEnd === -1 || bodyEnd > text.length) break
    const body = Buffer.from(text.slice(headEnd + 4, bodyEnd), 'latin1').toString('utf8')
    let json = null
    try {
      json = JSON.parse(body)
    } catch {
      // not JSON: the assertions say so
    }
    answers.push({ status, headers, body, json, head: lines[0] })
    at = bodyEnd
  }
  return { answers, interim, rest: text.slice(at) }
}

/**
 * A raw TCP connection to the lab: send bytes, wait for answers or for the
 * server to close it. Nothing here half-closes unless asked: Node drops a
 * request whose client has ended its side (httpAllowHalfOpen is false).
 */
function openConnection (port) {
  return new Promise(function connecting (resolve, reject) {
    const socket = net.connect(port, '127.0.0.1')
    let received = Buffer.alloc(0)
    let closed = false
    const waiters = new Set()
    function recheck () { for (const waiter of [...waiters]) waiter() }
    socket.on('data', function keep (chunk) {
      received = Buffer.concat([received, chunk])
      recheck()
    })
    socket.on('close', function gone () {
      closed = true
      recheck()
    })
    let connected = false
    socket.once('error', function failedToConnect (err) { if (!connected) reject(err) })
    socket.on('error', function ignoreResets () {})
    function waitFor (what, test) {
      return new Promise(function waiting (done, fail) {
        const timer = setTimeout(function giveUp () {
          waiters.delete(check)
          fail(new Error(`no ${what} within ${GIVE_UP_MS} ms; received ${JSON.stringify(received.toString('latin1').slice(0, 300))}`))
        }, GIVE_UP_MS)
        function check () {
          const value = test()
          if (value === undefined) return
          clearTimeout(timer)
          waiters.delete(check)
          done(value)
        }
        waiters.add(check)
        check()
      })
    }
    socket.once('connect', function onConnect () {
      connected = true
      resolve({
        /** @param {string|Buffer} bytes strings are sent as latin1, byte for byte */
        send (bytes) { socket.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes) },
        /** End our side (half-close). */
        end () { socket.end() },
        destroy () { socket.destroy() },
        /** The first `n` final answers (fewer if the server closed first). */
        answers (n = 1) {
          return waitFor(`${n} answer(s)`, function enoughAnswers () {
            const { answers } = parseAnswers(received, closed)
            return answers.length >= n || closed ? answers.slice(0, n) : undefined
          })
        },
        /** Resolves once a 1xx interim answer has arrived. */
        interim () {
          return waitFor('interim answer', function interimCame () {
            return parseAnswers(received, closed).interim > 0 || closed ? true : undefined
          })
        },
        /** Resolves once the server has closed the connection. */
        closed () {
          return waitFor('close', function hasClosed () { return closed ? true : undefined })
        },
        get isClosed () { return closed }
      })
    })
  })
}

/** One exchange: send, read the first answer, hang up. */
async function ask (port, bytes) {
  const conn = await openConnection(port)
  conn.send(bytes)
  const [answer] = await conn.answers(1)
  conn.destroy()
  return answer
}

/** One exchange that the server ends: send, read the first answer, wait for the server to close. */
async function askAndClose (port, bytes) {
  const conn = await openConnection(port)
  conn.send(bytes)
  const [answer] = await conn.answers(1)
  await conn.closed()
  return answer
}

/** The answer is the JSON error of this status and type. */
function assertJsonError (answer, status, type) {
  assert.ok(answer, 'no answer at all')
  assert.equal(answer.status, status, `${answer.head}\n${answer.body}`)
  assert.match(answer.headers['content-type'] ?? '', /^application\/json\b/, 'Content-Type')
  assert.ok(answer.json !== null, `not JSON: ${JSON.stringify(answer.body)}`)
  assert.equal(answer.json.error.status, status)
  assert.equal(answer.json.error.type, type)
  assert.equal(typeof answer.json.error.message, 'string')
}

const HEAD = 'Host: localhost\r\n'

describe('errors the server answers before Express, as JSON', function () {
  this.timeout(20000)
  let lab
  before(async function () {
    lab = await startLab()
  })
  after(async function () { await lab.close() })

  afterEach(async function theLabStillServes () {
    const res = await fetch(`${lab.url}/metrics?format=json`)
    assert.equal(res.status, 200)
    await res.arrayBuffer()
  })

  describe('a request without Host', function () {
    it('answers 400 host.missing to HTTP/1.1 (Node would send an empty 400)', async function () {
      // the app answers it (lib/limits/request-guard.js): the connection may stay open
      const answer = await ask(lab.port, 'GET /metrics?format=json HTTP/1.1\r\n\r\n')
      assertJsonError(answer, 400, 'host.missing')
    })

    it('serves HTTP/1.0, which may leave it out', async function () {
      const answer = await askAndClose(lab.port, 'GET /nope HTTP/1.0\r\n\r\n')
      assertJsonError(answer, 404, 'route.not.found')
    })
  })

  describe('Expect', function () {
    it('answers 417 expectation.failed to an expectation other than 100-continue, naming it, and keeps the connection', async function () {
      const conn = await openConnection(lab.port)
      conn.send(`GET /metrics?format=json HTTP/1.1\r\n${HEAD}Expect: 200-ok\r\n\r\n`)
      const [refused] = await conn.answers(1)
      assertJsonError(refused, 417, 'expectation.failed')
      assert.equal(refused.json.error.expect, '200-ok')
      assert.deepEqual(refused.json.error.supported, ['100-continue'])
      assert.match(refused.json.error.message, /only 100-continue/)
      conn.send(`GET /metrics?format=json HTTP/1.1\r\n${HEAD}\r\n`)
      const [, next] = await conn.answers(2)
      assert.equal(next.status, 200)
      conn.destroy()
    })

    it('reads and drops the body of a refused expectation, then serves the next request on the connection', async function () {
      const conn = await openConnection(lab.port)
      conn.send(Buffer.concat([
        Buffer.from(`POST /good HTTP/1.1\r\n${HEAD}Content-Type: application/gzip\r\nExpect: 200-ok\r\nContent-Length: ${GZ.length}\r\n\r\n`),
        GZ,
        Buffer.from(`GET /metrics?format=json HTTP/1.1\r\n${HEAD}\r\n`)
      ]))
      const [refused, next] = await conn.answers(2)
      assertJsonError(refused, 417, 'expectation.failed')
      assert.equal(next?.status, 200)
      conn.destroy()
    })

    it('still sends 100 Continue for Expect: 100-continue, then reads the body', async function () {
      const conn = await openConnection(lab.port)
      conn.send(`POST /good HTTP/1.1\r\n${HEAD}Content-Type: application/gzip\r\nExpect: 100-continue\r\nContent-Length: ${GZ.length}\r\n\r\n`)
      await conn.interim()
      conn.send(GZ)
      const [answer] = await conn.answers(1)
      assert.equal(answer.status, 200, answer.body)
      assert.equal(answer.json.summary.items, 2)
      conn.destroy()
    })
  })

  describe('CONNECT', function () {
    it('answers 405 method.not.allowed with Allow, and closes, even when tunnel bytes follow at once', async function () {
      // a CONNECT client may start its TLS handshake without waiting: those bytes must not reset the answer away
      const answer = await askAndClose(lab.port, Buffer.concat([
        Buffer.from('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'),
        Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03])
      ]))
      assertJsonError(answer, 405, 'method.not.allowed')
      assert.equal(answer.headers.allow, 'DELETE, GET, HEAD, PATCH, POST')
      assert.equal(answer.json.error.method, 'CONNECT')
      assert.equal(answer.headers.connection, 'close')
    })
  })

  describe('Upgrade (ignored, as RFC 9110 section 7.8 allows: the route answers over HTTP/1.1)', function () {
    it('answers a WebSocket handshake with the route\'s own answer, not 101, and keeps the connection', async function () {
      const conn = await openConnection(lab.port)
      conn.send(`GET /nope HTTP/1.1\r\n${HEAD}Connection: Upgrade\r\nUpgrade: websocket\r\n` +
        'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n')
      const [answer] = await conn.answers(1)
      assertJsonError(answer, 404, 'route.not.found')
      conn.send(`GET /metrics?format=json HTTP/1.1\r\n${HEAD}\r\n`)
      const [, next] = await conn.answers(2)
      assert.equal(next.status, 200)
      conn.destroy()
    })

    it('serves a request that offers h2c (curl --http2 on http://) over HTTP/1.1', async function () {
      const conn = await openConnection(lab.port)
      conn.send(`GET /metrics?format=json HTTP/1.1\r\n${HEAD}Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n` +
        'HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n')
      const [answer] = await conn.answers(1)
      assert.equal(answer.status, 200)
      assert.equal(typeof answer.json.sample.rss, 'number')
      conn.destroy()
    })
  })

  describe('malformed requests', function () {
    const bigExtension = ';x=' + 'a'.repeat(17 * 1024)
    const cases = [
      ['a version the lab does not speak (HTTP/9.9)', `GET / HTTP/9.9\r\n${HEAD}\r\n`, 505, 'http.version.unsupported', { version: 'HTTP/9.9' }],
      ['HTTP/1.2 (Node\'s parser refuses it)', `GET / HTTP/1.2\r\n${HEAD}\r\n`, 505, 'http.version.unsupported', { version: 'HTTP/1.2' }],
      ['HTTP/2.0 as text (Node\'s parser lets it through)', `GET / HTTP/2.0\r\n${HEAD}\r\n`, 505, 'http.version.unsupported', { version: 'HTTP/2.0' }],
      ['an HTTP/0.9 request line (no version)', 'GET /\r\n\r\n', 505, 'http.version.unsupported', { version: 'HTTP/0.9' }],
      ['the HTTP/2 connection preface (prior knowledge)', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 505, 'http.version.unsupported', { version: 'HTTP/2.0', code: 'HPE_PAUSED_H2_UPGRADE' }],
      ['a control character in a header value', `GET / HTTP/1.1\r\n${HEAD}X-Bad: a\x01b\r\n\r\n`, 400, 'request.malformed', { code: 'HPE_INVALID_HEADER_TOKEN' }],
      ['a space in a header name', `GET / HTTP/1.1\r\n${HEAD}X Bad: ab\r\n\r\n`, 400, 'request.malformed', { code: 'HPE_INVALID_HEADER_TOKEN' }],
      ['a request line ending in a bare LF', 'GET / HTTP/1.1\nHost: localhost\n\n', 400, 'request.malformed', { code: 'HPE_INVALID_VERSION' }],
      ['a header line ending in a bare LF', `GET / HTTP/1.1\r\nHost: localhost\nX: y\r\n\r\n`, 400, 'request.malformed', { code: 'HPE_CR_EXPECTED' }],
      ['Transfer-Encoding and Content-Length together (the request smuggling shape)',
        `POST /good HTTP/1.1\r\n${HEAD}Content-Type: application/gzip\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
        400, 'body.length.invalid', { code: 'HPE_INVALID_TRANSFER_ENCODING' }],
      ['two Content-Lengths that disagree', `POST /good HTTP/1.1\r\n${HEAD}Content-Type: application/gzip\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc`,
        400, 'body.length.invalid', { code: 'HPE_UNEXPECTED_CONTENT_LENGTH' }],
      ['a Content-Length that is not a number', `POST /good HTTP/1.1\r\n${HEAD}Content-Type: application/gzip\r\nContent-Length: 2, 3\r\n\r\nabc`,
        400, 'body.length.invalid', { code: 'HPE_INVALID_CONTENT_LENGTH' }],
      ['a Transfer-Encoding that does not end in chunked (after the route has begun)',
        `POST /good HTTP/1.1\r\n${HEAD}Content-Type: application/gzip\r\nTransfer-Encoding: gzip\r\n\r\nabc`,
        400, 'body.length.invalid', { code: 'HPE_INVALID_TRANSFER_ENCODING' }],
      ['a chunk size past 64 bits', `POST /good HTTP/1.1\r\n${HEAD}Content-Type: application/gzip\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\nabc`,
        400, 'body.length.invalid', { code: 'HPE_INVALID_CHUNK_SIZE' }],
      ['a chunk size that is not hex, after a good chunk',
        Buffer.concat([Buffer.from(`POST /good HTTP/1.1\r\n${HEAD}Content-Type: application/gzip\r\nTransfer-Encoding: chunked\r\n\r\n${GZ.length.toString(16)}\r\n`), GZ, Buffer.from('\r\nzz\r\n')]),
        400, 'body.length.invalid', { code: 'HPE_INVALID_CHUNK_SIZE' }],
      ['chunk extensions over 16 KiB', `POST /good HTTP/1.1\r\n${HEAD}Content-Type: application/gzip\r\nTransfer-Encoding: chunked\r\n\r\n2${bigExtension}\r\nab\r\n0\r\n\r\n`,
        413, 'chunk.extensions.too.large', { code: 'HPE_CHUNK_EXTENSIONS_OVERFLOW', limit: 16384 }]
    ]
    for (const [name, bytes, status, type, members] of cases) {
      it(`answers ${status} ${type} to ${name}, and closes`, async function () {
        const answer = await askAndClose(lab.port, bytes)
        assertJsonError(answer, status, type)
        for (const [key, value] of Object.entries(members)) assert.equal(answer.json.error[key], value, key)
        assert.equal(answer.headers.connection, 'close')
      })
    }

    it('frees the route that was reading the body: it loses its connection and records request.aborted', async function () {
      const ended = new Promise(function nextEnd (resolve) {
        lab.app.locals.events.on('request', function onRequest (event) {
          if (event.phase !== 'end' || event.route !== 'good') return
          lab.app.locals.events.removeListener('request', onRequest)
          resolve(event)
        })
      })
      const answer = await askAndClose(lab.port, Buffer.concat([
        Buffer.from(`POST /good HTTP/1.1\r\n${HEAD}Content-Type: application/gzip\r\nTransfer-Encoding: chunked\r\n\r\n${(GZ.length - 10).toString(16)}\r\n`),
        GZ.subarray(0, GZ.length - 10), Buffer.from('\r\nzz\r\n')
      ]))
      assertJsonError(answer, 400, 'body.length.invalid')
      const event = await ended
      assert.equal(event.errorType, 'request.aborted')
    })

    it('answers 400 request.malformed to a head cut short by a half-close', async function () {
      const conn = await openConnection(lab.port)
      conn.send(`GET /metrics?format=json HTTP/1.1\r\n${HEAD}X-Half: `)
      conn.end()
      const [answer] = await conn.answers(1)
      assertJsonError(answer, 400, 'request.malformed')
      assert.equal(answer.json.error.code, 'HPE_INVALID_EOF_STATE')
      await conn.closed()
    })

    it('answers a good request before the garbage pipelined behind it', async function () {
      const conn = await openConnection(lab.port)
      conn.send(`GET /metrics?format=json HTTP/1.1\r\n${HEAD}\r\nnot http at all\r\n\r\n`)
      const [first, second] = await conn.answers(2)
      assert.equal(first.status, 200)
      assert.equal(typeof first.json.sample.rss, 'number')
      assertJsonError(second, 400, 'request.malformed')
      await conn.closed()
    })
  })

  it('every type answered here has its row and anchor in docs/errors.md', function () {
    const doc = fs.readFileSync(ERRORS_MD, 'utf8')
    const types = ['host.missing', 'expectation.failed', 'method.not.allowed', 'http.version.unsupported',
      'request.malformed', 'body.length.invalid', 'chunk.extensions.too.large', 'headers.too.large', 'request.timeout']
    for (const type of types) {
      assert.ok(doc.includes(`<a id="${type.replaceAll('.', '-')}"></a>\`${type}\``), `no anchored row for ${type}`)
    }
  })
})
