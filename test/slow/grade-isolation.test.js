/**
 * The grader measures from outside what it launched (docs/grading-isolation.md):
 * the student's handler runs in a process of its own, which the grader
 * starts on a socket it opened, reads from /proc, and kills with its whole
 * tree before the card is written; the reference routes run in a lab the
 * student's code never runs in. Each cheat that forged a card
 * is kept as a fixture (test/fixtures/cheats/), graded here, and fails the
 * check it attacked: the cheat has no hold on the figure any more.
 *
 * Each fixture is graded once, up front, two at a time, on the areas its
 * cheat attacked, with bodies smaller than --quick (as test/slow/grade.test.js
 * grades). The framing-table cheat, which attacks the inputs rather than
 * the process, is test/slow/grade-inputs.test.js's.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { formatCard, grade } from '../../grader/index.js'
import { StudentProcess, StudentProcesses } from '../../grader/student/student-process.js'
import { send } from '../../grader/checks/client.js'
import { LIMITS } from '../../grader/checks/settings.js'
import { PORTABLE_ENV, procAvailable } from '../../lib/util/platform.js'
import { psAvailable } from '../../grader/process/ps-memory.js'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { SMALL } from '../grade-settings.js'

/** test/fixtures/cheats/detached-rewriter.js's marks (not imported: importing it would run the cheat here) */
const REWRITER_MARK = 'streamlab-cheat-card-rewriter'
const REWRITER_DEFAULT_CARD = '/tmp/streamlab-cheat-card.json'

const CHEATS = 'test/fixtures/cheats'
const PROBE = 'test/fixtures/grade/isolation-probe.js'
const ROOT = typeof process.getuid === 'function' && process.getuid() === 0

/** name -> [fixture, the areas its cheat attacked] */
const RUNS = Object.freeze({
  patchesSend: [`${CHEATS}/patch-process-send.js`, ['memory']],
  ownReady: [`${CHEATS}/own-ready.js`, ['correctness']],
  answersStats: [`${CHEATS}/answers-stats.js`, ['resilience']],
  delaysOthers: [`${CHEATS}/delays-other-routes.js`, ['speed']]
})

