/**
 * POST /express-json: express.json() with the lab's inflated limit gives
 * the summary /bad and /good give, maps body-parser's errors to the lab's,
 * stops a zip bomb at the limit, and keeps the memory budget's rules.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { startLab, post, postInChunks, waitFor } from './helpers.js'
import { createGzipStream } from '../generators/items.js'

const MiB = 1024 * 1024
const JSON_GZIP = Object.freeze({ 'content-type': 'application/json', 'content-encoding': 'gzip' })
const PLAIN_JSON = Object.freeze({ 'content-type': 'application/json' })

async function collect (readable) {
  const parts = []
  await pipeline(readable, new Writable({
    write: function keep (chunk, encoding, done) { parts.push(chunk); done() }
  }))
  return Buffer.concat(parts)
}

function generated (params) {
  const { json, gzip } = createGzipStream(params)
  return collect(json.pipe(gzip))
}

/** gzip of `bytes` spaces, made a MiB at a time: the lab runs in this process, and counts its RSS. */
function gzipOfSpaces (bytes) {
  const mib = Buffer.alloc(MiB, 0x20)
  return collect(Readable.from((function * spaces () { for (let k = 0; k < bytes / MiB; k++) yield mib })()).pipe(zlib.createGzip({ level: 9 })))
}

