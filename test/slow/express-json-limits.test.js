/**
 * POST /express-json's limits and memory budget: a zip bomb stopped once the
 * inflated limit is passed, before memory grows; Content-Lengths and chunked
 * bodies past the limits; a body that stalls; and, within a memory budget
 * sized from this process's RSS, the refusals that keep it. What the route
 * answers to ordinary and broken bodies is test/express-json.test.js's.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import { Readable } from 'node:stream'
import { collect, generatedGzip, startLab, post, postPieces, waitFor } from '../helpers.js'

const MiB = 1024 * 1024
const JSON_GZIP = Object.freeze({ 'content-type': 'application/json', 'content-encoding': 'gzip' })
const PLAIN_JSON = Object.freeze({ 'content-type': 'application/json' })

/** gzip of `bytes` spaces, made a MiB at a time: the lab runs in this process, and counts its RSS. */
function gzipOfSpaces (bytes) {
  const mib = Buffer.alloc(MiB, 0x20)
  return collect(Readable.from((function * spaces () { for (let k = 0; k < bytes / MiB; k++) yield mib })()), zlib.createGzip({ level: 9 }))
}

/** A request that claims `headers['content-length']` bytes and sends none: answered on its headers alone. */
function claim (url, headers) {
  return new Promise(function ask (resolve, reject) {
    const req = http.request(url, { method: 'POST', headers }, function answered (res) {
      let text = ''
      res.on('data', function keep (c) { text += c })
      res.on('end', function done () { req.destroy(); resolve({ status: res.statusCode, body: JSON.parse(text) }) })
    })
    req.on('error', reject)
    req.flushHeaders()
  })
}

describe('POST /express-json', function () {
  let lab
  before(async function () { lab = await startLab() })
  after(async function () { await lab.close() })

  describe('limits', function () {
    let small
    before(async function () { small = await startLab({ limits: { compressed: 600_000, inflated: 8 * MiB, bodyIdleMs: 300 } }) })
    after(async function () { await small.close() })

    it('answers 413 inflated.too.large to a zip bomb once 8 MiB are inflated, before memory grows', async function () {
      const bomb = await gzipOfSpaces(256 * MiB)
      assert.ok(bomb.length < 600_000, 'the bomb fits the compressed limit')
      const before = process.memoryUsage.rss()
      const started = Date.now()
      const res = await post(`${small.url}/express-json`, bomb, JSON_GZIP)
      assert.equal(res.status, 413, res.text)
      assert.equal(res.body.error.type, 'inflated.too.large')
      assert.equal(res.body.error.limit, 8 * MiB)
      assert.ok(res.body.error.received > 8 * MiB && res.body.error.received < 9 * MiB, String(res.body.error.received))
      assert.ok(Date.now() - started < 5000, 'refused without inflating the rest')
      // 256 MiB inflated would be 512 MiB held; the guard held 8
      assert.ok(process.memoryUsage.rss() - before < 64 * MiB, `grew ${((process.memoryUsage.rss() - before) / MiB).toFixed(1)} MiB`)
      assert.equal(small.app.locals.admission.state().reserved, 0)
    })

    it('answers 413 before reading plain JSON whose Content-Length passes the compressed or the inflated limit', async function () {
      const compressed = await claim(`${small.url}/express-json`, { ...PLAIN_JSON, 'content-length': 9 * MiB })
      assert.equal(compressed.status, 413)
      assert.equal(compressed.body.error.type, 'entity.too.large', 'the compressed limit first, as on /bad')
      // the default lab: 512 MiB compressed, 500 MiB inflated, and a plain body is its inflated bytes
      const inflated = await claim(`${lab.url}/express-json`, { ...PLAIN_JSON, 'content-length': 505 * MiB })
      assert.equal(inflated.status, 413)
      assert.equal(inflated.body.error.type, 'inflated.too.large')
      assert.equal(inflated.body.error.received, 505 * MiB)
    })

    it('answers 413 entity.too.large when a chunked gzip body passes the compressed limit (body-parser has no such limit)', async function () {
      const noise = zlib.gzipSync(Buffer.from(Array.from({ length: 700_000 }, function digit (v, k) { return 48 + (k * 7919 % 10) })), { level: 0 })
      const pieces = []
      for (let i = 0; i < noise.length; i += 16384) pieces.push(noise.subarray(i, i + 16384))
      const res = await postPieces(`${small.url}/express-json`, pieces, JSON_GZIP)
      assert.equal(res.status, 413)
      assert.equal(res.body.error.type, 'entity.too.large')
      assert.equal(res.body.error.limit, 600_000)
    })

    it('answers 408 request.timeout to a body that stalls, and records a client that hangs up', async function () {
      const seen = []
      function onRequest (event) { if (event.route === 'express-json' && event.phase === 'end') seen.push(event) }
      small.app.locals.events.on('request', onRequest)
      try {
        const body = await generatedGzip({ size: 2000, format: 'json', seed: 2 })
        const stalled = await new Promise(function stall (resolve) {
          const req = http.request(`${small.url}/express-json`, { method: 'POST', headers: { ...JSON_GZIP, 'content-length': body.length } }, function answered (res) {
            let text = ''
            res.on('data', function keep (c) { text += c })
            res.on('end', function done () { resolve({ status: res.statusCode, body: JSON.parse(text) }) })
          })
          req.on('error', function ignore () {})
          req.write(body.subarray(0, 1000))
        })
        assert.equal(stalled.status, 408)
        assert.equal(stalled.body.error.type, 'request.timeout')
        await new Promise(function hangUp (resolve) {
          const socket = net.connect(small.port, '127.0.0.1', function connected () {
            socket.write(`POST /express-json HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: ${body.length}\r\n\r\n`)
            socket.write(body.subarray(0, 2000), function written () { setTimeout(function cut () { socket.destroy(); resolve() }, 50) })
          })
        })
        await waitFor(function bothRecorded () { return seen.length === 2 })
      } finally {
        small.app.locals.events.off('request', onRequest)
      }
      assert.deepEqual(seen.map(function what (e) { return `${e.status} ${e.errorType}` }), ['408 request.timeout', '400 request.aborted'])
      assert.equal(small.app.locals.admission.state().reserved, 0)
    })
  })
})

