/**
 * A grading kept as a run record (grader/card/card-record.js): its results
 * keep the result contract, read back by the rules every record is read by
 * (lib/runs/check.js), and line up in `npm run runs -- compare` as any run's:
 * each memory point's peak above idle by route and body size or uploads in
 * flight, and each route's MB/s. Cards made here, nothing graded.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { cardResults, saveCardRecord } from '../../grader/card/card-record.js'
import { validateResult } from '../../lib/experiments/result-contract.js'
import { readRunRecord } from '../../lib/runs/format.js'
import { compareRecords } from '../../lib/runs/compare.js'

const MiB = 1024 * 1024

/** A card as grade() returns it, with the details a record's figures come from. */
function gradedCard ({ peaks = [3, 9, 21], studentMBps = 17, loadError = null } = {}) {
  const check = function check (area, name, pass, details) {
    return { area, name, pass, figure: `figure of ${name}`, limit: 'l', meaning: 'm', hint: 'h', reason: null, ms: 10, details }
  }
  const sizes = [5.000_011, 19.999_93, 50.000_2]
  return {
    handler: 'exercises/01-stream/starter.js',
    preset: 'quick',
    seed: 7,
    areas: ['correctness', 'memory', 'speed'],
    labVersion: '0.1.0',
    digest: 'ab'.repeat(32),
    startedAt: '2026-11-27T10:00:00.000Z',
    ms: 60_000,
    passed: false,
    loadError,
    encodings: null,
    settings: {},
    lab: { restarts: 0, deaths: 0 },
    checks: loadError
      ? []
      : [
          check('correctness', 'generated documents', true, { answers: [] }),
          check('memory', 'growth against body size', false, {
            points: sizes.map(function point (x, k) { return { x, growthMiB: peaks[k], idleMiB: 40, ms: 100 } }),
            reference: { good: sizes.map(function point (x) { return { x, growthMiB: 2 } }), bad: sizes.map(function point (x) { return { x, growthMiB: null } }) }
          }),
          check('memory', 'growth against concurrency', true, { points: [{ x: 1, growthMiB: 2 }, { x: 8, growthMiB: 5 }], reference: null }),
          check('speed', 'throughput against /streamparser-json', true, { studentMBps, textbookMBps: 20, goodMBps: null, ratio: studentMBps / 20 })
        ]
  }
}

describe('a grading as a run record (grader/card/card-record.js)', function () {
  let dir

  before(function makeFolder () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-card-record-'))
  })

  after(function removeFolder () {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('keeps the result contract: the checks as a table, a verdict per area, the memory charts and the figures as cells', function () {
    const results = cardResults(gradedCard())
    assert.deepEqual(validateResult(results), [])
    assert.deepEqual(results.tables[0].rows.map(function verdict (r) { return `${r.label}: ${r.values.verdict}` }), [
      'correctness: generated documents: pass', 'memory: growth against body size: FAIL', 'memory: growth against concurrency: pass', 'speed: throughput against /streamparser-json: pass'
    ])
    assert.deepEqual(results.verdicts.map(function said (v) { return [v.text, v.ok] }), [
      ['correctness: 1/1 checks passed', true],
      ['memory: 1/2 checks passed; failed: growth against body size', false],
      ['speed: 1/1 checks passed', true]
    ])
    assert.equal(results.charts.length, 2)
    // a body size rounded so that two runs of one preset name it alike; a point not measured is left out
    assert.deepEqual(results.cells.filter(function sized (c) { return c.size !== undefined }).map(function key (c) { return `${c.route} ${c.size} ${c.peakAboveIdle / MiB}` }), [
      'student 5 MB 3', 'student 20 MB 9', 'student 50 MB 21', 'good 5 MB 2', 'good 20 MB 2', 'good 50 MB 2'
    ])
    assert.deepEqual(results.cells.filter(function fast (c) { return c.mbPerSecond !== undefined }), [{ route: 'student', mbPerSecond: 17 }, { route: 'streamparser-json', mbPerSecond: 20 }])
    assert.equal(results.details.card.seed, 7)
  })

  it('says why a module that did not load has no figures', function () {
    const results = cardResults(gradedCard({ loadError: 'starter.js did not load: SyntaxError' }))
    assert.deepEqual(results.verdicts, [{ verdict: 'did not load', text: 'starter.js did not load: SyntaxError', ok: false }])
    assert.deepEqual(validateResult(results), [])
  })

  it('writes a record every reader takes, from the grader, with no timeline', async function () {
    const saved = await saveCardRecord(gradedCard(), { dataDir: dir, keep: 5 })
    const record = readRunRecord(await fs.promises.readFile(saved.path), 'record')
    assert.equal(record.run.experiment, 'grade')
    assert.equal(record.run.source, 'grade')
    assert.equal(record.run.seed, 7)
    assert.equal(record.run.endedAt - record.run.startedAt, 60_000)
    assert.deepEqual(record.run.routes, ['student', 'good', 'streamparser-json'])
    assert.deepEqual(record.timeline.samples, [])
    assert.equal(await saveCardRecord(gradedCard(), { dataDir: dir, keep: 0 }), null)
  })

  it('compares a handler before and after a fix, size by size', async function () {
    const before = readRunRecord(await fs.promises.readFile((await saveCardRecord(gradedCard({ peaks: [3, 9, 21] }), { dataDir: dir, keep: 5 })).path), 'before')
    const after = readRunRecord(await fs.promises.readFile((await saveCardRecord(gradedCard({ peaks: [3, 3, 4], studentMBps: 34 }), { dataDir: dir, keep: 5 })).path), 'after')
    const rows = compareRecords(before, after).rows
    const row = function find (key, label) { return rows.find(function is (r) { return r.key === key && r.label === label }) }
    assert.equal(row('student 50 MB', 'peak above idle').ratio.toFixed(2), (4 / 21).toFixed(2))
    assert.equal(row('student', 'throughput').ratio, 2)
  })
})
