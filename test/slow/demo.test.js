/**
 * npm run demo (scripts/demo.js): the classroom walkthrough, run end to end as
 * a class would see it, with tiny sizes (--quick), no pauses and a lab of its
 * own on a free port, then checked for what the teacher relies on: the
 * dashboard's address, the three steps, figures from the live runs, and
 * nothing left running afterwards.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { processAlive } from '../../lib/util/process-alive.js'

const DEMO = fileURLToPath(new URL('../../scripts/demo.js', import.meta.url))
const PROJECT = fileURLToPath(new URL('../..', import.meta.url))

/** Run the demo to its end: exit code and everything it printed. */
function runDemo (args) {
  return new Promise(function runToEnd (resolve, reject) {
    // stdin is not a terminal here, as in CI: the demo must not wait for Enter
    const child = spawn(process.execPath, [DEMO, ...args], {
      cwd: PROJECT,
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['pipe', 'pipe', 'pipe']
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8')
    child.stderr.setEncoding('utf8')
    child.stdout.on('data', function keepOut (chunk) { stdout += chunk })
    child.stderr.on('data', function keepErr (chunk) { stderr += chunk })
    child.once('error', reject)
    child.once('close', function closed (code, signal) { resolve({ code, signal, stdout, stderr }) })
    child.stdin.end()
  })
}

/** The table row of one route: its cells, without the padding. */
function tableRow (text, label) {
  const line = text.split('\n').find(function isRow (l) { return l.trim().startsWith(`| ${label}`) })
  assert.ok(line, `no table row for ${label} in:\n${text}`)
  return line.split('|').slice(1, -1).map(function trim (cell) { return cell.trim() })
}

function rowsOf (text, label) {
  return text.split('\n').filter(function isRow (l) { return l.trim().startsWith(`| ${label}`) })
    .map(function cells (line) { return line.split('|').slice(1, -1).map(function trim (cell) { return cell.trim() }) })
}

/** "+18.5 MiB" -> 18.5 */
function mibFigure (cell) {
  const match = /^\+(\d+\.\d) MiB$/.exec(cell)
  assert.ok(match, `"${cell}" is not a peak above idle in MiB`)
  return Number(match[1])
}

/** The text of one step, from its heading to the next one. */
function section (stdout, heading) {
  const start = stdout.indexOf(heading)
  assert.notEqual(start, -1, `no "${heading}" in:\n${stdout}`)
  const next = stdout.indexOf('━━ ', start + heading.length)
  return stdout.slice(start, next === -1 ? undefined : next)
}

describe('npm run demo (scripts/demo.js)', function () {
  describe('--quick --no-pause --port 0', function () {
    this.timeout(120_000)
    let run

    before(async function () {
      run = await runDemo(['--quick', '--no-pause', '--port', '0'])
    })

    it('exits 0', function () {
      assert.equal(run.code, 0, `exit ${run.code ?? run.signal}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`)
      assert.equal(run.stderr.trim(), '')
    })

    it('prints the dashboard URL of the lab it started, and tells the teacher to open it before step 1', function () {
      assert.match(run.stdout, /Dashboard: {2}http:\/\/127\.0\.0\.1:\d+\/\?window=5 /)
      assert.match(run.stdout, /Open the dashboard on the projector before step 1/)
      assert.ok(run.stdout.indexOf('Dashboard:') < run.stdout.indexOf('Step 1 of 3'))
    })

    it('walks through the three steps in order, each under its heading with a question for the class', function () {
      const headings = ['━━ Step 1 of 3: Buffered vs streamed ingest ━━', '━━ Step 2 of 3: The zip bomb ━━',
        '━━ Step 3 of 3: Buffered vs streamed upload to disk ━━', '━━ What we measured, in this run ━━']
      const at = headings.map(function position (h) { return run.stdout.indexOf(h) })
      for (const [k, h] of headings.entries()) assert.notEqual(at[k], -1, `no "${h}"`)
      assert.deepEqual([...at].sort(function byNumber (a, b) { return a - b }), at)
      for (const h of headings.slice(0, 3)) assert.match(section(run.stdout, h), /Ask the class: .+\?/)
    })

    it('step 1 prints a per-route table of the ingest run: every upload answered, peaks and throughput as numbers', function () {
      const text = section(run.stdout, 'Step 1 of 3')
      for (const label of ['/bad (buffered)', '/good (streamed)']) {
        const [, answered, peak, mbPerSecond, latency, answer] = tableRow(text, label)
        assert.equal(answered, '4/4', `${label} answered ${answered}`)
        assert.ok(mibFigure(peak) >= 0)
        assert.ok(Number(mbPerSecond) > 0, `${label} MB/s ${mbPerSecond}`)
        assert.match(latency, /^\d+(\.\d)? (ms|s) \/ \d+(\.\d)? (ms|s)$/)
        assert.match(answer, /^[\d,]+ items, sha256 [0-9a-f]{12}…$/)
      }
      // the two routes' answers, as printed, are the same document's
      assert.equal(tableRow(text, '/bad (buffered)')[5], tableRow(text, '/good (streamed)')[5])
    })

    it('step 1 gives the verdict that both routes answered identically', function () {
      assert.match(section(run.stdout, 'Step 1 of 3'), /✔ Answers identical: every upload to both routes gave the same summary/)
      assert.doesNotMatch(run.stdout, /Answers differ/)
    })

    it('step 2: /good refuses the zip bomb early, having inflated a sliver of it', function () {
      const text = section(run.stdout, 'Step 2 of 3')
      const bomb = /The bomb: ([\d.]+) GB of JSON in ([\d.]+) MB of gzip \((\d+):1\)/.exec(text)
      assert.ok(bomb, text)
      const refusal = /\/good refused it: 413 ratio\.too\.large after ([\d.]+) MB inflated, in [\d.]+ m?s; server peak \+([\d.]+) MiB above idle/.exec(text)
      assert.ok(refusal, text)
      assert.ok(Number(refusal[1]) * 1e6 < Number(bomb[1]) * 1e9 / 100, 'it stopped within the first percent of the bomb')
    })

    it('step 2: /bad, without its inflate limit, takes the worker past the 512 MiB budget, and the lab restarts it', function () {
      const text = section(run.stdout, 'Step 2 of 3')
      const killed = /\/bad: the worker passed its 512\.0 MiB budget \(RSS ([\d.]+) MiB\) and was killed/.exec(text)
      assert.ok(killed, text)
      assert.ok(Number(killed[1]) >= 512)
      const restart = /The lab restarted it in \d+ ms \(worker pid (\d+) → (\d+)\)/.exec(text)
      assert.ok(restart, text)
      assert.notEqual(restart[1], restart[2])
    })

    it('step 3 prints the upload figures per route and concurrency, every upload answered', function () {
      const text = section(run.stdout, 'Step 3 of 3')
      for (const label of ['/upload-stream (streamed)', '/upload-buffer (buffered)']) {
        const rows = rowsOf(text, label)
        assert.deepEqual(rows.map(function atOnce (cells) { return cells[1] }), ['1', '4'], `${label}: ${JSON.stringify(rows)}`)
        for (const [, atOnce, answered, peak, latency, mbPerSecond] of rows) {
          assert.equal(answered, `${atOnce}/${atOnce}`)
          assert.ok(mibFigure(peak) >= 0)
          assert.match(latency, /^\d+(\.\d)? (ms|s)$/)
          assert.ok(Number(mbPerSecond) > 0)
        }
      }
      assert.match(text, /At 4 at once, buffered needed [\d.]+x the memory of streamed/)
    })

    it('closes with the figures of this run, the same as the steps printed', function () {
      const text = section(run.stdout, 'What we measured')
      const bad = tableRow(section(run.stdout, 'Step 1 of 3'), '/bad (buffered)')[2]
      const good = tableRow(section(run.stdout, 'Step 1 of 3'), '/good (streamed)')[2]
      assert.ok(text.includes(`/bad ${bad}, /good ${good} above idle`), text)
      assert.match(text, /Zip bomb \(.*\): \/good refused it: 413 ratio\.too\.large/)
      assert.match(text, /Zip bomb: \/bad's worker was killed at [\d.]+ MiB \(budget 512\.0 MiB\)/)
      assert.match(text, /Upload, 4 x 1\.0 MB at once: buffered \+[\d.]+ MiB, streamed \+[\d.]+ MiB above idle/)
      assert.doesNotMatch(run.stdout, /step failed/)
    })

    it('stops the lab: its URL no longer answers and none of its processes is left', async function () {
      const url = /Dashboard: {2}(\S+)/.exec(run.stdout)[1]
      await assert.rejects(fetch(url, { signal: AbortSignal.timeout(2000) }), TypeError)
      const stopped = /The lab has stopped: supervisor (\d+), workers? ([\d, ]+) and (\d+) load process(es)? are gone\./.exec(run.stdout)
      assert.ok(stopped, run.stdout)
      const pids = [stopped[1], ...stopped[2].split(',')].map(Number)
      assert.equal(pids.length, 3, 'the supervisor and two workers: the first, and the one after the kill')
      for (const pid of pids) assert.equal(processAlive(pid), false, `process ${pid} is still running`)
    })
  })

  describe('--help', function () {
    it('prints the usage and exits 0 without starting a lab', async function () {
      const run = await runDemo(['--help'])
      assert.equal(run.code, 0)
      assert.match(run.stdout, /^Usage: node scripts\/demo\.js \[options\]/)
      for (const flag of ['--port N', '--open', '--no-pause', '--pause N', '--quick', '--help']) {
        assert.ok(run.stdout.includes(flag), `usage lacks ${flag}`)
      }
      assert.doesNotMatch(run.stdout, /Dashboard:/)
    })
  })

  describe('bad usage', function () {
    it('exits 2 naming an unknown flag, with the usage', async function () {
      const run = await runDemo(['--bogus'])
      assert.equal(run.code, 2)
      assert.match(run.stderr, /^demo: Unknown option '--bogus'/)
      assert.match(run.stderr, /Usage: node scripts\/demo\.js/)
      assert.equal(run.stdout, '')
    })

    it('exits 2 for a port that is not one', async function () {
      const run = await runDemo(['--port', 'eighty'])
      assert.equal(run.code, 2)
      assert.match(run.stderr, /--port takes a port from 0 to 65535, got "eighty"/)
    })

    it('exits 2 when told both to pause N seconds and not to pause', async function () {
      const run = await runDemo(['--pause', '5', '--no-pause'])
      assert.equal(run.code, 2)
      assert.match(run.stderr, /give --pause N or --no-pause, not both/)
    })
  })
})
