/**
 * lib/measure/bound.js: what one core does at each of /good's stages on a body held in memory, and
 * the bound the model makes of it. The stages run on a tiny body: the spec holds that each gives a
 * finite positive MB/s, never what it is (npm run bench -- bound measures that).
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import {
  STAGES, MODEL, boundOf, boundFraction, measureStages, measureBound, readBoundFile, stagesCpuPerGB
} from '../../lib/measure/bound.js'
import { generatedJson } from '../helpers.js'

const RATES = Object.freeze({ inflate: 400, parse: 100, sha256: 800, find: 400 })

function isRate (value) {
  return typeof value === 'number' && Number.isFinite(value) && value > 0
}

describe('the machine\'s bound (lib/measure/bound.js)', function () {
  describe('boundOf', function () {
    it('is the cores over the sum of the stages\' seconds per MB', function () {
      // 1/400 + 1/100 + 1/800 + 1/400 = 0.01625 s per MB
      assert.equal(boundOf(RATES, 1), 1 / 0.01625)
      assert.equal(boundOf(RATES, 2), 2 / 0.01625)
      assert.equal(boundOf(RATES), boundOf(RATES, 1), 'one core unless told')
      assert.equal(boundOf({ inflate: 100, parse: 100, sha256: 100, find: 100 }, 4), 100)
    })

    it('stays under the slowest stage on one core, whatever the others', function () {
      assert.ok(boundOf({ ...RATES, parse: 1 }, 1) < 1)
    })

    it('refuses a stage with no positive finite MB/s, naming it, and cores that are no positive integer', function () {
      for (const bad of [0, -1, Infinity, NaN, null, undefined, '100']) {
        assert.throws(function noRate () { boundOf({ ...RATES, sha256: bad }, 2) }, { name: 'TypeError', message: /the sha256 stage/ })
      }
      const { find, ...missing } = RATES
      assert.equal(find, 400)
      assert.throws(function noFind () { boundOf(missing, 2) }, /the find stage/)
      for (const cores of [0, 1.5, -2, '2']) assert.throws(function badCores () { boundOf(RATES, cores) }, { name: 'TypeError', message: /cores/ })
    })
  })

  describe('boundFraction', function () {
    it('is a route\'s MB/s over the bound, and null when either is missing', function () {
      assert.equal(boundFraction(50, 200), 0.25)
      assert.equal(boundFraction(0, 200), 0)
      assert.equal(boundFraction(300, 200), 1.5, 'past the bound is shown, not hidden')
      assert.equal(boundFraction(null, 200), null)
      assert.equal(boundFraction(50, null), null)
      assert.equal(boundFraction(50, 0), null)
      assert.equal(boundFraction(NaN, 200), null)
    })
  })

  describe('measureStages', function () {
    this.timeout(20000)

    for (const format of ['json', 'ndjson']) {
      it(`gives every stage a finite positive MB/s on a 200 KB ${format} body`, async function () {
        const { bytes: body } = await generatedJson({ bytes: 200e3, format })
        const gz = zlib.gzipSync(body)
        const events = []
        const cells = await measureStages({ gz, body, format, repeat: 2 }, function keep (event) { events.push(event) })
        assert.deepEqual(cells.map(function stage (c) { return c.stage }), [...STAGES])
        for (const c of cells) {
          assert.ok(isRate(c.mbPerSecond), `${c.stage}: ${c.mbPerSecond}`)
          assert.equal(c.runs.length, 2)
          assert.ok(c.runs.every(isRate), `${c.stage}: ${c.runs}`)
          assert.equal(c.secondsPerGB, 1000 / c.mbPerSecond)
        }
        assert.deepEqual(events.at(-1), { type: 'progress', done: 12, total: 12, label: 'done' }, 'a warm-up and two runs a stage')
      })
    }

    it('refuses a gzip that is not the body\'s, an empty body, a format it does not know', async function () {
      const { bytes: body } = await generatedJson({ bytes: 20e3, format: 'json' })
      await assert.rejects(measureStages({ gz: zlib.gzipSync(body.subarray(1)), body, format: 'json', repeat: 1 }), /inflates to/)
      await assert.rejects(measureStages({ gz: zlib.gzipSync(''), body: Buffer.alloc(0), format: 'json' }), TypeError)
      await assert.rejects(measureStages({ gz: zlib.gzipSync(body), body, format: 'xml' }), /format/)
      await assert.rejects(measureStages({ gz: zlib.gzipSync(body), body, format: 'json', repeat: 0 }), /repeat/)
    })
  })

  describe('measureBound and readBoundFile', function () {
    this.timeout(20000)

    it('holds the body, the stages, the cores, the bound and the one-core figure, and reads the bound back from a file', async function () {
      const { bytes: body } = await generatedJson({ bytes: 200e3, format: 'json' })
      const gz = zlib.gzipSync(body)
      const data = await measureBound({ gz, body, format: 'json', repeat: 1, cores: 3 })
      assert.deepEqual(data.body, { format: 'json', bytes: body.length, compressedBytes: gz.length })
      assert.equal(data.cores, 3)
      assert.equal(data.model, MODEL)
      const rates = Object.fromEntries(data.cells.map(function rate (c) { return [c.stage, c.mbPerSecond] }))
      assert.equal(data.bound, boundOf(rates, 3))
      assert.equal(data.singleCore, boundOf(rates, 1))
      assert.equal(data.stagesCpuPerGB, stagesCpuPerGB(data.cells), 'the stages\' CPU per GB, summed from their cells')
      for (const cell of data.cells) assert.ok(cell.cpuSecondsPerGB > 0, `${cell.stage} has its CPU per GB`)
      assert.equal((await measureBound({ gz, body, format: 'json', repeat: 1 })).cores, os.availableParallelism(), 'this machine\'s cores unless told')

      const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'streamlab-bound-'))
      try {
        const file = path.join(dir, 'bound.json')
        await fs.promises.writeFile(file, JSON.stringify(data))
        assert.deepEqual(readBoundFile(file), { mbPerSecond: data.bound, cores: 3, body: data.body, cpuPerGB: data.stagesCpuPerGB, file })
        await fs.promises.writeFile(file, JSON.stringify({ ...data, bound: 0 }))
        assert.throws(function noBound () { readBoundFile(file) }, { name: 'TypeError', message: /holds no bound and cores: write one with npm run bench -- bound --figures NAME/ })
        await fs.promises.writeFile(file, '{')
        assert.throws(function notJson () { readBoundFile(file) }, { name: 'TypeError', message: /bound\.json: .*JSON/ })
        assert.throws(function missing () { readBoundFile(path.join(dir, 'none.json')) }, /none\.json: no such file/)
      } finally {
        await fs.promises.rm(dir, { recursive: true, force: true })
      }
    })
  })
})
