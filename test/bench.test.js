/**
 * The bench CLI, end to end on tiny inputs: fresh server processes, the
 * table on stdout and the three report files.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'

const run = promisify(execFile)
const CLI = fileURLToPath(new URL('../bench/cli.js', import.meta.url))

describe('npm run bench -- ingest', function () {
  this.timeout(120000)
  let out

  before(async function () {
    out = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'streamlab-bench-'))
  })
  after(async function () {
    await fs.promises.rm(out, { recursive: true, force: true })
  })

  it('writes results.json, results.md and report.html with Chart.js beside it', async function () {
    const { stdout } = await run(process.execPath, [CLI, 'ingest', '--sizes', '200KB', '--concurrency', '1,3', '--repeat', '1', '--out', out])
    assert.match(stdout, /\| route \| size/)
    const files = await fs.promises.readdir(out)
    for (const name of ['results.json', 'results.md', 'report.html', 'chart.umd.js']) assert.ok(files.includes(name), name)

    const results = JSON.parse(await fs.promises.readFile(path.join(out, 'results.json'), 'utf8'))
    assert.equal(results.cells.length, 4) // 2 routes x 2 concurrencies
    for (const cell of results.cells) {
      assert.equal(cell.ok, cell.requests, `${cell.route} x${cell.concurrency}: ${JSON.stringify(cell.errors)}`)
      assert.ok(cell.peakRss > 0)
      assert.ok(cell.mbPerSecond > 0)
    }
    const summaries = new Set(results.cells.map(function key (c) { return JSON.stringify(c.summary) }))
    assert.equal(summaries.size, 1, 'every cell, both routes, got the same answer')

    const html = await fs.promises.readFile(path.join(out, 'report.html'), 'utf8')
    assert.match(html, /<script src="chart.umd.js"><\/script>/)
    assert.doesNotMatch(html, /https?:\/\/[^"]*cdn/i)
    for (const title of ['Server peak RSS above idle vs concurrency', 'Average latency vs concurrency', 'Throughput vs body size']) {
      assert.ok(html.includes(title), title)
    }
  })

  it('takes --routes bad,good,express-json: a third contender with the same answer, compared with /bad', async function () {
    const dir = path.join(out, 'three')
    const { stdout } = await run(process.execPath, [CLI, 'ingest', '--sizes', '200KB', '--routes', 'bad,good,express-json', '--repeat', '1', '--out', dir])
    const results = JSON.parse(await fs.promises.readFile(path.join(dir, 'results.json'), 'utf8'))
    assert.deepEqual(results.cells.map(function route (c) { return c.route }), ['bad', 'good', 'express-json'])
    for (const cell of results.cells) assert.equal(cell.ok, cell.requests, `${cell.route}: ${JSON.stringify(cell.errors)}`)
    const summaries = new Set(results.cells.map(function key (c) { return JSON.stringify(c.summary) }))
    assert.equal(summaries.size, 1, 'the three routes got the same answer')
    assert.match(stdout, /\| express-json \|/)
    assert.match(stdout, /\/express-json [\d.]+x the MB\/s of \/bad, .*; answers identical/)
  })

  it('refuses --routes it does not know, and NDJSON for /express-json, with usage', async function () {
    for (const args of [['--routes', 'bad,ugly'], ['--routes', 'express-json', '--format', 'ndjson']]) {
      await assert.rejects(run(process.execPath, [CLI, 'ingest', ...args]), function check (err) {
        assert.equal(err.code, 2)
        assert.match(err.stderr, /--routes takes bad, good, express-json|reads only json or array/)
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
