/**
 * The ingest bench's matrix, verdicts, tables and charts, on figures made up
 * for the purpose: no server, no load (the bench run end to end is
 * test/slow/bench.test.js's).
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { countedRequests } from '../experiments/ingest/bench-runner.js'
import { ingestReport, normalize, options as ingestOptions } from '../experiments/ingest/bench.js'
import { writeReport } from '../lib/measure/report.js'

/** A chart as the bench's report draws it: the SVG file writeReport makes of it. */
async function svgOf (chart) {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'streamlab-svg-'))
  try {
    await writeReport(dir, { title: chart.title, command: 'spec', meta: { started: 'now', node: process.version }, markdown: '', charts: [chart], data: {} })
    return await fs.promises.readFile(path.join(dir, `${chart.file ?? 'chart-1'}.svg`), 'utf8')
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true })
  }
}

describe('the ingest bench\'s matrix, verdicts and chart', function () {
  function flags (...args) {
    return normalize(parseArgs({ args, options: ingestOptions }).values)
  }

  it('runs the full matrix of sizes, concurrencies and routes by default, and --quick a small one; flags given win', function () {
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

  it('judges /good against the speed targets: 1.0x to 10 MB, 1.2x from 10 MB, 1.5x from 100 MB', function () {
    const cells = [1e3, 1e6, 10e6, 99e6, 100e6, 500e6].flatMap(function both (bytes) {
      return [cell('bad', `${bytes}B`, bytes, 1, 1), cell('good', `${bytes}B`, bytes, 1, 1)]
    })
    assert.deepEqual(ingestReport(cells).data.verdicts.map(function target (v) { return v.target }), [1, 1, 1.2, 1.2, 1.5, 1.5])
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
    const { data: { verdicts }, markdown: text } = ingestReport(cells)
    assert.deepEqual(verdicts.map(function pick (v) { return [v.size, v.other, v.verdict] }),
      [['1KB', 'express-json', 'loses'], ['100MB', 'bad', 'short'], ['500MB', 'bad', 'meets']])
    assert.equal(verdicts[0].ratio, 800 / 900)
    assert.equal(verdicts[2].ratio, Infinity)
    assert.match(text, /\| 1KB +\| 10 +\| good .*\| 0\.89x +\| \*\*\/good LOSES\*\* +\|/)
    assert.match(text, /refused 8 of 10/)
    assert.match(text, /refused 100 of 100/)
    assert.match(text, /only \/good answered/)
    assert.match(text, /It LOSES at 1KB x10 \(0\.89x of \/express-json\)/)
    assert.match(text, /short of the target at 100MB x10 \(1\.30x of \/bad\)/)
    assert.match(text, /500MB x100 \/good: refused 92 of 100 \(92 ingest\.busy\)/)
  })

  it('puts /streamparser-json, the textbook streaming route, in the table, in a series of its own and among /good\'s rivals', async function () {
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
    const { data: { verdicts }, markdown: text, charts } = ingestReport(cells)
    assert.deepEqual(verdicts.map(function pick (v) { return [v.size, v.other, v.rivals, v.verdict] }), [
      ['1KB', 'streamparser-json', ['bad', 'express-json', 'streamparser-json'], 'meets'],
      ['10MB', 'express-json', ['bad', 'express-json', 'streamparser-json'], 'meets']
    ])
    assert.equal(verdicts[0].ratio, 1000 / 900, 'the textbook route, fastest of the other three at 1KB, is the one /good is held to')
    assert.equal(text.match(/^\| 1KB +\| 1 +\| streamparser-json \|/gm)?.length, 1, 'a row of the matrix')
    assert.match(text, /^\| 1KB +\| 1 +\| 1000 +\| \/streamparser-json \| 900 +\| 1\.11x/m, 'the best other in the verdict table')
    assert.match(text, /from \/bad, \/good, \/express-json, \/streamparser-json, gave the same summary/)

    const throughput = charts.find(function isThroughput (c) { return c.title.startsWith('Throughput') })
    assert.deepEqual(throughput.series.map(function label (s) { return s.label }), ['/bad', '/good', '/express-json', '/streamparser-json'])
    const svg = await svgOf(throughput)
    const colours = new Set([...svg.matchAll(/<polyline [^>]*stroke="(#[0-9A-Fa-f]{6})"/g)].map(function colour (m) { return m[1] }))
    assert.equal(colours.size, 4, 'a colour per route')
    const ratio = charts.find(function isRatio (c) { return c.file === 'speed-ratio' })
    assert.equal(ratio.title, '/good\'s speed vs the fastest of /bad, /express-json and /streamparser-json')
  })

  it('shows each route\'s MB/s as a share of the machine\'s bound, and says where the bound came from', async function () {
    const measured = { mbPerSecond: 200, cores: 2, cpuPerGB: 8, source: 'measured' }
    const cells = [
      cell('bad', '1MB', 1e6, 1, 50, { bound: measured, cpuPerGB: 16 }),
      cell('good', '1MB', 1e6, 1, 150, { bound: measured, cpuPerGB: 10 })
    ]
    const { markdown: text } = ingestReport(cells)
    assert.match(text, /^\| size +\| conc +\| route +\| load +\| req\/s +\| MB\/s +\| of bound \(wall\) +\| CPU s\/GB +\| of stages' CPU/m)
    assert.match(text, /^\| 1MB +\| 1 +\| bad +\| 10 up\. +\| 50 +\| 50\.0 +\| 25% +\| 16\.00 +\| 50% +\|/m)
    assert.match(text, /^\| 1MB +\| 1 +\| good +\| 10 up\. +\| 150 +\| 150\.0 +\| 75% +\| 10\.00 +\| 80% +\|/m)
    assert.match(text, /of bound \(wall\): MB\/s over the machine's bound on 2 cores, measured quickly at the start on each size's body/)
    assert.match(text, /\(MB\/s: 1MB 200\.0\)/)
    assert.match(text, /of stages' CPU: the stages' own CPU s\/GB, measured with the bound, over it \(1MB 8\.00\)/)
    const runs = [{ cpuPerGB: 10 }, { cpuPerGB: 10.5 }]
    const agreeing = ingestReport([cell('good', '1MB', 1e6, 1, 150, { bound: measured, cpuPerGB: 10, measurements: runs })]).markdown
    assert.match(agreeing, /CPU s\/GB across each cell's runs: at most 5% apart \(1MB x1 \/good\); every cell within 10%/)
    const wide = [...runs, { cpuPerGB: 12 }]
    const apart = ingestReport([cell('good', '1MB', 1e6, 1, 150, { bound: measured, cpuPerGB: 10, measurements: wide })]).markdown
    assert.match(apart, /at most 20% apart \(1MB x1 \/good\); more than 10% at 1MB x1 \/good/)
    const unbound = ingestReport([cell('good', '1MB', 1e6, 1, 150)]).markdown
    assert.match(unbound, /^\| 1MB +\| 1 +\| good +\| 10 up\. +\| 150 +\| 150\.0 +\| n\/a +\| n\/a +\| n\/a +\|/m,
      'no bound, no share')

    const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'streamlab-bound-file-'))
    try {
      const file = path.join(dir, 'bound.json')
      await fs.promises.writeFile(file, JSON.stringify({ bound: 300, cores: 4, body: { format: 'json', bytes: 100e6 } }))
      const bound = flags('--bound', file).bound
      assert.deepEqual(bound, { mbPerSecond: 300, cores: 4, body: { format: 'json', bytes: 100e6 }, cpuPerGB: null, file, source: 'file' })
      assert.equal(flags().bound, null, 'measured at the start unless a file is given')
      const fromFile = ingestReport([cell('good', '1MB', 1e6, 1, 150, { bound })]).markdown
      assert.match(fromFile, /\| 150\.0 +\| 50% +\|/)
      const note = `of bound (wall): MB/s over the machine's bound, 300.0 MB/s on 4 cores, measured on 100.0 MB of json, from ${file}`
      assert.ok(fromFile.includes(note))
      await fs.promises.writeFile(file, JSON.stringify({ cells: [] }))
      assert.throws(function noBound () { flags('--bound', file) }, { name: 'TypeError', message: /^--bound .*bound\.json holds no bound and cores/ })
      assert.throws(function noFile () { flags('--bound', path.join(dir, 'none.json')) }, { name: 'TypeError', message: /^--bound .*none\.json: no such file/ })
    } finally {
      await fs.promises.rm(dir, { recursive: true, force: true })
    }
  })

  it('draws the ratio against body size per concurrency, with the target as a dashed step', async function () {
    // ratios 1.1 and 1.3 at 1 connection; 0.9, and only /good answering (no finite ratio), at 10
    const cells = [
      cell('bad', '1MB', 1e6, 1, 1), cell('express-json', '1MB', 1e6, 1, 0.5), cell('good', '1MB', 1e6, 1, 1.1),
      cell('bad', '10MB', 10e6, 1, 1), cell('express-json', '10MB', 10e6, 1, 0.5), cell('good', '10MB', 10e6, 1, 1.3),
      cell('bad', '1MB', 1e6, 10, 0.5), cell('express-json', '1MB', 1e6, 10, 1), cell('good', '1MB', 1e6, 10, 0.9),
      cell('bad', '10MB', 10e6, 10, 0), cell('express-json', '10MB', 10e6, 10, 0), cell('good', '10MB', 10e6, 10, 1)
    ]
    const chart = ingestReport(cells).charts.find(function isRatio (c) { return c.file === 'speed-ratio' })
    assert.deepEqual(chart.series.map(function label (s) { return s.label }), ['1 concurrent', '10 concurrent', 'target'])
    assert.deepEqual(chart.series[1].points, [{ x: 1, y: 0.9 }], 'an infinite ratio is not drawn')
    assert.deepEqual(chart.series[2].points, [{ x: 1, y: 1 }, { x: 10, y: 1 }, { x: 10, y: 1.2 }])
    const svg = await svgOf(chart)
    assert.match(svg, /<title>\/good&#39;s speed vs the faster of \/bad and \/express-json<\/title>/)
    assert.equal((svg.match(/<polyline /g) ?? []).length, 2, '1 concurrent and the target: one point draws no line')
    assert.match(svg, />10MB<\/text>/, 'the run\'s sizes name the ticks')
    assert.match(svg, /stroke-dasharray="7 5"/)
  })
})
