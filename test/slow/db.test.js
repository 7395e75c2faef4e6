/**
 * The database export: GET /db/batch, GET /db/stream and GET /db/status on
 * the embedded PGlite (in memory), or on the PostgreSQL server in
 * STREAMLAB_TEST_DATABASE_URL when it is set (.ci/run does that too).
 * Same rows in the same order both ways, backpressure from a slow reader to
 * the cursor, a client that hangs up, bad parameters, a database that is down.
 * The options are test/db-options.test.js's; the export on a lab open to the
 * network is test/slow/db-remote.test.js's.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { once } from 'node:events'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import pg from 'pg'
import { seedDatabase } from '../../lib/db/seed.js'
import { expectedRow } from '../seeded-rows.js'
import { timeInBrowser } from '../../dashboard/db-export-browser.js'
import { REAL_URL, SIZES, closedPortUrl, embeddedUrl, getJson, ndjsonRows, runExperiment, settled, statusWhen, waitForDeath } from '../db-helpers.js'
import { startLab } from '../helpers.js'
import { procAvailable } from '../../lib/util/platform.js'

const SEED_CLI = fileURLToPath(new URL('../../generators/db-seed.js', import.meta.url))
const run = promisify(execFile)

describe(`database export (${REAL_URL ? 'PostgreSQL from STREAMLAB_TEST_DATABASE_URL' : 'embedded PGlite, in memory'})`, function () {
  let lab
  let dataDir

  before(async function () {
    this.timeout(90_000)
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-db-'))
    if (REAL_URL) {
      // a real server keeps its data between runs: make sure it holds these sizes
      const client = new pg.Client({ connectionString: REAL_URL })
      await client.connect()
      try {
        await seedDatabase(client, SIZES)
      } finally {
        await client.end()
      }
    }
    lab = await startLab({
      dataDir,
      database: REAL_URL ? { url: REAL_URL, seed: SIZES } : { pgliteDir: 'memory://', seed: SIZES }
    })
    // the first request starts (and seeds) the database
    const first = await getJson(`${lab.url}/db/batch?limit=1`)
    assert.equal(first.status, 200, first.text)
  })

  after(async function () {
    this.timeout(30_000)
    await lab?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  describe('GET /db/batch', function () {
    it('answers the page of the join asked for, ordered by item id', async function () {
      const res = await getJson(`${lab.url}/db/batch?offset=10&limit=5`)
      assert.equal(res.status, 200)
      assert.match(res.headers.get('content-type'), /^application\/json/)
      assert.match(res.headers.get('server-timing'), /^db;dur=/)
      assert.deepEqual(res.body, [11, 12, 13, 14, 15].map(function row (id) { return expectedRow(id, SIZES.desks) }))
    })

    it('answers an empty array past the last item', async function () {
      const res = await getJson(`${lab.url}/db/batch?offset=${SIZES.items}&limit=10`)
      assert.equal(res.status, 200)
      assert.deepEqual(res.body, [])
    })

    it('shows each batch in GET /db/status with the bytes of the JSON it sent', async function () {
      const res = await fetch(`${lab.url}/db/batch?offset=20&limit=7`)
      assert.equal(res.status, 200)
      const sent = Buffer.from(await res.arrayBuffer())
      assert.equal(Number(res.headers.get('content-length')), sent.length)
      const status = await statusWhen(lab.url, settled)
      const record = status.exports.recent.find(function thisBatch (e) { return e.mode === 'batch' && e.offset === 20 && e.limit === 7 })
      assert.ok(record, JSON.stringify(status.exports.recent))
      assert.equal(record.outcome, 'done')
      assert.equal(record.rows, 7)
      assert.equal(record.bytes, sent.length)
    })

    it('pays the pg_sleep asked for, once per request', async function () {
      const started = performance.now()
      const res = await getJson(`${lab.url}/db/batch?limit=1&sleep=0.25`)
      assert.equal(res.status, 200)
      assert.ok(performance.now() - started >= 240, 'slept a quarter second')
    })
  })

  describe('GET /db/stream', function () {
    it('streams the same rows in the same order as consecutive batches', async function () {
      const pages = []
      for (let offset = 0; offset < 3000; offset += 1000) {
        pages.push(...(await getJson(`${lab.url}/db/batch?offset=${offset}&limit=1000`)).body)
      }
      const stream = await getJson(`${lab.url}/db/stream?limit=3000&highWaterMark=97`)
      assert.equal(stream.status, 200)
      assert.match(stream.headers.get('content-type'), /^application\/json/)
      assert.equal(stream.body.length, 3000)
      assert.deepEqual(stream.body, pages)
      // one row per line: what lets a page parse the array as it arrives
      assert.ok(stream.text.startsWith('[\n{"id":1,'))
      assert.equal(stream.text.split('\n').length, 3000 + 3)
    })

    it('streams NDJSON for Accept: application/x-ndjson or ?format=ndjson, and honours offset', async function () {
      const batch = (await getJson(`${lab.url}/db/batch?offset=500&limit=700`)).body
      const byAccept = await fetch(`${lab.url}/db/stream?offset=500&limit=700&highWaterMark=64`, { headers: { accept: 'application/x-ndjson' } })
      assert.equal(byAccept.status, 200)
      assert.match(byAccept.headers.get('content-type'), /^application\/x-ndjson/)
      assert.deepEqual(ndjsonRows(await byAccept.text()), batch)
      const byQuery = await fetch(`${lab.url}/db/stream?offset=500&limit=700&format=ndjson`)
      assert.deepEqual(ndjsonRows(await byQuery.text()), batch)
    })

    it('answers an empty array for limit=0', async function () {
      const res = await getJson(`${lab.url}/db/stream?limit=0`)
      assert.equal(res.status, 200)
      assert.deepEqual(res.body, [])
    })

    it('releases the cursor and the connection when the client hangs up mid-stream', async function () {
      await new Promise(function hangUpAfterFirstBytes (resolve, reject) {
        const req = http.get(`${lab.url}/db/stream?limit=${SIZES.items}&highWaterMark=50`, function onResponse (res) {
          assert.equal(res.statusCode, 200)
          res.once('data', function first () {
            req.destroy()
            resolve()
          })
        })
        req.on('error', function ignoreOwnAbort (err) {
          if (err.code !== 'ECONNRESET') reject(err)
        })
      })
      const status = await statusWhen(lab.url, settled)
      assert.ok(settled(status), `pool and exports settle: ${JSON.stringify({ pool: status.pool, active: status.exports.active })}`)
      const ended = status.exports.recent.find(function streamed (e) { return e.mode === 'stream' })
      assert.equal(ended.outcome, 'client closed')
      assert.ok(ended.rows < SIZES.items, `stopped early (${ended.rows} rows encoded)`)
      // the connection is fit for the next request: no half-read portal left on it
      const next = await getJson(`${lab.url}/db/stream?limit=3`)
      assert.equal(next.status, 200)
      assert.deepEqual(next.body.map(function id (r) { return r.id }), [1, 2, 3])
    })

    it('holds a bounded buffer while the client reads slowly, and the cursor waits', async function () {
      const highWaterMark = 100
      const socket = net.connect(lab.port, '127.0.0.1')
      await once(socket, 'connect')
      socket.write(`GET /db/stream?limit=${SIZES.items}&highWaterMark=${highWaterMark} HTTP/1.1\r\nHost: 127.0.0.1:${lab.port}\r\nConnection: close\r\n\r\n`)
      // not a byte read: once the kernel's socket buffers are full, only backpressure keeps the server's memory flat
      socket.pause()
      let stalled = null
      for (let k = 0; k < 60 && stalled === null; k++) {
        await delay(100)
        const [a] = (await getJson(`${lab.url}/db/status`)).body.exports.active
        await delay(200)
        const [b] = (await getJson(`${lab.url}/db/status`)).body.exports.active
        if (a && b && a.id === b.id && a.rows === b.rows && a.rows > 0) stalled = b
      }
      assert.ok(stalled, 'the export stalled while nobody read')
      assert.ok(stalled.rows < SIZES.items, `stalled part-way (${stalled.rows} of ${SIZES.items} rows)`)
      assert.ok(stalled.maxBufferedBytes <= 128 * 1024, `server-side bytes bounded: ${stalled.maxBufferedBytes}`)
      assert.ok(stalled.maxBufferedRows <= 2 * highWaterMark + 16, `rows bounded by about highWaterMark: ${stalled.maxBufferedRows}`)
      let received = 0
      socket.on('data', function count (chunk) { received += chunk.length })
      socket.resume()
      await once(socket, 'end')
      const done = (await statusWhen(lab.url, settled)).exports.recent.find(function byId (e) { return e.id === stalled.id })
      assert.equal(done.outcome, 'done')
      assert.equal(done.rows, SIZES.items)
      assert.ok(received > done.bytes, 'every byte arrived, headers and chunk framing on top')
      assert.ok(done.maxBufferedBytes <= 128 * 1024, `still bounded at the end: ${done.maxBufferedBytes}`)
    })
  })

  describe('the embedded database process', function () {
    it('answers 503 database.unavailable naming the database when it dies before the first row of a stream', async function () {
      if (REAL_URL) this.skip()
      this.timeout(60_000)
      const pid = (await getJson(`${lab.url}/db/status`)).body.embedded.pid
      const answer = getJson(`${lab.url}/db/stream?limit=1&sleep=5`)
      // the export holds its connection (and sleeps) once it is listed as active
      const active = await statusWhen(lab.url, function exporting (status) { return status.exports.active.length === 1 })
      assert.equal(active.exports.active.length, 1, 'the export started')
      process.kill(pid, 'SIGKILL')
      const res = await answer
      assert.equal(res.status, 503, res.text)
      assert.equal(res.body.error.type, 'database.unavailable')
      assert.equal(res.body.error.database, 'embedded')
      assert.equal(typeof res.body.error.cause, 'string')
      // the lab hears of the death when the process has gone; until then, on a busy machine,
      // a connection can still reach the dying one (see waitForDeath)
      await waitForDeath(lab.url, pid)
      const next = await getJson(`${lab.url}/db/batch?offset=4&limit=1`)
      assert.equal(next.status, 200, `the next request starts it again: ${next.text}`)
      assert.deepEqual(next.body, [expectedRow(5, SIZES.desks)])
    })

    it('is started again after it dies mid-stream, and the lab keeps serving', async function () {
      if (REAL_URL) this.skip()
      this.timeout(60_000)
      const before = (await getJson(`${lab.url}/db/status`)).body.embedded.pid
      assert.equal(typeof before, 'number', 'the embedded database runs')
      const cut = await new Promise(function killAfterFirstBytes (resolve, reject) {
        const req = http.get(`${lab.url}/db/stream?limit=${SIZES.items}&highWaterMark=50`, function onResponse (res) {
          res.once('data', function first () {
            process.kill(before, 'SIGKILL')
            res.on('data', function drain () {})
            res.on('end', function ended () { resolve('ended') })
            res.on('error', function aborted () { resolve('cut') })
          })
        })
        req.on('error', reject)
      })
      assert.equal(cut, 'cut', 'the half-sent array is cut, not ended as if complete')
      await waitForDeath(lab.url, before)
      const after = await getJson(`${lab.url}/db/batch?offset=99&limit=1`)
      assert.equal(after.status, 200, after.text)
      assert.deepEqual(after.body, [expectedRow(100, SIZES.desks)])
      const status = await statusWhen(lab.url, settled)
      assert.notEqual(status.embedded.pid, before)
      assert.ok(settled(status), `pool and exports settle: ${JSON.stringify({ pool: status.pool, active: status.exports.active })}`)
    })
  })

  describe('parameters', function () {
    const cases = [
      ['/db/batch?limit=abc', 'limit'],
      ['/db/batch?limit=-1', 'limit'],
      ['/db/batch?limit=20000000', 'limit'],
      ['/db/batch?offset=1.5', 'offset'],
      ['/db/batch?sleep=99', 'sleep'],
      ['/db/batch?sleep=soon', 'sleep'],
      ['/db/batch?limit=1&limit=2', 'limit'],
      ['/db/stream?highWaterMark=0', 'highWaterMark'],
      ['/db/stream?format=xml', 'format'],
      ['/db/stream?limit=x', 'limit']
    ]
    for (const [route, parameter] of cases) {
      it(`answers 400 parameter.invalid naming "${parameter}" for ${route}`, async function () {
        const res = await getJson(`${lab.url}${route}`)
        assert.equal(res.status, 400)
        assert.equal(res.body.error.type, 'parameter.invalid')
        assert.equal(res.body.error.parameter, parameter)
      })
    }
  })

  describe('GET /db/status', function () {
    it('shows the pool, the seed and, embedded, the database process', async function () {
      const { status, body } = await getJson(`${lab.url}/db/status`)
      assert.equal(status, 200)
      assert.equal(body.state, 'ready')
      assert.deepEqual([body.seed.desks, body.seed.items], [SIZES.desks, SIZES.items])
      assert.ok(body.pool.total >= 1)
      if (REAL_URL) {
        assert.equal(body.kind, 'postgres')
        const password = new URL(REAL_URL).password
        if (password) assert.ok(!body.target.includes(`:${password}@`), 'no password shown')
      } else {
        assert.equal(body.kind, 'embedded')
        assert.equal(body.target, 'embedded PGlite (in memory)', 'named, not located (test/slow/db-door.test.js)')
        assert.equal(body.pool.max, 1, 'pglite-socket: one connection')
        assert.ok(Number.isInteger(body.embedded.pid) && body.embedded.pid !== process.pid)
        // another process's memory is read from /proc: on Linux only, outside portable mode (docs/install.md)
        if (procAvailable()) assert.ok(body.embedded.rss > 0)
        else assert.equal(body.embedded.rss, null, 'not measured where there is no /proc, never a made-up figure')
        assert.equal(body.embedded.auth, 'SCRAM-SHA-256')
        assert.equal('port' in body.embedded || 'dir' in body.embedded, false)
      }
    })
  })

  describe('timeInBrowser (dashboard/db-export-browser.js)', function () {
    it('times batch and stream exports and sees every row in order', async function () {
      const batch = await timeInBrowser({ baseUrl: lab.url, mode: 'batch', rows: 2500, batch: 1000 })
      assert.deepEqual([batch.requests, batch.received, batch.inOrder], [3, 2500, true])
      const stream = await timeInBrowser({ baseUrl: lab.url, mode: 'stream', rows: 2500, highWaterMark: 100 })
      assert.deepEqual([stream.requests, stream.received, stream.inOrder], [1, 2500, true])
      for (const t of [batch, stream]) {
        assert.ok(t.firstRowMs > 0 && t.firstRowMs <= t.totalMs)
        assert.ok(t.bytes > 2500 * 100)
      }
      await assert.rejects(timeInBrowser({ baseUrl: lab.url, mode: 'stream', rows: 1, highWaterMark: 0 }), TypeError)
    })
  })

  describe('the db-export experiment', function () {
    it('runs batches and streams from a client process and reports times, memory, charts and the published figures', async function () {
      this.timeout(60_000)
      const state = await runExperiment(lab.url, { name: 'db-export', params: { rows: 3000, batchSizes: '3000,300', highWaterMarks: '50,3000' } })
      assert.equal(state.status, 'done', JSON.stringify(state.error))
      const { result } = state
      assert.equal(result.cells.length, 4)
      assert.deepEqual(result.cells.map(function requests (c) { return c.requests }), [1, 10, 1, 1])
      for (const cell of result.cells) {
        assert.ok(cell.totalMs > 0, 'timed')
        assert.ok(cell.measurements[0].server.peakRss > 0, 'server memory measured')
        if (!REAL_URL && procAvailable()) assert.ok(cell.measurements[0].database.peakRss > 0, 'database process memory measured')
        if (!REAL_URL && !procAvailable()) assert.equal(cell.measurements[0].database.peakRss, null, 'not measured without /proc')
      }
      assert.ok(result.charts.length >= 3)
      for (const chart of result.charts) {
        assert.equal(typeof chart.title, 'string')
        assert.ok(chart.series.every(function hasPoints (s) { return s.points.length > 0 }))
      }
      const crossover = result.published.find(function isCrossover (p) { return p.value === 10 })
      assert.deepEqual(Object.keys(crossover).sort(), ['label', 'measured', 'source', 'unit', 'value'])
      assert.ok(result.server.peakRss > 0)
    })

    it('refuses more rows than are seeded, naming params.rows', async function () {
      const res = await fetch(`${lab.url}/experiments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'db-export', params: { rows: SIZES.items + 1, mode: 'stream', highWaterMarks: '1000' } })
      })
      const { id } = await res.json()
      let state
      do {
        await delay(100)
        state = (await getJson(`${lab.url}/experiments/${id}`)).body
      } while (state.status === 'running')
      assert.equal(state.status, 'failed')
      assert.equal(state.error.parameter, 'params.rows')
    })
  })

  describe('npm run db:seed', function () {
    it('does nothing for the sizes already there, and reseeds other sizes', async function () {
      this.timeout(60_000)
      // the embedded database, reached as any PostgreSQL server through its private socket and password
      // (the lab's own process may ask for them; GET /db/status never shows them); the lab is idle, so its
      // one session is free. In the environment, not on the command line, where ps would show the password
      const url = REAL_URL ?? embeddedUrl(lab.app.locals.database.embeddedConnection())
      const env = { ...process.env, DATABASE_URL: url }
      const same = await run(process.execPath, [SEED_CLI, '--desks', String(SIZES.desks), '--items', String(SIZES.items)], { env })
      assert.match(same.stdout, /already holds 2000 desks and 100000 items: nothing to do/)
      const other = await run(process.execPath, [SEED_CLI, '--desks', '10', '--items', '50'], { env })
      assert.match(other.stdout, /seeded .*: 10 desks, 50 items/)
      assert.match(other.stderr, /db:seed: 100\.0%/, 'plain progress lines when not on a terminal')
      const back = await run(process.execPath, [SEED_CLI, '--desks', String(SIZES.desks), '--items', String(SIZES.items), '--quiet', ...(REAL_URL ? ['--database-url', REAL_URL] : [])], { env })
      assert.match(back.stdout, /seeded/)
      await assert.rejects(run(process.execPath, [SEED_CLI, '--items', 'many']), function usage (err) {
        assert.equal(err.code, 2)
        assert.match(err.stderr, /--items takes a whole number/)
        return true
      })
    })
  })
})

describe('database unavailable', function () {
  let lab

  before(async function () {
    lab = await startLab({ database: { url: await closedPortUrl(), connectTimeoutMs: 2000 } })
  })
  after(async function () {
    await lab.close()
  })

  it('answers 503 database.unavailable with a clear message, and keeps serving', async function () {
    for (const route of ['/db/batch?limit=1', '/db/stream?limit=1']) {
      const res = await getJson(`${lab.url}${route}`)
      assert.equal(res.status, 503, route)
      assert.equal(res.body.error.type, 'database.unavailable')
      assert.match(res.body.error.message, /database is unavailable \(postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres\): .*ECONNREFUSED/)
      assert.equal(res.body.error.cause, 'ECONNREFUSED')
    }
    const status = await getJson(`${lab.url}/db/status`)
    assert.equal(status.status, 200)
    assert.equal(status.body.state, 'failed')
    assert.match(status.body.error, /ECONNREFUSED/)
  })
})