describe('POST /express-json within the memory budget', function () {
  let lab
  let dataDir
  before(async function () {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-express-json-'))
    // about 160 MiB for one request, whatever this process holds now (the lab runs in it)
    const memoryBudget = Math.ceil((process.memoryUsage.rss() + 160 * MiB) / 0.9 / MiB) * MiB
    lab = await startLab({ dataDir, memoryBudget })
  })
  after(async function () {
    await lab.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('answers a body that fits', async function () {
    const res = await post(`${lab.url}/express-json`, zlib.gzipSync('{"items":[{"id":1},{"id":2}]}'), JSON_GZIP)
    assert.equal(res.status, 200, res.text)
    assert.equal(res.body.summary.idSum, '3')
  })

  it('refuses before reading a body whose Content-Length cannot fit twice', async function () {
    const answer = await claim(`${lab.url}/express-json`, { 'content-type': 'application/json', 'content-length': 200 * MiB })
    assert.equal(answer.status, 413)
    assert.equal(answer.body.error.type, 'memory.budget.exceeded')
    assert.equal(answer.body.error.route, 'express-json')
    assert.equal(answer.body.error.projected, 400 * MiB)
  })

  it('refuses a zip bomb with 413 memory.budget.exceeded while it inflates, before the 500 MiB limit', async function () {
    const bomb = await gzipOfSpaces(400 * MiB)
    const res = await post(`${lab.url}/express-json`, bomb, JSON_GZIP)
    assert.ok([413, 503].includes(res.status), res.text)
    assert.match(res.body.error.type, /^memory\./)
    assert.match(res.body.error.message, /inflated/)
    assert.equal(lab.app.locals.admission.state().reserved, 0, 'released')
  })

  it('refuses a dense document with 413 before JSON.parse runs, from body-parser\'s verify hook', async function () {
    const body = zlib.gzipSync('{"items":[[' + Array(Math.floor(4 * MiB / 3)).fill('{}').join(',') + ']]}')
    const res = await post(`${lab.url}/express-json`, body, JSON_GZIP)
    assert.equal(res.status, 413, res.text)
    assert.equal(res.body.error.type, 'memory.budget.exceeded')
    assert.match(res.body.error.message, /parsing this body/)
    assert.equal(lab.app.locals.admission.state().reserved, 0, 'released')
  })
})
