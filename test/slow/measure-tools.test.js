/**
 * The two tools behind docs/metrics.md's figures, end to end on small
 * bodies: `npm run stages` (what each ingest stage holds, read from the
 * /metrics stream of a fresh lab) and `npm run metrics-cpu` (what watching
 * costs). Their figures are the docs' (docs/figures/stages-100mb.md,
 * metrics-cost.md); here, that they run, answer as the routes do, and say
 * why when they cannot.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { procAvailable } from '../../lib/util/platform.js'

const STAGES = fileURLToPath(new URL('../../scripts/stages.js', import.meta.url))
const METRICS_CPU = fileURLToPath(new URL('../../scripts/metrics-cpu.js', import.meta.url))

function runTool (file, args) {
  return new Promise(function run (resolve) {
    execFile(process.execPath, [file, ...args], { timeout: 110_000, maxBuffer: 8 * 1024 * 1024 }, function done (err, stdout, stderr) {
      resolve({ code: err ? err.code : 0, stdout, stderr })
    })
  })
}

/** The rows of the tool's Markdown table, each as { column: cell }. */
function tableRows (stdout) {
  const lines = stdout.split('\n').filter(function isRow (line) { return line.startsWith('|') })
  const cells = lines.map(function split (line) { return line.slice(1, -1).split('|').map(function trim (c) { return c.trim() }) })
  const [header, , ...body] = cells
  return body.map(function named (row) { return Object.fromEntries(header.map(function pair (h, k) { return [h, row[k]] })) })
}

function mib (text) {
  const match = /^([\d.]+) MiB$/.exec(text)
  assert.ok(match, `a figure in MiB: ${text}`)
  return Number(match[1])
}

describe('npm run stages', function () {
  this.timeout(120_000)

  it('sends a body and the ratio bomb into /bad and /good: /bad holds the body at its peak, /good a window; both refuse the bomb', async function () {
    const run = await runTool(STAGES, ['--size', '8MB', '--bomb'])
    assert.equal(run.code, 0, run.stderr)
    const rows = tableRows(run.stdout)
    const row = function find (route, body) { return rows.find(function is (r) { return r.route === route && r.body === body }) }
    assert.equal(row('/bad', 'items').status, '200')
    assert.equal(row('/good', 'items').status, '200')
    // the inflated body is 7.6 MiB: /bad holds at least that, /good a small part of it
    assert.ok(mib(row('/bad', 'items')['in all']) > 7, row('/bad', 'items')['in all'])
    assert.ok(mib(row('/good', 'items')['in all']) < 4, row('/good', 'items')['in all'])
    assert.equal(row('/good', 'items')['within bounds'], 'yes')
    assert.deepEqual([row('/bad', 'bomb').status, row('/bad', 'bomb').error], ['413', 'inflated.too.large'])
    assert.deepEqual([row('/good', 'bomb').status, row('/good', 'bomb').error], ['413', 'ratio.too.large'])
  })

  it('refuses a route it does not know, naming the ones it does', async function () {
    const run = await runTool(STAGES, ['--routes', 'bad,nope'])
    assert.equal(run.code, 2)
    assert.match(run.stderr, /--routes takes bad, good, express-json, streamparser-json, got "nope"/)
  })
})

describe('npm run metrics-cpu', function () {
  this.timeout(120_000)

  it('measures the lab idle and watched, and /good\'s uploads unwatched and watched, in turn', async function () {
    if (!procAvailable()) this.skip() // the next spec: it reads the server's CPU time from /proc
    const run = await runTool(METRICS_CPU, ['--seconds', '2', '--warmup', '1', '--size', '4MB', '--uploads', '2'])
    assert.equal(run.code, 0, run.stderr)
    const phases = tableRows(run.stdout).map(function phase (r) { return r.phase })
    assert.deepEqual(phases, ['0 clients', '1 clients @ 100 ms'])
    assert.match(run.stdout, /Watching costs -?[\d.]+ percentage points of one core/)
    assert.match(run.stdout, /\/good on 3\.8 MiB, 2 uploads per server in turn: [\d.]+ MB\/s unwatched, [\d.]+ MB\/s with one client at 100 ms/)
  })

  it('refuses where there is no /proc, saying why', async function () {
    if (procAvailable()) this.skip() // the spec above
    const run = await runTool(METRICS_CPU, ['--seconds', '1'])
    assert.equal(run.code, 1)
    assert.match(run.stderr, /needs \/proc \(Linux, outside portable mode\)/)
  })
})
