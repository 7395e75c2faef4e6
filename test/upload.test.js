/**
 * POST /upload-buffer and POST /upload-stream: the file on disk is the
 * body, a failed or abandoned upload leaves no file, and the upload
 * experiment runs. That buffering costs memory in proportion to the uploads
 * in flight while streaming does not is test/slow/upload-bench.test.js's.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { listUploads, uploadDir } from '../experiments/upload/server.js'
import { assertCharts, assertPublished, call, runExperiment } from './experiment-helpers.js'
import { labInTempDir, startLab, postChunked } from './helpers.js'
import { processAlive } from '../lib/util/process-alive.js'

const UUID_NAME = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.upload$/
const LIMIT = 2 * 1024 * 1024

/** The next 'request' end event of a route on the lab's bus. */
function nextEnd (events, route) {
  return new Promise(function waitForEnd (resolve) {
    function onRequest (event) {
      if (event.phase === 'end' && event.route === route) {
        events.off('request', onRequest)
        resolve(event)
      }
    }
    events.on('request', onRequest)
  })
}

describe('upload routes', function () {
  const lab = labInTempDir('upload', { upload: { limit: LIMIT } })

  for (const route of ['upload-buffer', 'upload-stream']) {
    describe(`POST /${route}`, function () {
      afterEach(async function () {
        for (const name of await listUploads(lab.dataDir)) fs.rmSync(path.join(uploadDir(lab.dataDir), name))
      })

      it('writes the body to a server-named file and answers { route, bytes, ms, file }', async function () {
        const body = randomBytes(300_000)
        const res = await fetch(`${lab.url}/${route}`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body })
        assert.equal(res.status, 200)
        const answer = await res.json()
        assert.deepEqual(Object.keys(answer).sort(), ['bytes', 'file', 'ms', 'route'])
        assert.equal(answer.route, route)
        assert.equal(answer.bytes, body.length)
        assert.ok(answer.ms >= 0)
        assert.match(answer.file, UUID_NAME)
        assert.ok(fs.readFileSync(path.join(uploadDir(lab.dataDir), answer.file)).equals(body), 'the file is the body')
      })

      it('answers 413 entity.too.large when Content-Length passes the limit, and writes nothing', async function () {
        const res = await fetch(`${lab.url}/${route}`, { method: 'POST', body: Buffer.alloc(LIMIT + 1) })
        assert.equal(res.status, 413)
        const { error } = await res.json()
        assert.equal(error.type, 'entity.too.large')
        assert.equal(error.limit, LIMIT)
        assert.equal(error.received, LIMIT + 1)
        assert.deepEqual(await listUploads(lab.dataDir), [])
      })

      it('answers 413 entity.too.large when a chunked body passes the limit mid-stream, and leaves no file', async function () {
        const piece = Buffer.alloc(512 * 1024, 7)
        const res = await postChunked(`${lab.url}/${route}`, [piece, piece, piece, piece, piece])
        assert.equal(res.status, 413)
        assert.equal(res.body.error.type, 'entity.too.large')
        assert.ok(res.body.error.received > LIMIT)
        assert.deepEqual(await listUploads(lab.dataDir), [])
      })

      it('leaves no partial file behind when the client hangs up mid-body', async function () {
        const ended = nextEnd(lab.app.locals.events, route)
        const req = http.request(`${lab.url}/${route}`, { method: 'POST', headers: { 'content-length': String(LIMIT) } })
        req.on('error', function expected () {})
        req.write(Buffer.alloc(256 * 1024, 1))
        if (route === 'upload-stream') {
          // the streamed file exists while the body arrives: the hang-up must remove it
          for (let k = 0; k < 200 && (await listUploads(lab.dataDir)).length === 0; k++) {
            await new Promise(function wait (resolve) { setTimeout(resolve, 10) })
          }
          assert.equal((await listUploads(lab.dataDir)).length, 1, 'the partial file was being written')
        } else {
          await new Promise(function wait (resolve) { setTimeout(resolve, 100) })
        }
        req.destroy()
        const event = await ended
        assert.equal(event.status, 400)
        assert.equal(event.errorType, 'request.aborted')
        assert.deepEqual(await listUploads(lab.dataDir), [])
        // and the server carries on
        const res = await fetch(`${lab.url}/${route}`, { method: 'POST', body: Buffer.from('after') })
        assert.equal(res.status, 200)
      })
    })
  }
})