/** A body sent in pieces without Content-Length, `pieces` written one per tick. */
function postChunked (url, pieces, headers) {
  return new Promise(function send (resolve, reject) {
    const req = http.request(url, { method: 'POST', headers }, function onResponse (res) {
      const parts = []
      res.on('data', function keep (c) { parts.push(c) })
      res.on('end', function done () { resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(parts).toString()) }) })
    })
    req.on('error', reject)
    let k = 0
    function writeNext () {
      if (k === pieces.length) return req.end()
      req.write(pieces[k++])
      setImmediate(writeNext)
    }
    writeNext()
  })
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

  for (const format of ['json', 'array']) {
    it(`gives the summary /bad and /good give for a generated ${format} document`, async function () {
      const body = await generated({ size: 3000, format, seed: 11 })
      const [bad, good, json] = await Promise.all([
        post(`${lab.url}/bad`, body),
        post(`${lab.url}/good`, body),
        post(`${lab.url}/express-json`, body, JSON_GZIP)
      ])
      assert.equal(json.status, 200, json.text)
      assert.equal(json.body.route, 'express-json')
      assert.deepEqual(json.body.summary, bad.body.summary)
      assert.deepEqual(json.body.summary, good.body.summary)
      assert.equal(json.body.summary.format, format)
      assert.equal(json.body.summary.items, 3000)
      assert.equal(json.body.summary.compressedBytes, body.length)
      assert.equal(typeof json.body.ms, 'number')
      assert.ok(json.body.memory.peakRss > 0)
    })
  }

  it('takes plain JSON too, as express.json does: the same figures, its compressed bytes the inflated ones', async function () {
    const body = await generated({ size: 500, format: 'json', seed: 4 })
    const plain = zlib.gunzipSync(body)
    const bad = await post(`${lab.url}/bad`, body)
    const json = await post(`${lab.url}/express-json`, plain, PLAIN_JSON)
    assert.equal(json.status, 200, json.text)
    assert.deepEqual(json.body.summary, { ...bad.body.summary, compressedBytes: plain.length })
  })

  it('gives the same answer when the body arrives a few bytes at a time, or chunked', async function () {
    this.timeout(60000)
    const body = await generated({ size: 40, format: 'json', seed: 3 })
    const want = (await post(`${lab.url}/bad`, body)).body.summary
    const slow = await postInChunks(`${lab.url}/express-json`, body, 7, JSON_GZIP)
    assert.equal(slow.status, 200)
    assert.deepEqual(slow.body.summary, want)
    const pieces = []
    for (let i = 0; i < body.length; i += 1000) pieces.push(body.subarray(i, i + 1000))
    const chunked = await postChunked(`${lab.url}/express-json`, pieces, JSON_GZIP)
    assert.equal(chunked.status, 200)
    assert.deepEqual(chunked.body.summary, want)
  })

  it('takes the format from ?format=json or ?format=array, and refuses the wrong shape as /bad does', async function () {
    const body = zlib.gzipSync('[{"id":1},{"id":2}]')
    const ok = await post(`${lab.url}/express-json?format=array`, body, JSON_GZIP)
    assert.equal(ok.status, 200, ok.text)
    assert.equal(ok.body.summary.items, 2)
    for (const route of ['bad', 'express-json']) {
      const wrong = await post(`${lab.url}/${route}?format=json`, body, JSON_GZIP)
      assert.equal(wrong.status, 422)
      assert.equal(wrong.body.error.type, 'json.items.missing')
    }
  })

  it('goes out on the lab\'s event bus like /bad and /good, refusals included', async function () {
    const seen = []
    function onRequest (event) { if (event.route === 'express-json') seen.push(event) }
    lab.app.locals.events.on('request', onRequest)
    try {
      const body = zlib.gzipSync('{"items":[{"id":5}]}')
      await post(`${lab.url}/express-json`, body, JSON_GZIP)
      await post(`${lab.url}/express-json`, zlib.gzipSync('{"items":['), JSON_GZIP)
      await waitFor(function bothEnded () { return seen.filter(function isEnd (e) { return e.phase === 'end' }).length === 2 })
    } finally {
      lab.app.locals.events.off('request', onRequest)
    }
    const [start, end, , refused] = seen
    assert.equal(start.phase, 'start')
    assert.equal(start.compressedBytes, end.compressedBytes)
    assert.deepEqual([end.phase, end.status, end.items], ['end', 200, 1])
    assert.deepEqual([refused.phase, refused.status, refused.errorType], ['end', 422, 'json.invalid'])
  })

  describe('errors', function () {
    const gz = zlib.gzipSync('{"items":[{"id":1},{"id":2}]}')
    const cases = [
      { name: 'answers 422 json.invalid at the offset /bad gives', body: zlib.gzipSync('{"items":[{"id":1},{"id":2,}]}'), status: 422, type: 'json.invalid', offset: 27, same: true },
      { name: 'answers 422 json.invalid at the end of an unfinished document', body: zlib.gzipSync('{"items":[{"id":1}'), status: 422, type: 'json.invalid', offset: 18, same: true },
      { name: 'answers 422 json.invalid for an empty document (express.json would take it for {})', body: zlib.gzipSync(''), status: 422, type: 'json.invalid', offset: 0, same: true },
      { name: 'answers 422 json.invalid for no body at all', body: Buffer.alloc(0), headers: PLAIN_JSON, status: 422, type: 'json.invalid', offset: 0 },
      { name: 'answers 422 json.items.missing for a document of another shape (strict: false)', body: zlib.gzipSync('"items"'), status: 422, type: 'json.items.missing', same: true },
      { name: 'answers 400 gzip.truncated when the gzip stream is cut short', body: gz.subarray(0, gz.length - 6), status: 400, type: 'gzip.truncated', same: true },
      { name: 'answers 400 gzip.invalid when the body is not gzip', body: Buffer.from('plain text'), status: 400, type: 'gzip.invalid', same: true },
      { name: 'answers 400 gzip.invalid for garbage after the gzip member', body: Buffer.concat([gz, Buffer.from('xyz')]), status: 400, type: 'gzip.invalid' },
      { name: 'answers 415 media.unsupported for the gzip file as application/octet-stream', body: gz, headers: { 'content-type': 'application/octet-stream' }, status: 415, type: 'media.unsupported', message: /Content-Encoding: gzip/ },
      { name: 'answers 415 media.unsupported for NDJSON, saying where it goes', body: gz, headers: { 'content-type': 'application/x-ndjson', 'content-encoding': 'gzip' }, status: 415, type: 'media.unsupported', message: /NDJSON to \/bad or \/good/ },
      { name: 'answers 400 parameter.invalid for ?format=ndjson, saying where it goes', body: gz, query: '?format=ndjson', status: 400, type: 'parameter.invalid', message: /NDJSON goes to \/bad or \/good/ },
      { name: 'answers 422 json.invalid for an NDJSON body, saying it looks like NDJSON', body: zlib.gzipSync('{"id":1}\n{"id":2}\n'), status: 422, type: 'json.invalid', offset: 9, message: /looks like NDJSON/ },
      { name: 'answers 415 encoding.unsupported for another Content-Encoding', body: gz, headers: { ...JSON_GZIP, 'content-encoding': 'br' }, status: 415, type: 'encoding.unsupported' },
      { name: 'answers 415 encoding.unsupported for two gzip layers', body: zlib.gzipSync(gz), headers: { ...JSON_GZIP, 'content-encoding': 'gzip, gzip' }, status: 415, type: 'encoding.unsupported' },
      { name: 'answers 415 charset.unsupported for a charset other than UTF-8', body: gz, headers: { ...JSON_GZIP, 'content-type': 'application/json; charset=latin1' }, status: 415, type: 'charset.unsupported' }
    ]
    for (const c of cases) {
      it(c.name, async function () {
        const res = await post(`${lab.url}/express-json${c.query ?? ''}`, c.body, c.headers ?? JSON_GZIP)
        assert.equal(res.status, c.status, res.text)
        assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8')
        assert.equal(res.body.error.type, c.type)
        assert.equal(res.body.error.status, c.status)
        if (c.offset !== undefined) assert.equal(res.body.error.offset, c.offset)
        if (c.message) assert.match(res.body.error.message, c.message)
        if (c.same) {
          const bad = await post(`${lab.url}/bad`, c.body)
          assert.deepEqual(res.body.error, bad.body.error, 'the same error as /bad')
        }
      })
    }

    it('never answers 5xx to a damaged body: every truncation and a byte flipped at every position', async function () {
      this.timeout(60000)
      const body = zlib.gzipSync('{"items":[{"id":1,"numbers":[1.5,-2e3]},{"id":2,"s":"é"}]}')
      const bodies = []
      for (let n = 0; n < body.length; n++) bodies.push(body.subarray(0, n))
      for (let i = 0; i < body.length; i++) {
        const flipped = Buffer.from(body)
        flipped[i] ^= 0x41
        bodies.push(flipped)
      }
      for (const damaged of bodies) {
        const res = await post(`${lab.url}/express-json`, damaged, JSON_GZIP)
        assert.ok(res.status === 200 || (res.status >= 400 && res.status < 500), `${res.status} ${res.text}`)
        assert.equal(res.status === 200 ? typeof res.body.summary : typeof res.body.error.type, res.status === 200 ? 'object' : 'string')
      }
      assert.equal(lab.app.locals.admission.state().reserved, 0)
    })

    it('takes a UTF-8 byte order mark, which /bad and /good refuse: iconv-lite drops it before JSON.parse', async function () {
      const body = zlib.gzipSync('\ufeff{"items":[{"id":1}]}')
      const res = await post(`${lab.url}/express-json`, body, JSON_GZIP)
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.summary.inflatedBytes, 23, 'the mark counts in the inflated bytes and the sha256')
      const bad = await post(`${lab.url}/bad`, body)
      assert.equal(bad.body.error.type, 'json.invalid')
    })
  })

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
      const res = await postChunked(`${small.url}/express-json`, pieces, JSON_GZIP)
      assert.equal(res.status, 413)
      assert.equal(res.body.error.type, 'entity.too.large')
      assert.equal(res.body.error.limit, 600_000)
    })

    it('answers 408 request.timeout to a body that stalls, and records a client that hangs up', async function () {
      const seen = []
      function onRequest (event) { if (event.route === 'express-json' && event.phase === 'end') seen.push(event) }
      small.app.locals.events.on('request', onRequest)
      try {
        const body = await generated({ size: 2000, format: 'json', seed: 2 })
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
