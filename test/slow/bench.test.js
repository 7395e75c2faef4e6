/**
 * The bench CLI, end to end on tiny inputs: fresh server processes, the
 * tables on stdout and the report files. The ingest bench's verdicts, tables
 * and charts on made-up figures are test/ingest-bench-report.test.js's.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'

const run = promisify(execFile)
const CLI = fileURLToPath(new URL('../../scripts/bench.js', import.meta.url))

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
    // a counted cell (a fixed number of uploads): a timed second can end before a slow route answers on a busy machine
    const args = ['ingest', '--quick', '--sizes', '200KB', '--timed-up-to', '100KB', '--concurrency', '2', '--out', dir]
    const { stdout } = await run(process.execPath, [CLI, ...args])
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
