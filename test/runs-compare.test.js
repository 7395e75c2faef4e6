/**
 * Two runs compared (lib/runs/figures.js, compare.js, scripts/runs.js): each route's peak above
 * idle, throughput and p99 latency from the result contract's tables and cells, the ratio and
 * the difference, whether it is inside the spread of the repeats, and the `--fail-if` rules
 * whose exit code guards memory in CI. The CLI runs as a person runs it, on records in a
 * folder of the spec's own.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { figuresOf } from '../lib/runs/figures.js'
import { compareRecords, judgeFailIf, parseFailIf, spreadVerdict } from '../lib/runs/compare.js'
import { benchResults } from '../lib/runs/bench.js'
import { makeTestRecord, routesResult } from './runs-helpers.js'

const MiB = 1024 * 1024
const CLI = fileURLToPath(new URL('../scripts/runs.js', import.meta.url))
const execFileAsync = promisify(execFile)

/** Run the CLI; resolves with its exit code and output, whatever the code. */
async function runs (...args) {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [CLI, ...args])
    return { code: 0, stdout, stderr }
  } catch (err) {
    return { code: err.code, stdout: err.stdout, stderr: err.stderr }
  }
}

/** An ingest bench's record: cells of /bad and /good of each size at x1, each with its three repeats. */
function benchRecord (id, peaks, sizes = ['10MB']) {
  function cell (route, size, values) {
    const measurements = values.map(function measured (peak) { return { peakAboveIdle: peak, reqPerSecond: 2, mbPerSecond: 20, latencyMs: { avg: 400, p99: 500 } } })
    const sorted = [...values].sort(function byNumber (a, b) { return a - b })
    return { route, size, bytes: 1e7, format: 'json', concurrency: 1, mode: 'counted', runs: values.length, peakAboveIdle: sorted[1], reqPerSecond: 2, mbPerSecond: 20, latencyP99Ms: 500, measurements }
  }
  const cells = sizes.flatMap(function ofSize (size) { return [cell('bad', size, peaks.bad), cell('good', size, peaks.good)] })
  return makeTestRecord({
    id,
    source: 'bench',
    samples: [],
    marks: [],
    results: benchResults({ title: 'Buffered vs streamed ingest', data: { cells, verdicts: [{ size: '10MB', verdict: 'meets' }] } })
  })
}

