/**
 * GET /files/chunk: every read size and mode serves the file byte for
 * byte (string mode included, with characters cut across reads), bad
 * parameters get a JSON 400, and the experiment and bench run at small scale.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { CHUNK_FILE_BYTES, HWM_STEPS, chunkFileContent } from '../experiments/chunk-size/server.js'
import * as chunkBench from '../experiments/chunk-size/bench.js'
import { assertCharts, assertPublished, call, runExperiment } from './experiment-helpers.js'
import { labInTempDir } from './helpers.js'
import { processAlive } from '../lib/util/process-alive.js'

describe('GET /files/chunk', function () {
  const lab = labInTempDir('chunk')
  const expected = chunkFileContent(CHUNK_FILE_BYTES)

  it('serves a file of whole UTF-8 characters, some cut in two by every read size', function () {
    assert.equal(expected.length, CHUNK_FILE_BYTES)
    const text = new TextDecoder('utf-8', { fatal: true }).decode(expected)
    assert.match(text, /数据流/)
    assert.match(text, /🚀/)
    for (const hwm of HWM_STEPS.slice(0, -1)) {
      // a byte at a read boundary that continues a multi-byte character
      const cut = Array.from({ length: CHUNK_FILE_BYTES / hwm - 1 }, function boundary (_, k) { return (k + 1) * hwm })
        .some(function splitsCharacter (at) { return (expected[at] & 0xc0) === 0x80 })
      assert.ok(cut, `${hwm}-byte reads cut a character`)
    }
  })

  for (const mode of ['buffer', 'string']) {
    for (const hwm of HWM_STEPS) {
      it(`serves the file byte for byte with hwm=${hwm}&mode=${mode}`, async function () {
        const res = await fetch(`${lab.url}/files/chunk?hwm=${hwm}&mode=${mode}`)
        assert.equal(res.status, 200)
        assert.equal(res.headers.get('content-length'), String(CHUNK_FILE_BYTES))
        const body = Buffer.from(await res.arrayBuffer())
        assert.ok(body.equals(expected), 'the bytes served are the file')
      })
    }
  }

  it('makes the file once, in <lab.dataDir>/chunk-size/', function () {
    const files = fs.readdirSync(path.join(lab.dataDir, 'chunk-size'))
    assert.deepEqual(files, [`text-${CHUNK_FILE_BYTES}B.txt`])
  })

  it('defaults to 64 KiB Buffer reads', async function () {
    const res = await fetch(`${lab.url}/files/chunk`)
    assert.equal(res.status, 200)
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(expected))
  })

  it('answers HEAD with the headers of its GET, Cache-Control: no-store included, and no body', async function () {
    const get = await fetch(`${lab.url}/files/chunk?hwm=4096&mode=string`)
    await get.arrayBuffer()
    const head = await fetch(`${lab.url}/files/chunk?hwm=4096&mode=string`, { method: 'HEAD' })
    assert.equal(head.status, 200)
    for (const name of ['content-type', 'content-length', 'cache-control']) {
      assert.equal(head.headers.get(name), get.headers.get(name), name)
    }
    assert.equal(head.headers.get('cache-control'), 'no-store')
    assert.equal((await head.arrayBuffer()).byteLength, 0)
  })

  const invalid = [
    ['hwm=12', 'hwm'],
    ['hwm=abc', 'hwm'],
    ['hwm=-1024', 'hwm'],
    ['hwm=99999999', 'hwm'],
    ['hwm=1024&hwm=4096', 'hwm'],
    ['mode=utf16', 'mode'],
    ['mode=', 'mode']
  ]
  for (const [query, parameter] of invalid) {
    it(`answers 400 parameter.invalid naming ${parameter} for ?${query}`, async function () {
      const res = await fetch(`${lab.url}/files/chunk?${query}`)
      assert.equal(res.status, 400)
      const { error } = await res.json()
      assert.equal(error.type, 'parameter.invalid')
      assert.equal(error.parameter, parameter)
    })
  }
})

describe('the chunk-size experiment', function () {
  const lab = labInTempDir('chunk-exp')

  it('is listed by GET /experiments with its parameter schema', async function () {
    const { body } = await call(`${lab.url}/experiments`)
    const experiment = body.experiments.find(function byName (e) { return e.name === 'chunk-size' })
    assert.ok(experiment, 'chunk-size is listed')
    assert.deepEqual(experiment.params.map(function paramName (p) { return p.name }), ['hwm', 'mode', 'concurrency', 'requests'])
    const hwm = experiment.params.find(function isHwm (p) { return p.name === 'hwm' })
    assert.deepEqual(hwm.values, ['all', '1024', '4096', '16384', '65536', '262144', '1048576'])
  })

  it('downloads every setting whole from a load process, and strings are not much faster than Buffers', async function () {
    this.timeout(60000)
    const run = await runExperiment(lab.url, 'chunk-size', { concurrency: 8, requests: 16 })
    assert.equal(run.status, 'done', JSON.stringify(run.error))
    const { cells } = run.result
    assert.equal(cells.length, HWM_STEPS.length * 2)
    for (const cell of cells) {
      assert.equal(cell.ok, 16, `${cell.mode} ${cell.hwm}: ${JSON.stringify(cell.errors)}`)
      assert.equal(cell.bytes, 16 * CHUNK_FILE_BYTES)
      assert.ok(cell.mibPerSecond > 0)
      assert.ok(cell.server.peakRss > 0)
    }
    // expected: Buffers 1.5x to 3x faster. Asserted only that strings are not far ahead, summed over all sizes.
    function total (mode) {
      return cells.filter(function ofMode (c) { return c.mode === mode }).reduce(function add (s, c) { return s + c.mibPerSecond }, 0)
    }
    assert.ok(total('string') < 1.5 * total('buffer'), `strings ${total('string')} vs Buffers ${total('buffer')} MiB/s summed`)
    assertCharts(assert, run.result.charts)
    assert.equal(run.result.charts[0].logX, true)
    assert.deepEqual(run.result.charts[0].series.map(function label (s) { return s.label }), ['Buffer chunks', 'strings (utf8)'])
    assertPublished(assert, run.result.published)
    for (const pid of run.pids) assert.equal(processAlive(pid), false)
  })

  it('answers 400 parameter.invalid naming params.hwm for a size off the list', async function () {
    const res = await call(`${lab.url}/experiments`, 'POST', { name: 'chunk-size', params: { hwm: '12345' } })
    assert.equal(res.status, 400)
    assert.equal(res.body.error.parameter, 'params.hwm')
  })
})

describe('npm run bench -- chunk-size', function () {
  it('measures each setting on a fresh server and writes a table and charts', async function () {
    this.timeout(60000)
    const values = {}
    for (const [key, spec] of Object.entries(chunkBench.options)) values[key] = spec.default
    const opts = chunkBench.normalize({ ...values, hwm: '4KiB,64KiB', concurrency: '4', requests: '8', repeat: '1' })
    const result = await chunkBench.run(opts, function quiet () {})
    assert.equal(result.data.cells.length, 4)
    for (const cell of result.data.cells) {
      assert.equal(cell.ok, 8, JSON.stringify(cell.errors))
      assert.ok(cell.server.peakRss > 0)
    }
    assert.match(result.markdown, /\| mode +\| highWaterMark/)
    assert.match(result.markdown, /Buffers .*x the MiB\/s of strings/)
    assertCharts(assert, result.charts)
  })
})
