/**
 * GET /generate: the document streamed as asked, saved with ?save=1 through
 * writeAtomically (a whole file or none, paths shown relative to the
 * project), and its errors. The generator itself is test/generate.test.js's.
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import zlib from 'node:zlib'
import { createApp } from '../app.js'
import { displayPath, writeAtomically } from '../lib/util/atomic-file.js'
import { PROJECT_ROOT } from '../lib/config/options.js'
import { generatedJson, parseItems } from './helpers.js'

describe('writeAtomically', function atomicSpecs () {
  let dir

  beforeEach(async function makeDir () {
    dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'streamlab-atomic-'))
  })

  afterEach(async function removeDir () {
    await fs.promises.rm(dir, { recursive: true, force: true })
  })

  it('creates the directory and writes the whole file', async function writes () {
    const target = path.join(dir, 'a', 'b')
    const written = await writeAtomically(target, 'out.txt', Readable.from(['hello ', 'world']))
    assert.deepEqual(written, { path: path.join(target, 'out.txt'), bytes: 11 })
    assert.equal(await fs.promises.readFile(written.path, 'utf8'), 'hello world')
  })

  it('keeps the old file and leaves no temp file when the source fails', async function failure () {
    await fs.promises.writeFile(path.join(dir, 'out.txt'), 'old')
    async function * halfThenFail () {
      yield 'partial'
      throw new Error('source broke')
    }
    await assert.rejects(writeAtomically(dir, 'out.txt', Readable.from(halfThenFail())), /source broke/)
    assert.deepEqual(await fs.promises.readdir(dir), ['out.txt'])
    assert.equal(await fs.promises.readFile(path.join(dir, 'out.txt'), 'utf8'), 'old')
  })

  it('refuses a name with a directory part', async function refusesPaths () {
    await assert.rejects(writeAtomically(dir, '../escape.txt', Readable.from(['x'])), TypeError)
  })

  it('shows paths inside the project relative to it, others absolute', function paths () {
    assert.equal(displayPath(path.join(PROJECT_ROOT, 'test-data', 'test.json.gz')), path.join('test-data', 'test.json.gz'))
    assert.equal(displayPath(path.join(dir, 'x')), path.join(dir, 'x'))
  })
})

describe('GET /generate', function generateRouteSpecs () {
  let dataDir
  let server
  let app
  let base
  const closedResponses = []

  before(async function startServer () {
    dataDir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'streamlab-generate-'))
    app = createApp({ dataDir })
    server = http.createServer(app)
    server.on('request', function watchResponse (req, res) {
      res.once('close', function recordClose () {
        closedResponses.push({ url: req.url, finished: res.writableFinished })
      })
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    base = `http://127.0.0.1:${server.address().port}`
  })

  after(async function stopServer () {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
    await app.close()
    await fs.promises.rm(dataDir, { recursive: true, force: true })
  })

  async function getJson (query) {
    const res = await fetch(`${base}/generate?${query}`)
    return { status: res.status, body: await res.json() }
  }

  it('streams valid gzip with download headers and the requested items', async function streams () {
    const res = await fetch(`${base}/generate?size=250&seed=7`)
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('content-type'), 'application/gzip')
    assert.equal(res.headers.get('content-disposition'), 'attachment; filename="streamlab-json-250-seed7.json.gz"')
    assert.equal(res.headers.get('cache-control'), 'no-store')
    const text = zlib.gunzipSync(Buffer.from(await res.arrayBuffer())).toString('utf8')
    assert.equal(JSON.parse(text).items.length, 250)
    assert.equal(text, (await generatedJson({ size: 250, seed: 7 })).text)
  })

  it('names ndjson downloads .ndjson.gz and byte targets with a B', async function ndjsonDownload () {
    const res = await fetch(`${base}/generate?bytes=20KB&format=ndjson`)
    assert.equal(res.headers.get('content-disposition'), 'attachment; filename="streamlab-ndjson-20000B-seed1.ndjson.gz"')
    const text = zlib.gunzipSync(Buffer.from(await res.arrayBuffer())).toString('utf8')
    assert.ok(Buffer.byteLength(text) >= 20_000)
    assert.ok(parseItems(text, 'ndjson').length > 0)
  })

  it('saves with save=1 atomically and answers the figures', async function saves () {
    const { status, body } = await getJson('save=1&size=2000&seed=3&level=1')
    assert.equal(status, 200)
    const file = path.join(dataDir, 'test.json.gz')
    assert.deepEqual(Object.keys(body).sort(),
      ['compressedBytes', 'file', 'format', 'inflatedBytes', 'items', 'level', 'ms', 'path', 'seed'])
    assert.equal(body.path, file, 'a data dir outside the project is shown absolute')
    assert.equal(body.file, 'test.json.gz')
    assert.deepEqual([body.format, body.seed, body.level, body.items], ['json', 3, 1, 2000])
    assert.ok(Number.isInteger(body.ms) && body.ms >= 0)
    assert.deepEqual(await fs.promises.readdir(dataDir), ['test.json.gz'], 'no temp file left behind')
    const compressed = await fs.promises.readFile(file)
    assert.equal(compressed.length, body.compressedBytes)
    const inflated = zlib.gunzipSync(compressed)
    assert.equal(inflated.length, body.inflatedBytes)
    assert.equal(JSON.parse(inflated).items.length, 2000)
  })

  it('answers HEAD with save=1 with the headers of a save, and writes nothing', async function headSaves () {
    const file = path.join(dataDir, 'test.json.gz')
    await fs.promises.rm(file, { force: true })
    const res = await fetch(`${base}/generate?save=1&size=2000`, { method: 'HEAD' })
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8')
    assert.equal(res.headers.get('cache-control'), 'no-store')
    assert.equal(fs.existsSync(file), false, 'no file written')
    assert.deepEqual((await fs.promises.readdir(dataDir)).filter(function isTemp (name) { return name.includes('.tmp') }), [], 'no temp file either')
    const bad = await fetch(`${base}/generate?save=1&size=-1`, { method: 'HEAD' })
    assert.equal(bad.status, 400, 'the parameters are still checked')
  })

  it('saves each format under its fixed name, whatever else the query says', async function fixedNames () {
    const array = await getJson('save=true&size=10&format=array&file=../../escape.json.gz')
    assert.equal(array.body.file, 'test-array.json.gz')
    const ndjson = await getJson('save=1&size=10&format=ndjson&path=/etc/passwd')
    assert.equal(ndjson.body.file, 'test.ndjson.gz')
    const files = await fs.promises.readdir(dataDir)
    assert.ok(files.includes('test-array.json.gz') && files.includes('test.ndjson.gz'))
    assert.equal(fs.existsSync(path.join(dataDir, '..', '..', 'escape.json.gz')), false)
  })

  const badQueries = [
    ['size', 'size=-1'],
    ['size', 'size=1.5'],
    ['size', 'size=20000001'],
    ['format', 'format=xml'],
    ['seed', 'seed=4294967296'],
    ['seed', 'seed=abc'],
    ['level', 'level=10'],
    ['bytes', 'bytes=lots'],
    ['bytes', 'bytes=0'],
    ['bytes', 'bytes=9GiB'],
    ['save', 'save=maybe']
  ]
  for (const [parameter, query] of badQueries) {
    it(`answers 400 parameter.invalid naming ${parameter} for ?${query}`, async function badParameter () {
      const { status, body } = await getJson(query)
      assert.equal(status, 400)
      assert.equal(body.error.type, 'parameter.invalid')
      assert.equal(body.error.parameter, parameter)
      assert.equal(typeof body.error.allowed, 'string')
    })
  }

  it('answers 400 naming bytes when size and bytes come together', async function sizeAndBytes () {
    const { status, body } = await getJson('size=10&bytes=1MB')
    assert.equal(status, 400)
    assert.equal(body.error.type, 'parameter.invalid')
    assert.equal(body.error.parameter, 'bytes')
    assert.match(body.error.allowed, /not both/)
  })

  it('stops generating when the client aborts mid-download, and keeps serving', async function clientAborts () {
    const controller = new AbortController()
    const url = '/generate?bytes=8GiB&level=1'
    const res = await fetch(`${base}${url}`, { signal: controller.signal })
    const reader = res.body.getReader()
    const first = await reader.read()
    assert.ok(first.value.length > 0)
    controller.abort()
    await assert.rejects(reader.read(), { name: 'AbortError' })
    while (!closedResponses.some(function isAborted (closed) { return closed.url === url })) {
      await new Promise(function later (resolve) { setTimeout(resolve, 10) })
    }
    const aborted = closedResponses.find(function isAborted (closed) { return closed.url === url })
    assert.equal(aborted.finished, false)
    const next = await fetch(`${base}/generate?size=1`)
    assert.equal(next.status, 200)
    assert.equal(JSON.parse(zlib.gunzipSync(Buffer.from(await next.arrayBuffer()))).items.length, 1)
  })
})
