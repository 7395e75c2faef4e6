/**
 * POST /bad and POST /good: the same answer, byte for byte, and the same
 * errors, as JSON from one handler.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import { pipeline } from 'node:stream/promises'
import { Writable } from 'node:stream'
import { startLab, post, postInChunks } from './helpers.js'
import { createGzipStream, createJsonStream } from '../lib/generate/items.js'
import { waitFor } from './helpers.js'

async function collect (readable) {
  const parts = []
  await pipeline(readable, new Writable({
    write: function keep (chunk, encoding, done) { parts.push(chunk); done() }
  }))
  return Buffer.concat(parts)
}

async function generated (params) {
  const { json, gzip } = createGzipStream(params)
  return collect(json.pipe(gzip))
}

async function generatedJson (params) {
  return collect(createJsonStream(params))
}

const ROUTES = ['bad', 'good']

describe('POST /bad and POST /good', function () {
  let lab
  before(async function () { lab = await startLab() })
  after(async function () { await lab.close() })

  for (const format of ['json', 'array', 'ndjson']) {
    it(`give the same summary for a generated ${format} body`, async function () {
      const body = await generated({ size: 3000, format, seed: 11 })
      const [bad, good] = await Promise.all(ROUTES.map(function send (route) { return post(`${lab.url}/${route}`, body) }))
      assert.equal(bad.status, 200, bad.text)
      assert.equal(good.status, 200, good.text)
      assert.equal(bad.body.route, 'bad')
      assert.equal(good.body.route, 'good')
      assert.deepEqual(good.body.summary, bad.body.summary)
      assert.equal(good.body.summary.format, format)
      assert.equal(good.body.summary.items, 3000)
      assert.equal(good.body.summary.idSum, String(3000 * 3001 / 2))
      assert.equal(good.body.summary.compressedBytes, body.length)
      assert.equal(good.body.summary.inflatedBytes, zlib.gunzipSync(body).length)
      assert.ok(good.body.summary.numbers >= 30000)
      assert.match(good.body.summary.sha256, /^[0-9a-f]{64}$/)
      assert.equal(typeof good.body.ms, 'number')
      assert.ok(good.body.memory.peakRss > 0)
    })
  }

  it('answer alike when the body arrives a byte at a time', async function () {
    this.timeout(60000)
    const body = await generated({ size: 40, format: 'json', seed: 3 })
    const want = (await post(`${lab.url}/bad`, body)).body.summary
    for (const route of ROUTES) {
      const got = await postInChunks(`${lab.url}/${route}`, body, 1)
      assert.equal(got.status, 200)
      assert.deepEqual(got.body.summary, want)
    }
  })

  it('accept JSON and NDJSON bodies sent with Content-Encoding: gzip', async function () {
    const json = zlib.gzipSync(await generatedJson({ size: 50, format: 'json' }))
    const ndjson = zlib.gzipSync(await generatedJson({ size: 50, format: 'ndjson' }))
    for (const route of ROUTES) {
      const a = await post(`${lab.url}/${route}`, json, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
      assert.equal(a.status, 200, a.text)
      assert.equal(a.body.summary.format, 'json')
      const b = await post(`${lab.url}/${route}`, ndjson, { 'content-type': 'application/x-ndjson', 'content-encoding': 'gzip' })
      assert.equal(b.status, 200, b.text)
      assert.equal(b.body.summary.format, 'ndjson')
      assert.equal(b.body.summary.items, 50)
    }
  })

  it('take the format from ?format= when it is named', async function () {
    const body = zlib.gzipSync('{"id":1}\n')
    for (const route of ROUTES) {
      const res = await post(`${lab.url}/${route}?format=ndjson`, body)
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.summary.items, 1)
      const wrong = await post(`${lab.url}/${route}?format=array`, body)
      assert.equal(wrong.status, 422)
      assert.equal(wrong.body.error.type, 'json.shape.invalid')
    }
  })

  it('accept a gzip body made of several members, as gzip allows', async function () {
    const body = Buffer.concat([zlib.gzipSync('{"items":[1,'), zlib.gzipSync('2,3]}')])
    for (const route of ROUTES) {
      const res = await post(`${lab.url}/${route}`, body)
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.summary.items, 3)
    }
  })

  it('answer an unknown path with a JSON 404', async function () {
    const res = await fetch(`${lab.url}/nowhere`)
    assert.equal(res.status, 404)
    const body = await res.json()
    assert.equal(body.error.type, 'route.not.found')
    assert.equal(body.error.path, '/nowhere')
  })

  describe('errors', function () {
    const gz = zlib.gzipSync('{"items":[{"id":1},{"id":2}]}')
    const cases = [
      { name: 'answers 400 gzip.invalid when the body is not gzip', body: Buffer.from('plain text'), status: 400, type: 'gzip.invalid' },
      { name: 'answers 400 gzip.truncated when the gzip stream is cut short', body: gz.subarray(0, gz.length - 6), status: 400, type: 'gzip.truncated' },
      { name: 'answers 400 gzip.truncated for an empty body', body: Buffer.alloc(0), status: 400, type: 'gzip.truncated' },
      { name: 'answers 422 json.invalid with the byte offset', body: zlib.gzipSync('{"items":[{"id":1},{"id":2,}]}'), status: 422, type: 'json.invalid', offset: 27 },
      { name: 'answers 422 json.invalid at the end of an unfinished document', body: zlib.gzipSync('{"items":[{"id":1}'), status: 422, type: 'json.invalid', offset: 18 },
      { name: 'answers 422 json.items.missing for an object without an items array', body: zlib.gzipSync('{"things":[]}'), status: 422, type: 'json.items.missing' },
      { name: 'answers 415 media.unsupported for another media type', body: gz, headers: { 'content-type': 'text/plain' }, status: 415, type: 'media.unsupported' },
      { name: 'answers 415 media.unsupported for JSON sent without gzip', body: Buffer.from('{"items":[]}'), headers: { 'content-type': 'application/json' }, status: 415, type: 'media.unsupported' },
      { name: 'answers 415 encoding.unsupported for an unknown Content-Encoding', body: gz, headers: { 'content-type': 'application/json', 'content-encoding': 'compress' }, status: 415, type: 'encoding.unsupported' },
      { name: 'answers 400 parameter.invalid for an unknown ?format=', body: gz, query: '?format=xml', status: 400, type: 'parameter.invalid' }
    ]
    for (const c of cases) {
      it(c.name, async function () {
        for (const route of ROUTES) {
          const res = await post(`${lab.url}/${route}${c.query ?? ''}`, c.body, c.headers)
          assert.equal(res.status, c.status, `${route}: ${res.text}`)
          assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8')
          assert.equal(res.body.error.type, c.type, route)
          assert.equal(res.body.error.status, c.status)
          assert.equal(typeof res.body.error.message, 'string')
          if (c.offset !== undefined) assert.equal(res.body.error.offset, c.offset, route)
        }
      })
    }
  })

  describe('limits', function () {
    let small
    before(async function () { small = await startLab({ limits: { compressed: 60_000, inflated: 100_000 } }) })
    after(async function () { await small.close() })

    it('answers 413 entity.too.large when Content-Length passes the compressed limit', async function () {
      const body = Buffer.alloc(70_000, 1)
      for (const route of ROUTES) {
        const res = await post(`${small.url}/${route}`, body)
        assert.equal(res.status, 413)
        assert.equal(res.body.error.type, 'entity.too.large')
        assert.equal(res.body.error.limit, 60_000)
      }
    })

    it('answers 413 entity.too.large when a chunked body passes the compressed limit', async function () {
      const body = await generated({ size: 2000, format: 'json', level: 0 })
      for (const route of ROUTES) {
        const res = await postChunked(`${small.url}/${route}`, body)
        assert.equal(res.status, 413)
        assert.equal(res.body.error.type, 'entity.too.large')
      }
    })

    it('answers 413 inflated.too.large when the inflated body passes its limit', async function () {
      const body = await generated({ size: 300, format: 'json' })
      assert.ok(body.length < 60_000, 'fixture must fit the compressed limit')
      for (const route of ROUTES) {
        const res = await post(`${small.url}/${route}`, body)
        assert.equal(res.status, 413, res.text)
        assert.equal(res.body.error.type, 'inflated.too.large')
        assert.equal(res.body.error.limit, 100_000)
      }
    })

    it('still serves the next request on the same server after refusing one', async function () {
      const res = await post(`${small.url}/good`, zlib.gzipSync('[1,2]'))
      assert.equal(res.status, 200)
    })
  })

  describe("the README's curl workflow", function () {
    let saved
    let dataDir
    before(async function () {
      dataDir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'streamlab-'))
      saved = await startLab({ dataDir })
    })
    after(async function () {
      await saved.close()
      await fs.promises.rm(dataDir, { recursive: true, force: true })
    })

    it('saves test.json.gz with /generate?save=1, then /bad and /good agree on it', async function () {
      const made = await (await fetch(`${saved.url}/generate?size=10000&save=1`)).json()
      assert.equal(made.items, 10000)
      const body = await fs.promises.readFile(path.join(dataDir, 'test.json.gz'))
      const headers = { 'content-type': 'application/octet-stream' }
      const bad = await post(`${saved.url}/bad`, body, headers)
      const good = await post(`${saved.url}/good`, body, headers)
      assert.equal(good.status, 200, good.text)
      assert.deepEqual(good.body.summary, bad.body.summary)
      assert.equal(good.body.summary.items, 10000)
      assert.equal(good.body.summary.inflatedBytes, made.inflatedBytes)
      assert.equal(good.body.summary.compressedBytes, made.compressedBytes)
    })
  })

  describe('a client that aborts mid-upload', function () {
    it('gets nothing and leaves no request, batch or socket behind', async function () {
      const body = await generated({ size: 20000, format: 'json', seed: 5 })
      const handlesBefore = process.getActiveResourcesInfo().length
      for (let k = 0; k < 10; k++) {
        await abortedUpload(`${lab.url}/good`, body.subarray(0, 20_000 + k * 5000))
        await abortedUpload(`${lab.url}/bad`, body.subarray(0, 20_000 + k * 5000))
      }
      // a batch already on a parse thread runs to its end after its request is gone: its budget comes back then
      await waitFor(function settled () { const now = lab.app.locals.ingest.snapshot(); return now.active === 0 && now.budgetUsed === 0 })
      assert.deepEqual(lab.app.locals.ingest.snapshot(), { active: 0, queued: 0, budgetUsed: 0, waiting: 0, gathering: 0 })
      const handlesAfter = process.getActiveResourcesInfo().length
      assert.ok(handlesAfter <= handlesBefore + 2, `active resources ${handlesBefore} -> ${handlesAfter}`)
      const res = await post(`${lab.url}/good`, body)
      assert.equal(res.status, 200)
    })
  })
})

function postChunked (url, body) {
  return new Promise(function sendChunked (resolve, reject) {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/gzip', 'transfer-encoding': 'chunked' } }, function onResponse (res) {
      const parts = []
      res.on('data', function onData (c) { parts.push(c) })
      res.on('end', function onEnd () { resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(parts)) }) })
    })
    req.on('error', reject)
    for (let i = 0; i < body.length; i += 4096) req.write(body.subarray(i, i + 4096))
    req.end()
  })
}

function abortedUpload (url, part) {
  return new Promise(function sendPart (resolve) {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/gzip', 'content-length': part.length * 4 } })
    req.on('error', function ignore () {})
    req.on('response', function unexpected () { resolve() })
    req.write(part, function written () {
      setTimeout(function abort () { req.destroy(); resolve() }, 20)
    })
  })
}
