/**
 * The bench CLI, end to end on tiny inputs: fresh server processes, the
 * tables on stdout and the report files; and the ingest bench's verdicts,
 * tables and charts on figures made up for the purpose.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { countedRequests } from '../experiments/ingest/bench-runner.js'
import { ingestCharts, ingestTable, normalize, options as ingestOptions, speedRatioChart, speedTarget, speedVerdicts } from '../experiments/ingest/bench.js'
import { renderSvg } from '../lib/measure/report.js'
import { parseArgs } from 'node:util'

const run = promisify(execFile)
const CLI = fileURLToPath(new URL('../scripts/bench.js', import.meta.url))

describe('npm run bench -- ingest', function () {
  this.timeout(120000)
  let out

  before(async function () {
    out = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'streamlab-bench-'))
  })
  after(async function () {
    await fs.promises.rm(out, { recursive: true, force: true })
  })

  it('writes results.json, results.md, report.html with Chart.js beside it, and an SVG per chart', async function () {
    const { stdout } = await run(process.execPath, [CLI, 'ingest', '--quick', '--sizes', '200KB', '--concurrency', '1,3', '--routes', 'bad,good', '--out', out])
    assert.match(stdout, /\| size +\| conc \| route/)
    const files = await fs.promises.readdir(out)
    for (const name of ['results.json', 'results.md', 'report.html', 'chart.umd.js', 'speed-ratio.svg']) assert.ok(files.includes(name), name)

    const results = JSON.parse(await fs.promises.readFile(path.join(out, 'results.json'), 'utf8'))
    assert.equal(results.cells.length, 4) // 2 routes x 2 concurrencies
    for (const cell of results.cells) {
      assert.equal(cell.mode, 'timed')
      assert.ok(cell.requests > 0)
      assert.equal(cell.ok, cell.requests, `${cell.route} x${cell.concurrency}: ${JSON.stringify(cell.errors)}`)
      assert.ok(cell.peakRss > 0)
      assert.ok(cell.mbPerSecond > 0)
      assert.ok(cell.reqPerSecond > 0)
      assert.ok(cell.latencyP99Ms > 0)
      assert.ok(cell.summariesAgree)
    }
    const summaries = new Set(results.cells.map(function key (c) { return JSON.stringify(c.summary) }))
    assert.equal(summaries.size, 1, 'every cell, both routes, got the same answer')
    assert.equal(results.verdicts.length, 2, 'one verdict per concurrency')

    const html = await fs.promises.readFile(path.join(out, 'report.html'), 'utf8')
    assert.match(html, /<script src="chart.umd.js"><\/script>/)
    assert.doesNotMatch(html, /https?:\/\/[^"]*cdn/i)
    for (const title of ['Server peak RSS above idle vs concurrency', 'p99 latency vs concurrency', 'Throughput vs body size', 'speed vs /bad']) {
      assert.ok(html.includes(title), title)
    }
    const svg = await fs.promises.readFile(path.join(out, 'speed-ratio.svg'), 'utf8')
    assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/)
    assert.match(svg, /stroke-dasharray/, 'the target line')
  })

  it('runs the four contenders when no --routes is given: the same answer from each, and /good judged against the fastest of the other three', async function () {
    const dir = path.join(out, 'four')
    const { stdout } = await run(process.execPath, [CLI, 'ingest', '--quick', '--sizes', '200KB', '--concurrency', '2', '--out', dir])
    const results = JSON.parse(await fs.promises.readFile(path.join(dir, 'results.json'), 'utf8'))
    assert.deepEqual(results.cells.map(function route (c) { return c.route }), ['bad', 'good', 'express-json', 'streamparser-json'])
    for (const cell of results.cells) assert.equal(cell.ok, cell.requests, `${cell.route}: ${JSON.stringify(cell.errors)}`)
    const summaries = new Set(results.cells.map(function key (c) { return JSON.stringify(c.summary) }))
    assert.equal(summaries.size, 1, 'the four routes got the same answer')
    assert.match(stdout, /\| express-json +\|/)
    assert.match(stdout, /\| streamparser-json \|/)
    assert.match(stdout, /answers identical: every 200 answer checked, from \/bad, \/good, \/express-json, \/streamparser-json,/)
    const [verdict] = results.verdicts
    assert.deepEqual(verdict.rivals, ['bad', 'express-json', 'streamparser-json'])
    const others = results.cells.filter(function rival (c) { return c.route !== 'good' })
    const best = Math.max(...others.map(function speed (c) { return c.reqPerSecond }))
    assert.equal(verdict.ratio, results.cells[1].reqPerSecond / best)
    assert.equal(verdict.target, 1)
    assert.match(stdout, new RegExp(`\\| 200KB \\| 2 +\\| ${verdict.good.toFixed(verdict.good < 10 ? 2 : 0)} +\\| /${verdict.other}`))
    const svg = await fs.promises.readFile(path.join(dir, 'speed-ratio.svg'), 'utf8')
    assert.match(svg, /<title>\/good&#39;s speed vs the fastest of \/bad, \/express-json and \/streamparser-json<\/title>/)
  })

  it('with --repeat, measures round by round, every route once per round, and reports medians', async function () {
    const dir = path.join(out, 'rounds')
    const { stdout, stderr } = await run(process.execPath, [CLI, 'ingest', '--quick', '--sizes', '200KB', '--concurrency', '1', '--routes', 'bad,good', '--repeat', '2', '--out', dir])
    const order = [...`${stdout}${stderr}`.matchAll(/\] (bad|good) 200KB x1 \(1 s\) run (\d)\/2/g)].map(function label (m) { return `${m[1]} ${m[2]}` })
    assert.deepEqual(order, ['bad 1', 'good 1', 'bad 2', 'good 2'])
    const results = JSON.parse(await fs.promises.readFile(path.join(dir, 'results.json'), 'utf8'))
    assert.deepEqual(results.cells.map(function runs (c) { return [c.route, c.runs] }), [['bad', 2], ['good', 2]])
  })

  it('sends large bodies as a fixed count of uploads streamed from disk', async function () {
    const dir = path.join(out, 'counted')
    await run(process.execPath, [CLI, 'ingest', '--quick', '--sizes', '2MB', '--timed-up-to', '1MB', '--concurrency', '2', '--routes', 'good,express-json', '--out', dir])
    const results = JSON.parse(await fs.promises.readFile(path.join(dir, 'results.json'), 'utf8'))
    for (const cell of results.cells) {
      assert.equal(cell.mode, 'counted')
      assert.equal(cell.requests, 2, '--quick: one upload per connection')
      assert.equal(cell.ok, 2, JSON.stringify(cell.errors))
      assert.equal(cell.summary.inflatedBytes > 1.9e6, true)
    }
  })

  it('refuses --routes it does not know, and NDJSON for /express-json and /streamparser-json, with usage', async function () {
    for (const args of [['--routes', 'bad,ugly'], ['--routes', 'express-json', '--format', 'ndjson'], ['--routes', 'good,streamparser-json', '--format', 'ndjson']]) {
      await assert.rejects(run(process.execPath, [CLI, 'ingest', ...args]), function check (err) {
        assert.equal(err.code, 2)
        assert.match(err.stderr, /--routes takes bad, good, express-json, streamparser-json,|reads only json or array/)
        return true
      })
    }
  })

  it('exits 2 with usage for an unknown experiment', async function () {
    await assert.rejects(run(process.execPath, [CLI, 'nope']), function check (err) {
      assert.equal(err.code, 2)
      assert.match(err.stderr, /unknown experiment/)
      return true
    })
  })
})

describe('the ingest bench\'s matrix, verdicts and chart', function () {
  function flags (...args) {
    return normalize(parseArgs({ args, options: ingestOptions }).values)
  }

  it('runs issue 16\'s matrix by default, and --quick a small one; flags given win', function () {
    const all = flags()
    assert.deepEqual(all.sizeLabels, ['1KB', '64KB', '1MB', '10MB', '100MB', '500MB'])
    assert.deepEqual(all.concurrency, [1, 10, 100])
    assert.deepEqual(all.routes, ['bad', 'good', 'express-json', 'streamparser-json'])
    assert.equal(all.repeat, 1)
    assert.equal(all.durationS, 10)
    assert.ok(all.memoryLimit >= 1024 ** 3, 'the lab\'s default budget, never none')
    const quick = flags('--quick', '--concurrency', '4')
    assert.deepEqual(quick.sizeLabels, ['1KB', '64KB', '1MB'])
    assert.deepEqual(quick.concurrency, [4])
    assert.equal(quick.durationS, 1)
    assert.equal(flags('--memory-limit', '0').memoryLimit, 0)
    assert.throws(function badDuration () { flags('--duration', '0') }, /--duration/)
  })

  it('sends a counted cell at least one upload per connection, about 200 MB, 2 to 100 uploads', function () {
    assert.equal(countedRequests(10e6, 1), 20)
    assert.equal(countedRequests(10e6, 100), 100)
    assert.equal(countedRequests(100e6, 1), 2)
    assert.equal(countedRequests(500e6, 1), 2)
    assert.equal(countedRequests(500e6, 10), 10)
    assert.equal(countedRequests(1e3, 1), 100)
    assert.equal(countedRequests(500e6, 10, 3), 3, 'a count given wins')
  })

  it('judges /good against issue 16\'s targets: 1.0x to 10 MB, 1.2x from 10 MB, 1.5x from 100 MB', function () {
    assert.equal(speedTarget(1e3), 1)
    assert.equal(speedTarget(1e6), 1)
    assert.equal(speedTarget(10e6), 1.2)
    assert.equal(speedTarget(99e6), 1.2)
    assert.equal(speedTarget(100e6), 1.5)
    assert.equal(speedTarget(500e6), 1.5)
  })

  function cell (route, size, bytes, concurrency, reqPerSecond, extra = {}) {
    return {
      route, size, bytes, concurrency, reqPerSecond, mode: 'counted', runs: 1, mbPerSecond: reqPerSecond * bytes / 1e6,
      latencyP99Ms: 100, peakAboveIdle: 1048576, requests: 10, ok: 10, refused: 0, failed: 0, errors: [{}],
      summary: { items: 1 }, summariesAgree: true, workerRestarts: 0, loadAverage: 1, ...extra
    }
  }

  it('compares /good with the fastest other route, says where it loses, and reports refusals as "refused N of M"', function () {
    const cells = [
      cell('bad', '1KB', 1e3, 10, 850),
      cell('good', '1KB', 1e3, 10, 800),
      cell('express-json', '1KB', 1e3, 10, 900),
      cell('bad', '100MB', 100e6, 10, 0.2, { ok: 2, refused: 8, errors: [{ 'memory.busy': 8 }] }),
      cell('good', '100MB', 100e6, 10, 0.26),
      cell('express-json', '100MB', 100e6, 10, 0.1, { ok: 1, refused: 9, errors: [{ 'memory.busy': 9 }] }),
      cell('bad', '500MB', 500e6, 100, 0, { ok: 0, refused: 100, requests: 100, errors: [{ 'memory.budget.exceeded': 100 }] }),
      cell('good', '500MB', 500e6, 100, 0.2, { ok: 8, refused: 92, requests: 100, errors: [{ 'ingest.busy': 92 }] })
    ]
    const verdicts = speedVerdicts(cells)
    assert.deepEqual(verdicts.map(function pick (v) { return [v.size, v.other, v.verdict] }),
      [['1KB', 'express-json', 'loses'], ['100MB', 'bad', 'short'], ['500MB', 'bad', 'meets']])
    assert.equal(verdicts[0].ratio, 800 / 900)
    assert.equal(verdicts[2].ratio, Infinity)
    const text = ingestTable(cells, verdicts)
    assert.match(text, /\| 1KB +\| 10 +\| good .*\| 0\.89x +\| \*\*\/good LOSES\*\* +\|/)
    assert.match(text, /refused 8 of 10/)
    assert.match(text, /refused 100 of 100/)
    assert.match(text, /only \/good answered/)
    assert.match(text, /It LOSES at 1KB x10 \(0\.89x of \/express-json\)/)
    assert.match(text, /short of the target at 100MB x10 \(1\.30x of \/bad\)/)
    assert.match(text, /500MB x100 \/good: refused 92 of 100 \(92 ingest\.busy\)/)
  })

  it('puts /streamparser-json, the textbook streaming route, in the table, in a series of its own and among /good\'s rivals', function () {
    const cells = [
      cell('bad', '1KB', 1e3, 1, 700),
      cell('good', '1KB', 1e3, 1, 1000),
      cell('express-json', '1KB', 1e3, 1, 800),
      cell('streamparser-json', '1KB', 1e3, 1, 900),
      cell('bad', '10MB', 10e6, 1, 4),
      cell('good', '10MB', 10e6, 1, 9),
      cell('express-json', '10MB', 10e6, 1, 4.2),
      cell('streamparser-json', '10MB', 10e6, 1, 3)
    ]
    const verdicts = speedVerdicts(cells)
    assert.deepEqual(verdicts.map(function pick (v) { return [v.size, v.other, v.rivals, v.verdict] }), [
      ['1KB', 'streamparser-json', ['bad', 'express-json', 'streamparser-json'], 'meets'],
      ['10MB', 'express-json', ['bad', 'express-json', 'streamparser-json'], 'meets']
    ])
    assert.equal(verdicts[0].ratio, 1000 / 900, 'the textbook route, fastest of the other three at 1KB, is the one /good is held to')
    const text = ingestTable(cells, verdicts)
    assert.equal(text.match(/^\| 1KB +\| 1 +\| streamparser-json \|/gm)?.length, 1, 'a row of the matrix')
    assert.match(text, /^\| 1KB +\| 1 +\| 1000 +\| \/streamparser-json \| 900 +\| 1\.11x/m, 'the best other in the verdict table')
    assert.match(text, /from \/bad, \/good, \/express-json, \/streamparser-json, gave the same summary/)

    const charts = ingestCharts(cells, verdicts)
    const throughput = charts.find(function isThroughput (c) { return c.title.startsWith('Throughput') })
    assert.deepEqual(throughput.series.map(function label (s) { return s.label }), ['/bad', '/good', '/express-json', '/streamparser-json'])
    const svg = renderSvg(throughput)
    const colours = new Set([...svg.matchAll(/<polyline [^>]*stroke="(#[0-9A-Fa-f]{6})"/g)].map(function colour (m) { return m[1] }))
    assert.equal(colours.size, 4, 'a colour per route')
    const ratio = charts.find(function isRatio (c) { return c.file === 'speed-ratio' })
    assert.equal(ratio.title, '/good\'s speed vs the fastest of /bad, /express-json and /streamparser-json')
  })

  it('draws the ratio against body size per concurrency, with the target as a dashed step', function () {
    const rivals = ['bad', 'express-json']
    const verdicts = [
      { size: '1MB', bytes: 1e6, concurrency: 1, ratio: 1.1, target: 1, other: 'bad', rivals },
      { size: '10MB', bytes: 10e6, concurrency: 1, ratio: 1.3, target: 1.2, other: 'bad', rivals },
      { size: '1MB', bytes: 1e6, concurrency: 10, ratio: 0.9, target: 1, other: 'express-json', rivals },
      { size: '10MB', bytes: 10e6, concurrency: 10, ratio: Infinity, target: 1.2, other: 'bad', rivals }
    ]
    const chart = speedRatioChart(verdicts)
    assert.deepEqual(chart.series.map(function label (s) { return s.label }), ['1 concurrent', '10 concurrent', 'target'])
    assert.deepEqual(chart.series[1].points, [{ x: 1, y: 0.9 }], 'an infinite ratio is not drawn')
    assert.deepEqual(chart.series[2].points, [{ x: 1, y: 1 }, { x: 10, y: 1 }, { x: 10, y: 1.2 }])
    const svg = renderSvg(chart)
    assert.match(svg, /<title>\/good&#39;s speed vs the faster of \/bad and \/express-json<\/title>/)
    assert.equal((svg.match(/<polyline /g) ?? []).length, 2, '1 concurrent and the target: one point draws no line')
    assert.match(svg, />10MB<\/text>/, 'the run\'s sizes name the ticks')
    assert.match(svg, /stroke-dasharray="7 5"/)
  })
})