describe('grading apart: the cheats that forged a card', function () {
  const cards = {}

  before(async function gradeEveryCheat () {
    this.timeout(240_000)
    const queue = Object.entries(RUNS)
    async function worker () {
      while (queue.length > 0) {
        const [name, [file, areas]] = queue.shift()
        cards[name] = await grade(file, { preset: 'quick', areas, settings: SMALL })
      }
    }
    await Promise.all([worker(), worker()])
  })

  function check (name, checkName) {
    const found = cards[name].checks.find(function named (c) { return c.name === checkName })
    assert.ok(found, `${checkName} in ${formatCard(cards[name])}`)
    return found
  }

  it('reads memory from /proc of the pid it spawned: a buffering handler that patches process.send still fails memory', function () {
    const bySize = check('patchesSend', 'growth against body size')
    assert.equal(bySize.pass, false, formatCard(cards.patchesSend))
    // a buffering route grows by a multiple of the body: hundreds of MiB per 100 MB, against a limit of 25
    assert.ok(bySize.details.slope > 100, `${bySize.figure}`)
    // a peak sampled with ps (no /proc, portable mode) can miss one curve's short spikes: there the body-size curve is the proof
    if (procAvailable()) assert.equal(check('patchesSend', 'growth against concurrency').pass, false, formatCard(cards.patchesSend))
  })

  it('serves the handler on the socket it opened: a ready of the handler\'s own, naming its own server, changes nothing', function () {
    const generated = check('ownReady', 'generated documents')
    assert.equal(generated.pass, false, formatCard(cards.ownReady))
    assert.match(generated.figure, /items 0, expected \d+/)
    // the run's URL is the reference lab's, which the grader started, not the server the handler announced
    assert.match(cards.ownReady.url, /^http:\/\/127\.0\.0\.1:\d+$/)
  })

  it('counts what is left from outside: a handler that holds its connections, and would answer the stats question, fails "nothing left pending"', function () {
    if (!procAvailable()) this.skip() // the connections a process holds are read from /proc; without it the card says so
    assert.equal(check('answersStats', 'answers after aborted uploads').pass, true, formatCard(cards.answersStats))
    const pending = check('answersStats', 'nothing left pending')
    assert.equal(pending.pass, false, formatCard(cards.answersStats))
    assert.ok(pending.details.open > 0, `held connections: ${JSON.stringify(pending.details)}`)
    assert.match(pending.figure, /[1-9]\d* connections held/)
  })

  it('times the reference routes in a process of their own: a slow handler that delays other routes through http.Server.prototype.emit fails speed', function () {
    const speed = check('delaysOthers', 'throughput against /streamparser-json')
    assert.equal(speed.pass, false, formatCard(cards.delaysOthers))
    // the patch slows the handler alone: about 1 MB/s against a textbook route of 15 to 30 on an idle
    // machine (5 beside two hogs in portable mode), a ratio under the limit; and /good is not delayed
    assert.ok(speed.details.ratio < LIMITS.speedRatio, speed.figure)
    const goodRuns = speed.details.runs.filter(function good (r) { return r.route === 'good' })
    assert.ok(goodRuns.every(function quick (r) { return r.status === 200 && r.ms < speed.details.runs.find(function mine (s) { return s.route === 'student' }).ms }), JSON.stringify(speed.details.runs))
  })

  it('carries the graded file\'s sha256 and how the student\'s process was isolated', function () {
    const card = cards.ownReady
    const digest = createHash('sha256').update(fs.readFileSync(RUNS.ownReady[0])).digest('hex')
    assert.equal(card.digest, digest)
    assert.equal(card.isolation.permission !== null, process.allowedNodeEnvironmentFlags.has('--experimental-permission') || process.allowedNodeEnvironmentFlags.has('--permission'))
    assert.ok(Array.isArray(card.isolation.notes))
  })

  it('writes the --json card after the student\'s whole tree is gone: a handler that starts a detached rewriter cannot change it', async function () {
    this.timeout(120_000)
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-isolation-'))
    const json = REWRITER_DEFAULT_CARD
    fs.rmSync(json, { force: true })
    const fixture = path.resolve(`${CHEATS}/detached-rewriter.js`)
    try {
      // watch for the card while the grader runs: when it appears, nothing of the student's may run
      const seenWithCard = []
      const watch = setInterval(function lookWhenWritten () {
        if (seenWithCard.length === 0 && fs.existsSync(json)) seenWithCard.push(processesRunning(fixture))
      }, 5)
      const run = await runCli([`${CHEATS}/detached-rewriter.js`, '--quick', '--only', 'correctness', '--json', json, '--out', path.join(dir, 'report')])
      clearInterval(watch)
      assert.equal(run.code, 1, run.stderr)
      assert.deepEqual(seenWithCard, [[]], 'no process of the student\'s ran when the card was written')
      const written = fs.readFileSync(json, 'utf8')
      const card = JSON.parse(written)
      assert.equal(card.verdict, 'fail')
      // the file says what the printed card says, check by check
      for (const c of card.checks) assert.match(run.stdout, new RegExp(`^${c.pass ? 'PASS' : 'FAIL'} {2}${c.area} +${escape(c.name)} `, 'm'))
      // a helper would rewrite the card a few hundred ms after the grader exits: none runs, and the file stays as written
      assert.deepEqual(processesRunning(REWRITER_MARK), [])
      await new Promise(function aMoment (resolve) { setTimeout(resolve, 1000) })
      assert.equal(fs.readFileSync(json, 'utf8'), written)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
      fs.rmSync(json, { force: true })
    }
  })

  describe('the student\'s process', function () {
    let student
    let students
    let probe

    before(async function startProbe () {
      this.timeout(30_000)
      students = new StudentProcesses()
      student = new StudentProcess({ handler: PROBE, budget: 2 ** 31, students })
      await student.start()
      const res = await send(student.urlOf('student'), { buffer: Buffer.from('{}'), timeoutMs: 10_000 })
      assert.equal(res.status, 200, res.text)
      probe = res.json
    })

    after(async function stopProbe () {
      await students?.stopAll()
    })

    it('is the pid the grader spawned, in a folder of its own that it alone may write', function () {
      assert.equal(probe.pid, student.pid)
      assert.match(probe.cwd, /streamlab-student-/)
      assert.equal(probe.writeOwnFolder, 'ok')
    })

    it('may not write outside its folder, read the run\'s data or /proc, start a process or a worker', function () {
      if (student.isolation.permission === null) this.skip()
      assert.equal(probe.writeOutside, 'ERR_ACCESS_DENIED')
      assert.equal(probe.readProject, 'ok')
      assert.equal(probe.readData, 'ERR_ACCESS_DENIED')
      assert.equal(probe.readProc, 'ERR_ACCESS_DENIED')
      assert.equal(probe.spawn, 'ERR_ACCESS_DENIED')
      assert.equal(probe.worker, 'ERR_ACCESS_DENIED')
    })

    it('runs as a user of its own, with no network, when the grader runs as root (where setpriv and unshare can)', function () {
      if (!ROOT) this.skip()
      assert.equal(student.isolation.notes.length, 0, student.isolation.notes.join('; '))
      assert.equal(probe.uid, student.isolation.user)
      assert.notEqual(probe.uid, 0)
      assert.equal(student.isolation.network, 'own namespace')
      // not even its own port answers it from inside: it reaches nothing
      assert.notEqual(probe.network, 'ok')
    })

    it('is stopped while a reference route is timed, and goes on after', async function () {
      if (!procAvailable()) this.skip() // that it stopped is confirmed in /proc/<pid>/stat
      const states = await students.pausedWhile(async function look () { return processState(student.pid) })
      assert.equal(states, 'T')
      assert.notEqual(processState(student.pid), 'T')
      assert.equal(await student.settle(), 'alive')
    })

    it('holds a connection the kernel shows, and none once the client\'s request is answered', async function () {
      if (!procAvailable()) this.skip() // the kernel's socket tables are read from /proc
      const stats = await student.stats()
      assert.equal(stats.source, 'kernel')
      assert.equal(stats.open, 0)
      assert.ok(stats.calls >= 1 && stats.answered === stats.calls, JSON.stringify(stats))
    })

    it('imports the packages the exercises allow from a handler outside the project, in the same isolation', async function () {
      this.timeout(30_000)
      if (!fs.existsSync(path.join(PROJECT_ROOT, 'grader', 'student', 'allow-packages.js'))) this.skip()
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-outside-'))
      // readable by others, as a user of the process's own needs
      fs.chmodSync(dir, 0o755)
      const file = path.join(dir, 'handler.js')
      fs.writeFileSync(file, "import getRawBody from 'raw-body'\nexport default async function sized (req, res) { res.json({ items: (await getRawBody(req)).length }) }\n")
      const outside = new StudentProcess({ handler: file, budget: 2 ** 31, students })
      try {
        await outside.start()
        const res = await send(outside.urlOf('student'), { buffer: Buffer.from('12345'), timeoutMs: 10_000 })
        assert.deepEqual([res.status, res.json], [200, { items: 5 }], res.text)
        // the same layers (each process draws a user of its own; the student's file is copied only
        // where its user cannot read it, as in a checkout under a private folder)
        assert.deepEqual({ ...outside.isolation, user: outside.isolation.user !== null, copied: null }, { ...student.isolation, user: student.isolation.user !== null, copied: null })
        assert.equal(outside.isolation.copied, false, 'a readable file runs where it is')
      } finally {
        await outside.stop()
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })

    it('is gone, with everything it started, once stopped', async function () {
      const pid = student.pid
      await student.stop()
      assert.equal(student.alive, false)
      assert.equal(fs.existsSync(`/proc/${pid}`) && processState(pid) !== 'Z', false)
    })
  })

  describe('without /proc (portable mode)', function () {
    it('reads memory with ps where there is no /proc (or says it could not), and does not ask the student\'s process', async function () {
      this.timeout(120_000)
      const before = process.env[PORTABLE_ENV]
      process.env[PORTABLE_ENV] = '1'
      let card
      try {
        card = await grade(`${CHEATS}/patch-process-send.js`, { preset: 'quick', areas: ['memory'], settings: { ...SMALL, sizes: [1e6, 2e6], concurrency: [1, 2], concurrencyBytes: 1e6 } })
      } finally {
        if (before === undefined) delete process.env[PORTABLE_ENV]
        else process.env[PORTABLE_ENV] = before
      }
      for (const c of card.checks) {
        // read with ps from outside (a sampled peak), or not at all: never the figure the process would send
        if (psAvailable()) {
          assert.match(c.figure, /^[+-][\d.]+ MiB per /, formatCard(card))
        } else {
          assert.equal(c.pass, false, formatCard(card))
          assert.match(c.figure, /memory could not be read from outside/, formatCard(card))
        }
      }
    })
  })
})

/** The pids whose command line holds `text` (not this process). */
function processesRunning (text) {
  const found = []
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue
    let cmdline
    try {
      cmdline = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8')
    } catch {
      continue
    }
    if (cmdline.includes(text) && processState(Number(name)) !== 'Z') found.push(Number(name))
  }
  return found
}

function processState (pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]
  } catch {
    return null
  }
}

function escape (text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

function runCli (args) {
  return new Promise(function run (resolve) {
    const child = spawn(process.execPath, ['scripts/grade.js', ...args], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', function keep (chunk) { stdout += chunk })
    child.stderr.setEncoding('utf8').on('data', function keep (chunk) { stderr += chunk })
    const timer = setTimeout(function tooLong () { child.kill('SIGKILL') }, 110_000)
    child.on('close', function done (code) {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}
