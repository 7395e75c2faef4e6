/**
 * An answer reaches the client that asked `Connection: close` and is still
 * sending its body when the lab refuses it (RFC 9112 section 9.6: a server
 * that closes while the client still sends resets the connection, and the
 * reset can destroy the answer before the client reads it). Refused early
 * (before a byte of the body is read) and mid-body, on both ingest routes,
 * from a raw socket and from Node's http.request with `agent: false`.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import net from 'node:net'
import zlib from 'node:zlib'
import { randomBytes } from 'node:crypto'
import { startLab } from '../helpers.js'

/** Big enough that the client is still sending when the answer comes: far more than the socket buffers hold. */
const BODY_BYTES = 8 * 1024 * 1024
const WRITE_BYTES = 64 * 1024
const ROUNDS = Number(process.env.ROUNDS ?? 8)
const COMPRESSED_LIMIT = 1024 * 1024

/** Stored (level 0) gzip: it inflates byte for byte, so /good reads as much of it as was sent. */
function storedGzip (text) {
  return zlib.gzipSync(text, { level: 0 }).subarray(0, BODY_BYTES)
}

/** Valid JSON records for longer than the compressed limit: only the limit stops them. */
function manyRecords () {
  return storedGzip('{"items":[' + '{"id":1,"s":"abcdefghij"},'.repeat(BODY_BYTES / 24))
}

/** JSON that is invalid from its first byte, then more (under the compressed limit): /good refuses it mid-body. */
function invalidJson () {
  return storedGzip('x' + ' '.repeat(COMPRESSED_LIMIT - 64 * 1024))
}

/**
 * Each case: what is sent and the answer that must arrive. `early`: refused
 * on its headers; `mid-body`: refused after part of the body was read.
 */
const CASES = [
  { stage: 'early', what: 'a media type the lab does not take', contentType: 'text/plain', body: function noise () { return randomBytes(BODY_BYTES) }, status: 415, type: 'media.unsupported' },
  { stage: 'early', what: 'a Content-Length over the compressed limit', contentType: 'application/gzip', body: function noise () { return randomBytes(BODY_BYTES) }, status: 413, type: 'entity.too.large' },
  { stage: 'mid-body', what: 'a chunked body that passes the compressed limit', contentType: 'application/gzip', chunked: true, body: manyRecords, status: 413, type: 'entity.too.large' }
]
const GOOD_ONLY = { stage: 'mid-body', what: 'JSON that is invalid from its first byte', contentType: 'application/gzip', chunked: true, body: invalidJson, status: 422, type: 'json.invalid' }

function head (route, testCase, length) {
  return `POST /${route} HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${testCase.contentType}\r\nConnection: close\r\n` +
    (testCase.chunked ? 'Transfer-Encoding: chunked\r\n' : `Content-Length: ${length}\r\n`) + '\r\n'
}

function frame (piece, chunked) {
  return chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece
}

/** Parse the first HTTP answer in `bytes`: its status and its JSON body, or what went wrong. */
function readAnswer (bytes) {
  const text = bytes.toString('latin1')
  const headEnd = text.indexOf('\r\n\r\n')
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)
  const length = Number(/\r\ncontent-length: *(\d+)/i.exec(text.slice(0, headEnd))?.[1] ?? NaN)
  let json = null
  try {
    json = JSON.parse(Buffer.from(text.slice(headEnd + 4, headEnd + 4 + length), 'latin1').toString('utf8'))
  } catch {
    // an incomplete or missing answer: the assertion names it
  }
  return { status, json }
}

/**
 * A raw TCP client that writes its whole body before it reads a byte, as
 * Python's urllib does: an answer the lab sent early waits in the client's
 * receive buffer, where a reset would destroy it.
 */
function rawClient (port, route, testCase) {
  const body = testCase.body()
  return new Promise(function exchange (resolve) {
    const socket = net.connect(port, '127.0.0.1')
    const received = []
    let failure = null
    socket.pause()
    socket.on('data', function keep (c) { received.push(c) })
    socket.on('error', function note (err) { failure = err.code })
    socket.on('close', function done () {
      resolve({ ...readAnswer(Buffer.concat(received)), failure })
    })
    socket.on('finish', function readNow () { socket.resume() })
    socket.write(head(route, testCase, body.length))
    let at = 0
    function writeMore () {
      while (at < body.length && !socket.destroyed) {
        const piece = body.subarray(at, at + WRITE_BYTES)
        at += piece.length
        if (!socket.write(frame(piece, testCase.chunked))) return socket.once('drain', writeMore)
      }
      if (!socket.destroyed) socket.end(testCase.chunked ? '0\r\n\r\n' : undefined)
      else socket.resume()
    }
    writeMore()
  })
}

/** Node's http.request with `agent: false` and `Connection: close`, writing its body as fast as it can. */
function httpClient (port, route, testCase) {
  const body = testCase.body()
  return new Promise(function exchange (resolve) {
    const headers = { Host: 'localhost', 'Content-Type': testCase.contentType, Connection: 'close' }
    if (!testCase.chunked) headers['Content-Length'] = body.length
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: `/${route}`, agent: false, headers }, function onResponse (res) {
      const chunks = []
      res.on('data', function keep (c) { chunks.push(c) })
      res.on('end', function done () {
        let json = null
        try { json = JSON.parse(Buffer.concat(chunks).toString()) } catch { /* the assertion names it */ }
        resolve({ status: res.statusCode, json, failure: null })
      })
      res.on('error', function lost (err) { resolve({ status: res.statusCode, json: null, failure: err.code }) })
    })
    req.on('error', function lost (err) { resolve({ status: 0, json: null, failure: err.code }) })
    let at = 0
    function writeMore () {
      while (at < body.length && !req.destroyed) {
        const piece = body.subarray(at, at + WRITE_BYTES)
        at += piece.length
        if (!req.write(piece)) return req.once('drain', writeMore)
      }
      if (!req.destroyed) req.end()
    }
    writeMore()
  })
}

describe('Connection: close clients still sending get their answer', function () {
  this.timeout(120000)
  let lab
  before(async function start () {
    lab = await startLab({ limits: { compressed: COMPRESSED_LIMIT } })
  })
  after(async function stop () { await lab?.close() })

  for (const route of ['bad', 'good']) {
    for (const testCase of route === 'good' ? [...CASES, GOOD_ONLY] : CASES) {
      for (const [clientName, client] of [['a raw socket', rawClient], ['http.request, agent: false', httpClient]]) {
        it(`${route}, refused ${testCase.stage} (${testCase.what}): ${testCase.status} ${testCase.type} reaches ${clientName}, ${ROUNDS} times of ${ROUNDS}`, async function () {
          for (let round = 0; round < ROUNDS; round++) {
            const answer = await client(lab.port, route, testCase)
            assert.equal(answer.status, testCase.status, `round ${round}: ${JSON.stringify(answer)}`)
            assert.equal(answer.json?.error?.type, testCase.type, `round ${round}: ${JSON.stringify(answer)}`)
          }
          // and the lab still serves
          const ok = await fetch(`${lab.url}/good`, { method: 'POST', headers: { 'content-type': 'application/gzip' }, body: zlib.gzipSync('{"items":[{"id":1}]}') })
          assert.equal(ok.status, 200)
        })
      }
    }
  }
})
