/**
 * `npm run bench -- bound`: its flags, its report and the figures file the docs quote, on made-up
 * figures, and its --help. The stages' measurements are test/units/bound.test.js's; the ingest
 * bench's share of the bound is test/ingest-bench-report.test.js's.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs, promisify } from 'node:util'
import { normalize, options as boundOptions, boundReport } from '../experiments/bound/bench.js'
import { writeFigures } from '../lib/measure/figures.js'
import { boundOf, MODEL, stagesCpuPerGB } from '../lib/measure/bound.js'

const CLI = fileURLToPath(new URL('../scripts/bench.js', import.meta.url))

function flags (...args) {
  return normalize(parseArgs({ args, options: boundOptions }).values)
}

/** Data as lib/measure/bound.js measures it, with figures made up. */
function madeUp (cores = 2) {
  const figures = [['inflate', 400, 2.5], ['parse', 100, 10.5], ['sha256', 800, 1.25], ['find', 400, 0.5]]
  const cells = figures.map(function cell ([stage, mbPerSecond, cpu]) {
    return { stage, mbPerSecond, secondsPerGB: 1000 / mbPerSecond, cpuSecondsPerGB: cpu, runs: [mbPerSecond] }
  })
  const rates = Object.fromEntries(cells.map(function rate (c) { return [c.stage, c.mbPerSecond] }))
  const body = { format: 'json', bytes: 100e6, compressedBytes: 21e6, size: '100MB' }
  const bound = boundOf(rates, cores)
  return { body, repeat: 3, cells, cores, bound, singleCore: boundOf(rates, 1), stagesCpuPerGB: stagesCpuPerGB(cells), model: MODEL }
}

describe('npm run bench -- bound', function () {
  it('measures a 100MB json body three times a stage on this machine\'s cores unless told', function () {
    assert.deepEqual(flags(), { bytes: 100e6, size: '100MB', format: 'json', repeat: 3, cores: os.availableParallelism() })
    assert.deepEqual(flags('--size', '1MB', '--format', 'ndjson', '--repeat', '1', '--cores', '8'), { bytes: 1e6, size: '1MB', format: 'ndjson', repeat: 1, cores: 8 })
  })

  it('refuses a flag it cannot read, naming it', function () {
    assert.throws(function noSize () { flags('--size', '0') }, { name: 'TypeError', message: /--size/ })
    assert.throws(function badSize () { flags('--size', 'big') }, { name: 'TypeError', message: /--size/ })
    assert.throws(function badFormat () { flags('--format', 'xml') }, { name: 'TypeError', message: /--format takes json, array, ndjson/ })
    assert.throws(function badRepeat () { flags('--repeat', '0') }, { name: 'TypeError', message: /--repeat/ })
    assert.throws(function badCores () { flags('--cores', '1.5') }, { name: 'TypeError', message: /--cores/ })
  })

  it('prints each stage\'s MB/s on one core, seconds and CPU seconds per GB, the one-core figure, the bound and the model', function () {
    const { markdown, data } = boundReport(madeUp())
    assert.match(markdown, /^\| stage +\| MB\/s on one core \| s per GB \| CPU s per GB \|$/m)
    assert.match(markdown, /^\| parse +\| 100\.0 +\| 10\.00 +\| 10\.50 +\|$/m)
    assert.match(markdown, /^\| all four, 1 core +\| 61\.5 +\| 16\.25 +\| 14\.75 +\|$/m, 'the stages\' CPU per GB, summed')
    assert.match(markdown, /^\| bound, 2 cores +\| 123\.1 +\| 8\.13 +\| +\|$/m)
    assert.ok(markdown.includes(MODEL))
    assert.match(markdown, /body: 100MB json as the ingest bench sends it, 100\.0 MB inflated from 21\.0 MB of gzip/)
    assert.equal(data.bound, 2 / 0.01625)
  })

  it('writes a figures file with the stages\' MB/s, the cores and the bound, as the docs quote them', async function () {
    const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'streamlab-bound-figures-'))
    try {
      const report = boundReport(madeUp(4))
      await writeFigures('bound', { title: report.title, command: 'npm run bench -- bound --figures bound', meta: { started: new Date().toISOString(), experiment: 'bound' }, markdown: report.markdown, data: report.data }, dir)
      const figures = JSON.parse(await fs.promises.readFile(path.join(dir, 'bound.json'), 'utf8'))
      const keys = ['title', 'command', 'date', 'machine', 'body', 'repeat', 'cells', 'cores', 'bound', 'singleCore']
      keys.push('stagesCpuPerGB', 'model')
      for (const key of keys) assert.ok(key in figures, key)
      assert.deepEqual(figures.cells.map(function pick (c) { return [c.stage, c.mbPerSecond] }), [['inflate', 400], ['parse', 100], ['sha256', 800], ['find', 400]])
      assert.equal(figures.cores, 4)
      assert.equal(figures.bound, 4 / 0.01625)
      assert.equal(figures.singleCore, 1 / 0.01625)
      assert.match(await fs.promises.readFile(path.join(dir, 'bound.md'), 'utf8'), /\| bound, 4 cores +\| 246\.2 /)
    } finally {
      await fs.promises.rm(dir, { recursive: true, force: true })
    }
  })

  it('--help prints the usage and does nothing else', async function () {
    this.timeout(30000)
    const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'streamlab-bound-help-'))
    try {
      const out = path.join(dir, 'reports')
      const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLI, 'bound', '--help', '--out', out], { encoding: 'utf8' })
      assert.match(stdout, /^Options \(bound\):$/m)
      assert.match(stdout, /--size SIZE/)
      assert.equal(stderr, '', 'no progress, no report')
      assert.equal(fs.existsSync(out), false, 'no report written')
    } finally {
      await fs.promises.rm(dir, { recursive: true, force: true })
    }
  })
})
