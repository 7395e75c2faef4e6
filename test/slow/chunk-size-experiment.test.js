/**
 * The chunk-size experiment and its bench, at small scale: every setting
 * downloaded whole from a load process, the table and the charts. The route
 * they measure, GET /files/chunk, is test/chunk-size.test.js's.
 */
import assert from 'node:assert/strict'
import { CHUNK_FILE_BYTES, HWM_STEPS } from '../../experiments/chunk-size/server.js'
import * as chunkBench from '../../experiments/chunk-size/bench.js'
import { assertCharts, assertPublished, call, runExperiment } from '../experiment-helpers.js'
import { labInTempDir } from '../helpers.js'
import { processAlive } from '../../lib/util/process-alive.js'

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
