/**
 * /experiments: a real ingest run against this server's /bad and /good (and,
 * with route "all", /express-json and /streamparser-json) from a separate
 * load process, cancellation that leaves no process behind, and JSON errors
 * naming what was wrong. The engine behind it, on modules the specs control,
 * is test/experiment-engine.test.js's.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import zlib from 'node:zlib'
import { isEnd, watchRun } from './experiment-helpers.js'
import { labInTempDir } from './helpers.js'
import { processAlive } from '../lib/util/process-alive.js'

async function call (url, method = 'GET', body) {
  const init = { method }
  if (body !== undefined) {
    init.headers = { 'content-type': 'application/json' }
    init.body = typeof body === 'string' ? body : JSON.stringify(body)
  }
  const res = await fetch(url, init)
  return { status: res.status, headers: res.headers, body: await res.json() }
}

describe('/experiments', function () {
  const lab = labInTempDir('experiments')

  afterEach(async function () {
    // a failed spec must not leave a run loading the server for the next one
    const { body } = await call(`${lab.url}/experiments`)
    if (body.running) await call(`${lab.url}/experiments/${body.running}`, 'DELETE')
  })

  describe('GET /experiments', function () {
    it('lists ingest with the parameter schema a control panel is built from', async function () {
      const res = await call(`${lab.url}/experiments`)
      assert.equal(res.status, 200)
      assert.equal(res.body.running, null)
      assert.ok(Array.isArray(res.body.recent))
      const ingest = res.body.experiments.find(function byName (e) { return e.name === 'ingest' })
      assert.ok(ingest, 'ingest is listed')
      assert.equal(typeof ingest.title, 'string')
      assert.equal(typeof ingest.description, 'string')
      const names = ingest.params.map(function paramName (p) { return p.name })
      assert.deepEqual(names.sort(), ['bytes', 'concurrency', 'format', 'requests', 'route', 'size'])
      for (const p of ingest.params) {
        assert.equal(typeof p.label, 'string', `${p.name} has a label`)
        assert.equal(typeof p.help, 'string', `${p.name} has help`)
        assert.ok(['enum', 'integer', 'size'].includes(p.type), `${p.name} has a known type`)
      }
      const route = ingest.params.find(function isRoute (p) { return p.name === 'route' })
      assert.deepEqual(route.values, ['both', 'all', 'bad', 'good', 'express-json', 'streamparser-json'])
      assert.equal(route.default, 'both')
      for (const value of route.values) assert.equal(typeof route.valueLabels[value], 'string', value)
      assert.equal(route.valueLabels['streamparser-json'], '/streamparser-json (@streamparser/json)')
      assert.match(route.valueLabels.all, /\/express-json, then \/streamparser-json/)
      const concurrency = ingest.params.find(function isConcurrency (p) { return p.name === 'concurrency' })
      assert.deepEqual([concurrency.min, concurrency.max, concurrency.default], [1, 500, 1])
    })
  })

  describe('POST /experiments', function () {
    it('runs ingest on /bad then /good from a load process, and both give the same answer', async function () {
      this.timeout(60000)
      const watch = watchRun(lab.app.locals.events, isEnd)
      const res = await call(`${lab.url}/experiments`, 'POST', {
        name: 'ingest',
        params: { bytes: '200KB', concurrency: 2, requests: 4 }
      })
      assert.equal(res.status, 202, JSON.stringify(res.body))
      assert.equal(res.body.status, 'running')
      assert.equal(res.body.name, 'ingest')
      assert.deepEqual(res.body.params, { route: 'both', size: null, bytes: 200000, format: 'json', concurrency: 2, requests: 4 })
      assert.equal(res.headers.get('location'), `/experiments/${res.body.id}`)
      const { id } = res.body

      const seen = await watch.ended
      const mine = seen.filter(function ofThisRun (e) { return e.id === id })
      assert.equal(mine[0].phase, 'start')
      assert.ok(mine.some(function isLoadProgress (e) { return e.phase === 'progress' && e.stage === 'load' }), 'progress events')
      assert.equal(mine[mine.length - 1].phase, 'result', JSON.stringify(mine[mine.length - 1]))

      const run = (await call(`${lab.url}/experiments/${id}`)).body
      assert.equal(run.status, 'done', JSON.stringify(run.error))
      assert.deepEqual(run.progress.done, 8)
      assert.ok(run.endedAt >= run.startedAt)
      const { bad, good } = run.result.routes
      for (const route of [bad, good]) {
        assert.equal(route.requests, 4)
        assert.equal(route.ok, 4, JSON.stringify(route.errors))
        assert.deepEqual(route.errors, {})
        assert.equal(route.summariesAgree, true)
        assert.ok(route.mbPerSecond > 0)
        assert.ok(route.latencyMs.min > 0 && route.latencyMs.min <= route.latencyMs.max)
        assert.ok(route.server.peakRss > 0)
        assert.ok(route.server.peakRss >= route.server.idleRss || !route.server.peakReset)
      }
      assert.deepEqual(good.summary, bad.summary)
      assert.ok(good.summary.inflatedBytes >= 200000)
      assert.equal(good.summary.compressedBytes, run.result.input.compressedBytes)
      assert.equal(bad.inflatedBytes, 4 * bad.summary.inflatedBytes)
      assert.equal(run.result.summariesAgree, true)
      assert.ok(run.result.server.peakRss >= Math.max(bad.server.peakRss, good.server.peakRss))
      // the input was made in the app's data directory, not the project's
      assert.ok(fs.existsSync(path.join(lab.dataDir, 'bench', run.result.input.file)))
      // the machine's bound, measured apart on the body, and each route's share of it in the table
      assert.ok(run.result.bound.mbPerSecond > 0, JSON.stringify(run.result.bound))
      assert.equal(run.result.bound.body.format, 'json')
      for (const route of [bad, good]) assert.ok(Math.abs(route.boundShare - route.mbPerSecond / run.result.bound.mbPerSecond) < 0.01, JSON.stringify(route))
      const shares = run.result.tables[0].rows.find(function isShare (row) { return row.field === 'boundShare' })
      assert.match(shares.values.good, /^\d+ % of \d+\.\d MB\/s$/)
      // each route's CPU per GB (this lab process's, over its load), and the stages' own CPU per GB over it
      assert.ok(run.result.bound.cpuPerGB > 0, JSON.stringify(run.result.bound))
      for (const route of [bad, good]) {
        assert.ok(route.cpuPerGB > 0, JSON.stringify(route))
        assert.ok(Math.abs(route.cpuShare - run.result.bound.cpuPerGB / route.cpuPerGB) < 1e-9, JSON.stringify(route))
      }
      const cpu = run.result.tables[0].rows.find(function isCpuShare (row) { return row.field === 'cpuShare' })
      assert.match(cpu.values.good, /^\d+ % \(stages \d+\.\d\d s per GB\)$/)
      // the bound's process and one load process per route, each gone by the time the run is done
      assert.equal(run.pids.length, 3)
      for (const pid of run.pids) assert.equal(processAlive(pid), false, `load process ${pid} is gone`)

      const list = (await call(`${lab.url}/experiments`)).body
      assert.equal(list.running, null)
      assert.equal(list.recent[0].id, id)
      assert.equal(list.recent[0].status, 'done')
    })

    it('runs all four with route "all": /express-json and /streamparser-json give the same answer as /bad and /good', async function () {
      this.timeout(90000)
      const watch = watchRun(lab.app.locals.events, isEnd)
      const res = await call(`${lab.url}/experiments`, 'POST', {
        name: 'ingest',
        params: { route: 'all', bytes: '200KB', format: 'array', concurrency: 2, requests: 2 }
      })
      assert.equal(res.status, 202, JSON.stringify(res.body))
      await watch.ended
      const run = (await call(`${lab.url}/experiments/${res.body.id}`)).body
      assert.equal(run.status, 'done', JSON.stringify(run.error))
      assert.deepEqual(Object.keys(run.result.routes), ['bad', 'good', 'express-json', 'streamparser-json'])
      assert.equal(run.progress.done, 8)
      for (const route of ['express-json', 'streamparser-json']) {
        const figures = run.result.routes[route]
        assert.equal(figures.ok, 2, `${route}: ${JSON.stringify(figures.errors)}`)
        assert.equal(figures.summariesAgree, true, route)
        assert.ok(figures.server.peakRss > 0, route)
        assert.deepEqual(figures.summary, run.result.routes.bad.summary, route)
      }
      assert.equal(run.result.routes['streamparser-json'].summary.format, 'array')
      assert.equal(run.result.summariesAgree, true)
      assert.equal(run.pids.length, 5, "the bound's process and a load process per route")
      // the contract's presentation: a column per route, headed by what it is, and one verdict for all four
      const [table] = run.result.tables
      assert.deepEqual(table.columns.map(function heading (c) { return c.label }),
        ['POST /bad (buffered)', 'POST /good (streamed)', 'POST /express-json (express.json)', 'POST /streamparser-json (@streamparser/json)'])
      assert.deepEqual(run.result.verdicts.map(function text (v) { return v.text }),
        ['✔ Answers identical: every upload to all 4 routes gave the same summary.'])
    })

    it('runs /streamparser-json alone with route "streamparser-json", one load process, one column', async function () {
      this.timeout(60000)
      const watch = watchRun(lab.app.locals.events, isEnd)
      const res = await call(`${lab.url}/experiments`, 'POST', {
        name: 'ingest',
        params: { route: 'streamparser-json', bytes: '200KB', concurrency: 2, requests: 2 }
      })
      assert.equal(res.status, 202, JSON.stringify(res.body))
      await watch.ended
      const run = (await call(`${lab.url}/experiments/${res.body.id}`)).body
      assert.equal(run.status, 'done', JSON.stringify(run.error))
      assert.deepEqual(Object.keys(run.result.routes), ['streamparser-json'])
      const figures = run.result.routes['streamparser-json']
      assert.equal(figures.ok, 2, JSON.stringify(figures.errors))
      assert.equal(figures.summary.format, 'json')
      assert.ok(figures.summary.inflatedBytes >= 200000)
      assert.equal(run.result.summariesAgree, true)
      assert.equal(run.pids.length, 2, 'the bound\'s process and the load process')
    })

    it('answers 409 experiment.busy while another run is under way', async function () {
      this.timeout(30000)
      const first = await call(`${lab.url}/experiments`, 'POST', { name: 'ingest', params: { bytes: '1MB', requests: 1000 } })
      assert.equal(first.status, 202)
      const second = await call(`${lab.url}/experiments`, 'POST', { name: 'ingest', params: { bytes: '200KB' } })
      assert.equal(second.status, 409)
      assert.equal(second.body.error.type, 'experiment.busy')
      assert.equal(second.body.error.running, first.body.id)
      // the body is checked before the engine looks for a running run
      const invalid = await call(`${lab.url}/experiments`, 'POST', { name: 'ingest', params: { concurrency: 0 } })
      assert.equal(invalid.status, 400, 'a bad request is a 400 even while a run is going')
      assert.equal(invalid.body.error.parameter, 'params.concurrency')
      const unknown = await call(`${lab.url}/experiments`, 'POST', { name: 'teleport' })
      assert.equal(unknown.status, 400)
      assert.equal(unknown.body.error.type, 'experiment.unknown')
      const list = (await call(`${lab.url}/experiments`)).body
      assert.equal(list.running, first.body.id)
      const cancelled = await call(`${lab.url}/experiments/${first.body.id}`, 'DELETE')
      assert.equal(cancelled.status, 200)
      assert.equal(cancelled.body.status, 'cancelled')
    })

    const invalid = [
      { params: { concurrency: 0 }, parameter: 'params.concurrency' },
      { params: { concurrency: 501 }, parameter: 'params.concurrency' },
      { params: { requests: 1.5 }, parameter: 'params.requests' },
      { params: { route: 'x' }, parameter: 'params.route' },
      { params: { format: 'xml' }, parameter: 'params.format' },
      { params: { route: 'all', format: 'ndjson' }, parameter: 'params.format' },
      { params: { route: 'express-json', format: 'ndjson' }, parameter: 'params.format' },
      { params: { route: 'streamparser-json', format: 'ndjson' }, parameter: 'params.format' },
      { params: { bytes: '10 parsecs' }, parameter: 'params.bytes' },
      { params: { bytes: '1MB', size: 10 }, parameter: 'params.bytes' },
      { params: { colour: 'blue' }, parameter: 'params.colour' },
      { params: [1, 2], parameter: 'params' }
    ]
    for (const { params, parameter } of invalid) {
      it(`answers 400 parameter.invalid naming ${parameter} for ${JSON.stringify(params)}`, async function () {
        const res = await call(`${lab.url}/experiments`, 'POST', { name: 'ingest', params })
        assert.equal(res.status, 400)
        assert.equal(res.body.error.type, 'parameter.invalid')
        assert.equal(res.body.error.parameter, parameter)
        assert.equal(typeof res.body.error.allowed, 'string')
      })
    }

    it('answers 400 experiment.unknown for a name not in the registry', async function () {
      const res = await call(`${lab.url}/experiments`, 'POST', { name: 'teleport', params: {} })
      assert.equal(res.status, 400)
      assert.equal(res.body.error.type, 'experiment.unknown')
      assert.equal(res.body.error.name, 'teleport')
      assert.ok(res.body.error.known.includes('ingest'), JSON.stringify(res.body.error.known))
    })

    it('answers 400 parameter.invalid naming "name" when the name is missing', async function () {
      const res = await call(`${lab.url}/experiments`, 'POST', { params: {} })
      assert.equal(res.status, 400)
      assert.equal(res.body.error.parameter, 'name')
    })

    it('answers 400 parameter.invalid naming params.bytes for a depth zip bomb deeper than its maximum', async function () {
      const res = await call(`${lab.url}/experiments`, 'POST', { name: 'zip-bomb', params: { variant: 'depth', bytes: '1000GB' } })
      assert.equal(res.status, 400)
      assert.equal(res.body.error.type, 'parameter.invalid')
      assert.equal(res.body.error.parameter, 'params.bytes')
      assert.match(res.body.error.allowed, /at most 20000000060 bytes for the depth bomb/)
    })

    it('answers 400 parameter.invalid naming params.codec for members in br, and for zstd on a Node whose zlib has none', async function () {
      const cases = [[{ variant: 'members', codec: 'br' }, /members are gzip's/]]
      if (typeof zlib.zstdCompressSync !== 'function') cases.push([{ codec: 'zstd' }, /zstd bombs need a Node whose zlib has zstd \(22\.15\.0 and later\)/])
      for (const [params, allowed] of cases) {
        const res = await call(`${lab.url}/experiments`, 'POST', { name: 'zip-bomb', params })
        assert.equal(res.status, 400, JSON.stringify(params))
        assert.equal(res.body.error.parameter, 'params.codec')
        assert.match(res.body.error.allowed, allowed)
      }
      const big = await call(`${lab.url}/experiments`, 'POST', { name: 'zip-bomb', params: { codec: 'br', bytes: '200GB' } })
      assert.equal(big.status, 400)
      assert.match(big.body.error.allowed, /at most 100000000000 bytes for the ratio bomb in br/)
    })

    it('reads a body sent with Content-Encoding gzip, deflate or br', async function () {
      const json = JSON.stringify({ name: 'teleport' })
      const encodings = { gzip: zlib.gzipSync, deflate: zlib.deflateSync, br: zlib.brotliCompressSync }
      for (const [encoding, encode] of Object.entries(encodings)) {
        const res = await fetch(`${lab.url}/experiments`, {
          method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': encoding }, body: encode(json)
        })
        const body = await res.json()
        assert.equal(res.status, 400, encoding)
        assert.equal(body.error.type, 'experiment.unknown', `${encoding}: the body was read (${JSON.stringify(body)})`)
        assert.equal(body.error.name, 'teleport')
      }
    })

    const unreadable = [
      ['a charset that is not utf-*', { 'content-type': 'application/json; charset=latin1' }, JSON.stringify({ name: 'ingest' }), 415, 'charset.unsupported'],
      ['a Content-Encoding express.json does not know', { 'content-type': 'application/json', 'content-encoding': 'x-gzip' }, zlib.gzipSync('{}'), 415, 'encoding.unsupported'],
      ['a body that does not decode by its Content-Encoding', { 'content-type': 'application/json', 'content-encoding': 'gzip' }, 'not gzip', 400, 'request.invalid'],
      ['a body over 16 KiB', { 'content-type': 'application/json' }, JSON.stringify({ name: 'x'.repeat(17 * 1024) }), 413, 'entity.too.large']
    ]
    for (const [what, headers, body, status, type] of unreadable) {
      it(`answers ${status} ${type} to ${what}`, async function () {
        const res = await fetch(`${lab.url}/experiments`, { method: 'POST', headers, body })
        const answer = await res.json()
        assert.equal(res.status, status, JSON.stringify(answer))
        assert.deepEqual(Object.keys(answer.error).sort(), ['message', 'status', 'type'])
        assert.equal(answer.error.type, type)
        assert.equal(answer.error.status, status)
      })
    }

    it('answers a JSON 400 to a body that is not JSON', async function () {
      const res = await call(`${lab.url}/experiments`, 'POST', '{"name": "ingest",')
      assert.equal(res.status, 400)
      assert.equal(res.body.error.status, 400)
      assert.equal(typeof res.body.error.type, 'string')
    })
  })

  describe('DELETE /experiments/:id', function () {
    it('cancels a long run and leaves no load process behind', async function () {
      this.timeout(30000)
      const events = lab.app.locals.events
      const loading = watchRun(events, function firstLoadProgress (e) {
        return e.phase === 'progress' && e.stage === 'load' && e.done >= 1
      })
      const res = await call(`${lab.url}/experiments`, 'POST', {
        name: 'ingest',
        params: { route: 'bad', bytes: '1MB', concurrency: 1, requests: 1000 }
      })
      assert.equal(res.status, 202)
      const { id } = res.body
      await loading.ended
      const during = (await call(`${lab.url}/experiments/${id}`)).body
      assert.equal(during.status, 'running')
      // the bound's process, gone, then the load process
      assert.equal(during.pids.length, 2)
      assert.equal(processAlive(during.pids[0]), false, 'the bound\'s process is gone')
      assert.equal(processAlive(during.pids[1]), true, 'the load process runs')

      const ending = watchRun(events, function ended (e) { return e.id === id && isEnd(e) })
      const cancelled = await call(`${lab.url}/experiments/${id}`, 'DELETE')
      assert.equal(cancelled.status, 200)
      assert.equal(cancelled.body.status, 'cancelled')
      assert.ok(cancelled.body.progress.done < 1000)
      assert.equal(processAlive(during.pids[1]), false, 'the load process is gone')
      const last = (await ending.ended).at(-1)
      assert.equal(last.phase, 'cancelled')

      const after = (await call(`${lab.url}/experiments/${id}`)).body
      assert.equal(after.status, 'cancelled')
      assert.equal(after.result, null)
      assert.equal((await call(`${lab.url}/experiments`)).body.running, null)
    })

    it('answers 409 experiment.not.running for a run that has ended', async function () {
      this.timeout(30000)
      const watch = watchRun(lab.app.locals.events, isEnd)
      const res = await call(`${lab.url}/experiments`, 'POST', { name: 'ingest', params: { route: 'good', bytes: '200KB' } })
      assert.equal(res.status, 202)
      await watch.ended
      const again = await call(`${lab.url}/experiments/${res.body.id}`, 'DELETE')
      assert.equal(again.status, 409)
      assert.equal(again.body.error.type, 'experiment.not.running')
      assert.equal(again.body.error.status, 409)
      assert.equal(again.body.error.id, res.body.id)
      assert.equal(again.body.error.runStatus, 'done')
    })

    it('answers 404 experiment.not.found for an unknown id', async function () {
      const res = await call(`${lab.url}/experiments/no-such-run`, 'DELETE')
      assert.equal(res.status, 404)
      assert.equal(res.body.error.type, 'experiment.not.found')
    })
  })

  describe('GET /experiments/:id', function () {
    it('answers 404 experiment.not.found for an unknown id', async function () {
      const res = await call(`${lab.url}/experiments/no-such-run`)
      assert.equal(res.status, 404)
      assert.equal(res.body.error.type, 'experiment.not.found')
      assert.equal(res.body.error.id, 'no-such-run')
    })
  })
})