describe('the parts of uploads a killed worker was writing', function () {
  it('are removed by the next lab on that data directory, while a live process\'s parts and finished uploads stay', async function () {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-parts-'))
    const dir = uploadDir(dataDir)
    fs.mkdirSync(dir, { recursive: true })
    // a process id that has just ended, as a worker's does when the memory budget kills it
    const deadPid = spawnSync(process.execPath, ['-e', '']).pid
    const names = {
      dead: `${randomUUID()}.${deadPid}.part`,
      live: `${randomUUID()}.${process.ppid}.part`,
      done: `${randomUUID()}.upload`
    }
    for (const name of Object.values(names)) fs.writeFileSync(path.join(dir, name), 'x')
    const lab = await startLab({ dataDir })
    try {
      assert.deepEqual(await lab.app.locals.partsRemoved, [names.dead])
      assert.deepEqual(fs.readdirSync(dir).sort(), [names.done, names.live].sort())
      assert.deepEqual((await listUploads(dataDir)).sort(), [names.done, names.live].sort())
    } finally {
      await lab.close()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe('the upload experiment', function () {
  const lab = labInTempDir('upload-exp')

  it('is listed by GET /experiments with its parameter schema', async function () {
    const { body } = await call(`${lab.url}/experiments`)
    const upload = body.experiments.find(function byName (e) { return e.name === 'upload' })
    assert.ok(upload, 'upload is listed')
    assert.deepEqual(upload.params.map(function paramName (p) { return p.name }), ['route', 'concurrency', 'sweep', 'bytes'])
    for (const p of upload.params) assert.ok(['enum', 'integer', 'size'].includes(p.type), p.name)
  })

  it('runs streamed then buffered cells from a load process and deletes every file it made', async function () {
    this.timeout(30000)
    const run = await runExperiment(lab.url, 'upload', { concurrency: 4, bytes: '1MB' })
    assert.equal(run.status, 'done', JSON.stringify(run.error))
    const cells = run.result.cells
    assert.deepEqual(cells.map(function key (c) { return `${c.route}@${c.concurrency}` }), ['stream@1', 'stream@4', 'buffer@1', 'buffer@4'])
    for (const cell of cells) {
      assert.equal(cell.ok, cell.concurrency, JSON.stringify(cell.errors))
      assert.equal(cell.allBytesWritten, true)
      assert.ok(cell.latencyMs.min > 0 && cell.latencyMs.min <= cell.latencyMs.avg && cell.latencyMs.avg <= cell.latencyMs.max)
      assert.ok(cell.server.peakRss > 0)
    }
    assertCharts(assert, run.result.charts)
    assert.deepEqual(run.result.charts.map(function title (c) { return c.title }),
      ['Server peak RSS vs concurrent uploads', 'Average upload latency vs concurrent uploads'])
    assertPublished(assert, run.result.published)
    assert.deepEqual(run.result.published.map(function value (p) { return p.value }), [2890, 13.1, 276, 4])
    assert.deepEqual(await listUploads(lab.dataDir), [], 'no upload is left behind')
    for (const pid of run.pids) assert.equal(processAlive(pid), false)
  })

  it('stops when cancelled: no load process and no upload left behind', async function () {
    this.timeout(30000)
    const started = await call(`${lab.url}/experiments`, 'POST', {
      name: 'upload', params: { route: 'stream', concurrency: 20, sweep: 'single', bytes: '24MB' }
    })
    assert.equal(started.status, 202)
    const { id } = started.body
    let state
    do {
      await new Promise(function wait (resolve) { setTimeout(resolve, 50) })
      state = (await call(`${lab.url}/experiments/${id}`)).body
    } while (state.status === 'running' && (state.progress.stage !== 'load' || (await listUploads(lab.dataDir)).length === 0))
    assert.equal(state.status, 'running', 'still uploading when cancelled')
    const cancelled = await call(`${lab.url}/experiments/${id}`, 'DELETE')
    assert.equal(cancelled.body.status, 'cancelled')
    for (const pid of cancelled.body.pids) assert.equal(processAlive(pid), false)
    // the server removes the partial files of the uploads it was receiving as their sockets close
    for (let k = 0; k < 100 && (await listUploads(lab.dataDir)).length > 0; k++) {
      await new Promise(function wait (resolve) { setTimeout(resolve, 20) })
    }
    assert.deepEqual(await listUploads(lab.dataDir), [])
  })

  const invalid = [
    [{ concurrency: 201 }, 'params.concurrency'],
    [{ bytes: '300MiB' }, 'params.bytes'],
    [{ bytes: '100MB', concurrency: 200 }, 'params.bytes'],
    [{ route: 'both ways' }, 'params.route'],
    [{ sweep: 'up' }, 'params.sweep'],
    [{ colour: 'red' }, 'params.colour']
  ]
  for (const [params, parameter] of invalid) {
    it(`answers 400 parameter.invalid naming ${parameter} for ${JSON.stringify(params)}`, async function () {
      const res = await call(`${lab.url}/experiments`, 'POST', { name: 'upload', params })
      assert.equal(res.status, 400)
      assert.equal(res.body.error.type, 'parameter.invalid')
      assert.equal(res.body.error.parameter, parameter)
    })
  }
})