describe('two runs compared', function () {
  const a = makeTestRecord({ id: 'run-a', results: routesResult({ bad: { peak: 60 * MiB, mbps: 40, p99: 300, avg: 250 }, good: { peak: 4 * MiB, mbps: 80, p99: 150 } }) }).record
  const b = makeTestRecord({ id: 'run-b', results: routesResult({ bad: { peak: 66 * MiB, mbps: 38, p99: 330, avg: 260 }, good: { peak: 5 * MiB, mbps: 80, p99: 120 } }) }).record

  describe('figures (lib/runs/figures.js)', function () {
    it('reads a route\'s figures from the contract\'s tables, a "Latency avg / p99" row as latency.avg and latency.p99', function () {
      const figures = figuresOf(a)
      assert.deepEqual([...figures.keys()], ['bad|mbPerSecond', 'bad|peakAboveIdle', 'bad|latency.avg', 'bad|latency.p99', 'good|mbPerSecond', 'good|peakAboveIdle', 'good|latency.avg', 'good|latency.p99'])
      assert.deepEqual(figures.get('bad|peakAboveIdle'), { key: 'bad', route: 'bad', name: 'peakAboveIdle', unit: 'bytes', value: 60 * MiB, min: null, max: null, n: 1 })
      assert.equal(figures.get('good|latency.p99').unit, 'ms')
    })

    it('reads a bench\'s cells, with the range of their repeats, keyed by route as a run of the engine is', function () {
      const figures = figuresOf(benchRecord('bench', { bad: [50 * MiB, 52 * MiB, 58 * MiB], good: [4 * MiB, 4 * MiB, 5 * MiB] }).record)
      assert.deepEqual(figures.get('bad|peakAboveIdle'), { key: 'bad', route: 'bad', name: 'peakAboveIdle', unit: 'bytes', value: 52 * MiB, min: 50 * MiB, max: 58 * MiB, n: 3 })
      assert.equal(figures.get('bad|latency.p99').value, 500)
      assert.equal(figures.get('bad|latency.p99').n, 3)
    })

    it('keys the cells of a sweep by what tells them apart: route, and size where sizes differ', function () {
      const figures = figuresOf(benchRecord('sweep', { bad: [1, 2, 3], good: [1, 2, 3] }, ['1MB', '10MB']).record)
      assert.deepEqual([...new Set([...figures.values()].map(function key (f) { return f.key }))], ['bad 1MB', 'good 1MB', 'bad 10MB', 'good 10MB'])
    })
  })

  describe('compareRecords', function () {
    it('lines up each route\'s peak above idle, throughput and p99 latency, with B/A and B - A', function () {
      const { rows, params, where, onlyA, onlyB } = compareRecords(a, b)
      assert.deepEqual(rows.map(function row (r) { return [r.key, r.name, r.a.value, r.b.value, Number(r.ratio.toFixed(3)), r.difference, r.spread] }), [
        ['bad', 'peak', 60 * MiB, 66 * MiB, 1.1, 6 * MiB, null],
        ['bad', 'throughput', 40, 38, 0.95, -2, null],
        ['bad', 'latency', 300, 330, 1.1, 30, null],
        ['good', 'peak', 4 * MiB, 5 * MiB, 1.25, MiB, null],
        ['good', 'throughput', 80, 80, 1, 0, null],
        ['good', 'latency', 150, 120, 0.8, -30, null]
      ])
      assert.deepEqual([params, where, onlyA, onlyB], [[], [], [], []])
    })

    it('with all, every figure either run has', function () {
      assert.deepEqual(compareRecords(a, b, { all: true }).rows.filter(function bad (r) { return r.key === 'bad' }).map(function name (r) { return r.name }),
        ['mbPerSecond', 'peakAboveIdle', 'latency.avg', 'latency.p99'])
    })

    it('says whether a difference is inside the spread of the repeats: ranges that overlap, or a value within the other\'s range', function () {
      const one = function one (value) { return { value, n: 1, min: null, max: null } }
      const three = function three (min, value, max) { return { value, n: 3, min, max } }
      assert.equal(spreadVerdict(one(1), one(2)), null)
      assert.equal(spreadVerdict(three(1, 2, 3), three(2.5, 4, 5)), 'inside')
      assert.equal(spreadVerdict(three(1, 2, 3), three(4, 5, 6)), 'outside')
      assert.equal(spreadVerdict(three(1, 2, 3), one(2.9)), 'inside')
      assert.equal(spreadVerdict(one(3.1), three(1, 2, 3)), 'outside')
      const noisy = benchRecord('x', { bad: [50 * MiB, 52 * MiB, 58 * MiB], good: [4 * MiB, 4 * MiB, 5 * MiB] }).record
      const moved = benchRecord('y', { bad: [55 * MiB, 57 * MiB, 60 * MiB], good: [9 * MiB, 9 * MiB, 10 * MiB] }).record
      const peaks = compareRecords(noisy, moved).rows.filter(function peak (r) { return r.name === 'peak' })
      assert.deepEqual(peaks.map(function spread (r) { return [r.key, r.spread] }), [['bad', 'inside'], ['good', 'outside']])
    })
  })

  describe('--fail-if rules', function () {
    it('reads a change in percent, a ratio, and a difference in bytes, ms or the figure\'s unit', function () {
      assert.deepEqual(parseFailIf('good.peak>+10%'), { text: 'good.peak>+10%', who: 'good', name: 'peak', op: '>', kind: 'percent', threshold: 10 })
      assert.deepEqual(parseFailIf('*.latency >= 1.5x'), { text: '*.latency >= 1.5x', who: '*', name: 'latency', op: '>=', kind: 'ratio', threshold: 1.5 })
      assert.equal(parseFailIf('bad.peak>+20MiB').threshold, 20 * MiB)
      assert.equal(parseFailIf('good.throughput<-5').threshold, -5)
      assert.equal(parseFailIf('good.latency.p99>50ms').name, 'latency.p99')
      for (const bad of ['good.peak', 'peak>10%', 'good.peak>ten', 'good.peak=>10%']) {
        assert.throws(function refused () { parseFailIf(bad) }, /--fail-if takes ROUTE\.FIGURE/, bad)
      }
    })

    it('fails where the rule holds for B against A, route by route', function () {
      const verdicts = judgeFailIf(parseFailIf('*.peak>+15%'), a, b)
      assert.deepEqual(verdicts.map(function verdict (v) { return [v.key, Math.round(v.value), v.failed] }), [['bad', 10, false], ['good', 25, true]])
      assert.equal(judgeFailIf(parseFailIf('good.latency<-10%'), a, b)[0].failed, true)
      assert.equal(judgeFailIf(parseFailIf('bad.peak>+5MiB'), a, b)[0].failed, true)
      assert.throws(function unknown () { judgeFailIf(parseFailIf('good.speed>1x'), a, b) }, /no "good" has a figure "speed" in both runs/)
    })
  })

  describe('npm run runs', function () {
    this.timeout(30000)
    let dir

    before(function writeRecords () {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-runs-cli-'))
      fs.writeFileSync(path.join(dir, 'run-a.json'), JSON.stringify(a))
      fs.writeFileSync(path.join(dir, 'run-b.json'), JSON.stringify(b))
      fs.writeFileSync(path.join(dir, 'bench-1.json'), benchRecord('bench-1', { bad: [50 * MiB, 52 * MiB, 58 * MiB], good: [4 * MiB, 4 * MiB, 5 * MiB] }).text)
      fs.writeFileSync(path.join(dir, 'bench-2.json'), benchRecord('bench-2', { bad: [55 * MiB, 57 * MiB, 60 * MiB], good: [9 * MiB, 9 * MiB, 10 * MiB] }).text)
      fs.writeFileSync(path.join(dir, 'later.json'), JSON.stringify({ ...a, format: 2 }))
      fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'not-a-run', version: '1.0.0' }))
    })

    after(function removeRecords () {
      fs.rmSync(dir, { recursive: true, force: true })
    })

    it('list: the records, newest first, and what is wrong with a file that is no record', async function () {
      const { code, stdout } = await runs('list', '--dir', dir)
      assert.equal(code, 0)
      assert.match(stdout, /^\| id +\| experiment +\| status \| date \(UTC\) +\| node +\| size +\| routes +\|$/m)
      assert.match(stdout, /^\| run-a +\| ingest +\| done +\| 2026-/m)
      assert.match(stdout, /^\| later +\| NOT A RECORD \| .* \| format is 2; this lab reads format 1 +\|$/m)
      assert.match(stdout, /6 in /)
    })

    it('compare: a table of each route\'s figures in both runs, and exit 0 when no rule holds', async function () {
      const { code, stdout } = await runs('compare', 'run-a', 'run-b', '--dir', dir, '--fail-if', 'good.peak>+50%')
      assert.equal(code, 0, stdout)
      assert.match(stdout, /^A: run-a {2}ingest \(done, engine\)/m)
      assert.match(stdout, /^\| route \| figure +\| A +\| B +\| B\/A +\| B − A +\|$/m)
      assert.match(stdout, /^\| bad +\| peak above idle \| 60\.0 MiB +\| 66\.0 MiB +\| 1\.10x \| \+6\.0 MiB +\|$/m)
      assert.match(stdout, /^\| good +\| latency p99 +\| 150 ms +\| 120 ms +\| 0\.80x \| −30\.0 ms +\|$/m)
      assert.match(stdout, /^pass good\.peak>\+50% on good: \+25\.0% \(4\.0 MiB → 5\.0 MiB\)$/m)
    })

    it('compare --fail-if: exit 1 when a rule holds, saying which', async function () {
      const { code, stdout } = await runs('compare', 'run-a', 'run-b', '--dir', dir, '--fail-if', 'good.peak>+10%', '--fail-if', '*.throughput<-10%')
      assert.equal(code, 1)
      assert.match(stdout, /^FAIL good\.peak>\+10% on good: \+25\.0%/m)
      assert.match(stdout, /^pass \*\.throughput<-10% on bad: -5\.0%/m)
    })

    it('compare of two benches: medians, the range of the repeats, and whether the difference is inside it', async function () {
      const { code, stdout } = await runs('compare', path.join(dir, 'bench-1.json'), 'bench-2', '--dir', dir)
      assert.equal(code, 0)
      assert.match(stdout, /^\| bad +\| peak above idle \| 52\.0 MiB \(50\.0 MiB to 58\.0 MiB, 3 runs\) +\| 57\.0 MiB \(55\.0 MiB to 60\.0 MiB, 3 runs\) +\| 1\.10x \| \+5\.0 MiB +\| inside the spread +\|$/m)
      assert.match(stdout, /^\| good +\| peak above idle \| .* OUTSIDE the spread \|$/m)
    })

    it('shows a record\'s strings with their control characters escaped: a record from elsewhere cannot write on the terminal', async function () {
      const forged = '\x1b]0;pwned\x07\x1b[2K\rPASS\nmallory\u202e'
      const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-runs-forged-'))
      try {
        const results = routesResult({ [`good${forged}`]: { peak: 4 * MiB, mbps: 80, p99: 150 } })
        fs.writeFileSync(path.join(elsewhere, 'forged-1.json'), makeTestRecord({ id: 'forged-1', experiment: `ingest${forged}`, results }).text)
        fs.writeFileSync(path.join(elsewhere, 'forged-2.json'), makeTestRecord({ id: 'forged-2', experiment: `ingest${forged}`, results }).text)
        const listed = await runs('list', '--dir', elsewhere)
        const compared = await runs('compare', 'forged-1', 'forged-2', '--dir', elsewhere)
        for (const { code, stdout } of [listed, compared]) {
          assert.equal(code, 0, stdout)
          assert.doesNotMatch(stdout, /(?!\n)[\p{Cc}\u202e]/u)
          assert.ok(stdout.includes('ingest\\x1b]0;pwned\\x07\\x1b[2K\\rPASS\\nmallory\\u202e'), stdout)
        }
        assert.match(compared.stdout, /^\| good\\x1b\]0;pwned/m)
      } finally {
        fs.rmSync(elsewhere, { recursive: true, force: true })
      }
    })

    it('exit 2, with a clear message, on a file that is no run record, a run it cannot find, and a bad rule', async function () {
      const foreign = await runs('compare', path.join(dir, 'package.json'), 'run-a', '--dir', dir)
      assert.equal(foreign.code, 2)
      assert.match(foreign.stderr, /package\.json is not a run record this lab reads: kind is not "streamlab\.run"/)
      const later = await runs('compare', 'later', 'run-a', '--dir', dir)
      assert.equal(later.code, 2)
      assert.match(later.stderr, /later\.json is not a run record this lab reads: format is 2; this lab reads format 1/)
      const missing = await runs('compare', 'run-z', 'run-a', '--dir', dir)
      assert.equal(missing.code, 2)
      assert.match(missing.stderr, /no run "run-z" in /)
      const ambiguous = await runs('compare', 'run', 'run-a', '--dir', dir)
      assert.match(ambiguous.stderr, /"run" names 2 runs/)
      const rule = await runs('compare', 'run-a', 'run-b', '--dir', dir, '--fail-if', 'good.peak more than 10%')
      assert.equal(rule.code, 2)
      assert.match(rule.stderr, /--fail-if takes ROUTE\.FIGURE/)
      const flag = await runs('compare', 'run-a', 'run-b', '--dir', dir, '--no-such-flag')
      assert.equal(flag.code, 2)
      assert.match(flag.stderr, /Usage: npm run runs/)
    })

    it('--help names every flag and says the exit codes', async function () {
      const { code, stdout } = await runs('--help')
      assert.equal(code, 0)
      for (const flag of ['--all', '--fail-if', '--dir', '--help']) assert.ok(stdout.includes(flag), flag)
      assert.match(stdout, /^Exit codes: 0; 1 when a --fail-if rule holds; 2 /m)
    })
  })
})
