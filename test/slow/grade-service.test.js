/**
 * Grading a service (npm run grade -- --url URL [--start "CMD"] [--pid N],
 * grader/service/): the handler's checks aimed at an ingest endpoint in
 * another stack. The examples of examples/services/ (Node's own http
 * module, buffering and streaming; Python's standard library, buffering;
 * Fastify's JSON parser with bodyLimit) are started by the grader with
 * --start; fixtures of test/fixtures/services/ hang on a bomb, crash on a
 * body, or answer without a summary; and a service the spec starts itself
 * is graded by its pid, and with no pid at all.
 *
 * Every card is graded once, up front, two at a time, on settings smaller
 * than --quick (as test/slow/grade.test.js grades handlers), and only in the
 * areas each spec is about. The memory assertions are verdicts, whose
 * margins are wide: a buffering service grows by hundreds of MiB per 100 MB
 * against a limit of 25; where there is no /proc the peak is sampled with
 * `ps`, which can miss one curve's short spikes, so a buffering service is
 * held to failing memory by either curve.
 */
import assert from 'node:assert/strict'
import { spawn, execFile } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { cardJson, classifyUrl, formatCard, gradeService } from '../../grader/index.js'
import { CHECKS } from '../../grader/checks/index.js'
import { areaVerdicts } from '../../grader/card/card.js'
import { validateCardJson } from '../../grader/card/card-json.js'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { procAvailable } from '../../lib/util/platform.js'
import { psAvailable } from '../../grader/process/ps-memory.js'
import { SMALL } from '../grade-settings.js'

/** The deadline of a bomb for the service that never answers one: each of its three bombs costs one. */
const HANG_BOMB_MS = 3000

const SERVICES = 'examples/services'
const FIXTURES = 'test/fixtures/services'

/** A loopback port nothing listens on now. */
function freePort () {
  return new Promise(function listen (resolve, reject) {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', function opened () {
      const { port } = server.address()
      server.close(function closed () { resolve(port) })
    })
  })
}

/** A non-loopback address of this machine, or null. */
function ownAddress () {
  const found = Object.values(os.networkInterfaces()).flat().find(function external (i) { return !i.internal && i.family === 'IPv4' })
  return found?.address ?? null
}

/** Start a service as its operator would (not the grader): resolves once it answers. */
async function runService (file, port, env = {}) {
  const [command, ...args] = file.endsWith('.py') ? ['python3', file] : [process.execPath, file]
  const child = spawn(command, args, { cwd: PROJECT_ROOT, env: { ...process.env, PORT: String(port), ...env }, stdio: 'ignore' })
  const host = env.HOST ?? '127.0.0.1'
  for (let k = 0; k < 100; k++) {
    const answered = await new Promise(function ask (resolve) {
      const socket = net.connect(port, host, function connected () { socket.destroy(); resolve(true) })
      socket.on('error', function notYet () { resolve(false) })
    })
    if (answered) return child
    await new Promise(function later (resolve) { setTimeout(resolve, 100) })
  }
  child.kill('SIGKILL')
  throw new Error(`${file} did not listen on ${host}:${port}`)
}

function runCli (args) {
  return new Promise(function run (resolve) {
    execFile(process.execPath, ['scripts/grade.js', ...args], { cwd: PROJECT_ROOT, timeout: 110_000 }, function done (err, stdout, stderr) {
      resolve({ code: err ? err.code : 0, stdout, stderr })
    })
  })
}

function check (card, name) {
  const found = card.checks.find(function named (c) { return c.name === name })
  assert.ok(found, `no check "${name}" on the card`)
  return found
}

describe('npm run grade -- --url: grading a service', function () {
  const cards = {}
  const watched = {}
  const address = ownAddress()

  before(async function gradeEverything () {
    this.timeout(400_000)
    // services the spec runs itself: one graded by its pid, one with no pid, one at a non-loopback address
    const [pidPort, noPidPort, remotePort] = [await freePort(), await freePort(), await freePort()]
    watched.byPid = await runService(`${SERVICES}/buffering.js`, pidPort)
    watched.noPid = await runService(`${SERVICES}/buffering.js`, noPidPort)
    if (address !== null) watched.remote = await runService(`${FIXTURES}/answers-ok.js`, remotePort, { HOST: address })
    const runs = {
      nodeBuffering: { command: `node ${SERVICES}/buffering.js`, areas: ['correctness', 'memory'] },
      nodeStreaming: { command: `node ${SERVICES}/streaming.js` },
      python: { command: `python3 ${SERVICES}/buffering.py`, areas: ['memory'] },
      fastify: { command: `node ${SERVICES}/fastify.js`, headers: { 'content-type': 'application/json' }, areas: ['correctness', 'memory'] },
      statusOnly: { command: `node ${FIXTURES}/answers-ok.js`, areas: ['correctness'] },
      hangsOnBomb: { command: `node ${FIXTURES}/hangs-on-bomb.js`, areas: ['safety'], settings: { bombMs: HANG_BOMB_MS } },
      crashes: { command: `node ${FIXTURES}/crashes.js`, areas: ['safety'], settings: { bombBytes: 3e7 } },
      // a 60 MB body buffered holds about five times that: past a 150 MiB budget, which the 8 MB one is not
      overBudget: { command: `node ${SERVICES}/buffering.js`, areas: ['memory'], settings: { sizes: [2e6, 8e6, 60e6], memoryBudget: 150 * 1024 * 1024 } },
      // a budget it passes at 24 MB: the grader says so, and never kills a process it did not start
      byPid: { pid: watched.byPid.pid, port: pidPort, areas: ['memory'], settings: { memoryBudget: 128 * 1024 * 1024 } },
      noPid: { port: noPidPort, areas: ['correctness', 'memory'] },
      ...(address === null ? {} : { remote: { url: `http://${address}:${remotePort}/ingest`, allowRemote: true, areas: ['correctness', 'memory'] } })
    }
    const queue = Object.entries(runs)
    async function worker () {
      while (queue.length > 0) {
        const [name, run] = queue.shift()
        const port = run.port ?? await freePort()
        cards[name] = await gradeService({
          url: run.url ?? `http://127.0.0.1:${port}/ingest`,
          command: run.command,
          pid: run.pid,
          headers: run.headers,
          allowRemote: run.allowRemote,
          areas: run.areas,
          preset: 'quick',
          settings: { ...SMALL, ...run.settings }
        })
      }
    }
    try {
      await Promise.all([worker(), worker()])
    } finally {
      watched.byPidAliveAfter = watched.byPid.exitCode === null && watched.byPid.signalCode === null
      for (const child of Object.values(watched)) if (typeof child === 'object') child.kill('SIGKILL')
    }
  })

  function explain (name) {
    return formatCard(cards[name])
  }

  describe('services in other stacks, started by the grader', function () {
    it('fails the buffering Node http service on memory, with figures, and passes its answers by the summary contract', function () {
      const card = cards.nodeBuffering
      const v = areaVerdicts(card)
      assert.equal(v.correctness, true, explain('nodeBuffering'))
      assert.equal(v.memory, false, explain('nodeBuffering'))
      assert.equal(card.service.mode, 'started')
      assert.equal(card.service.contract, 'summary')
      assert.match(check(card, 'growth against body size').figure, /^[+-][\d.]+ MiB per 100 MB \(\+[\d.]+ \/ \+[\d.]+ \/ \+[\d.]+ MiB\)$/)
      assert.match(check(card, 'growth against concurrency').figure, /^[+-][\d.]+ MiB per upload in flight/)
      const text = formatCard(card)
      assert.match(text, /^Grade card: service http:\/\/127\.0\.0\.1:\d+\/ingest /)
      assert.match(text, /target: started by the lab: node examples\/services\/buffering\.js/)
      assert.match(text, /contract: summary/)
    })

    it('passes the streaming Node http service on every check', function () {
      const card = cards.nodeStreaming
      assert.equal(card.passed, true, explain('nodeStreaming'))
      assert.equal(card.checks.length, CHECKS.length)
      for (const variant of ['ratio', 'members', 'depth']) assert.match(check(card, `zip bomb: ${variant}`).figure, /^413 after/)
    })

    it('fails the buffering Python service on memory, and reads its whole tree from outside', function () {
      const card = cards.python
      assert.equal(areaVerdicts(card).memory, false, explain('python'))
      assert.match(check(card, 'growth against body size').figure, /MiB per 100 MB/)
      assert.equal(card.loadError, null)
    })

    it('grades Fastify\'s JSON parser with bodyLimit, given the content type it needs: right answers, memory that grows with the body', function () {
      const card = cards.fastify
      assert.equal(areaVerdicts(card).correctness, true, explain('fastify'))
      assert.equal(areaVerdicts(card).memory, false, explain('fastify'))
      assert.deepEqual(card.service.headers, ['content-type'])
      assert.match(formatCard(card), /headers sent with every body: content-type/)
    })
  })

  describe('services that misbehave', function () {
    it('fails a service that never answers a bomb at the card\'s deadline, starts it again, and goes on', function () {
      const card = cards.hangsOnBomb
      for (const variant of ['ratio', 'members']) {
        const bomb = check(card, `zip bomb: ${variant}`)
        assert.equal(bomb.pass, false, explain('hangsOnBomb'))
        assert.match(bomb.figure, new RegExp(`^no answer within ${HANG_BOMB_MS / 1000} s`), explain('hangsOnBomb'))
        // the deadline, the small body that shows it still answers, and a start: well under three deadlines
        assert.ok(bomb.ms < HANG_BOMB_MS * 3 + 5000, `${variant}: ${bomb.ms} ms`)
      }
      // the honest bodies after the bombs are answered by a service started again
      assert.equal(check(card, 'corrupt body').pass, true, explain('hangsOnBomb'))
      assert.equal(check(card, 'truncated body').pass, true, explain('hangsOnBomb'))
    })

    it('reports a service that exits on a body as a crash, with its exit code, not as a hang', function () {
      const card = cards.crashes
      const corrupt = check(card, 'corrupt body')
      assert.equal(corrupt.pass, false, explain('crashes'))
      assert.match(corrupt.reason, /^the service died \(exit code 3\)/, explain('crashes'))
      assert.doesNotMatch(corrupt.figure, /no answer within/)
      assert.ok(card.lab.deaths >= 1)
    })
  })

  describe('the memory watch', function () {
    it('kills a service it started past the grader\'s budget, says so with the figure, and starts it again for what follows', function () {
      // the budget is watched where /proc is (every 25 ms); without it, not at all
      if (!procAvailable()) this.skip()
      const card = cards.overBudget
      const sizes = check(card, 'growth against body size')
      assert.equal(sizes.pass, false, explain('overBudget'))
      assert.match(sizes.figure, /^killed at 60 MB: \+[\d.]+ MiB and rising/, explain('overBudget'))
      assert.match(sizes.reason, /^the service was killed: its RSS reached \d+ MiB, past the grader's budget of 150 MiB \(the lab started it, so it starts it again\)/)
      const next = check(card, 'growth against concurrency')
      assert.match(next.reason, /started again for the next area/, explain('overBudget'))
      assert.ok(card.lab.deaths >= 1)
    })
  })

  describe('what the grader knows of the service', function () {
    it('reads the memory of a process it did not start by its pid, and never signals it, even past the budget', function () {
      const card = cards.byPid
      assert.equal(card.service.mode, 'watched')
      assert.equal(card.service.pid, watched.byPid.pid)
      assert.ok(watched.byPidAliveAfter, 'the watched process still ran after the grading')
      if (!procAvailable() && !psAvailable()) this.skip()
      for (const c of card.checks) assert.match(c.figure, /^[+-][\d.]+ MiB per /, explain('byPid'))
      assert.match(formatCard(card), /target: watched: pid \d+/)
      // the budget is watched where /proc is (every 25 ms); without it, not at all
      if (procAvailable()) assert.match(card.service.notes.join('\n'), /past the grader's budget of 128 MiB: the lab did not start it, so it was not killed/)
    })

    it('says memory could not be judged when it has no pid, and does not count it as passed', function () {
      const card = cards.noPid
      assert.equal(card.service.mode, 'unwatched')
      assert.equal(areaVerdicts(card).correctness, true, explain('noPid'))
      for (const name of ['growth against body size', 'growth against concurrency']) {
        const c = check(card, name)
        assert.equal(c.pass, false)
        assert.match(c.figure, /^not judged: no pid/)
        assert.match(c.hint, /--start .*--pid/)
      }
      assert.equal(card.passed, false)
      assert.match(formatCard(card), /no pid \(neither --start nor --pid\): memory could not be judged/)
    })

    it('judges a service whose answers carry no summary by the status contract, and says so', function () {
      const card = cards.statusOnly
      assert.equal(card.service.contract, 'status')
      assert.equal(card.passed, true, explain('statusOnly'))
      assert.match(check(card, 'generated documents').figure, /^6\/6 answered 2xx/)
      assert.match(check(card, 'generated documents').limit, /status contract/)
      assert.match(formatCard(card), /contract: status .*a small valid document got 202 with no summary fields/)
      assert.equal(cards.nodeBuffering.service.contract, 'summary')
    })

    it('grades a target that is not loopback only with --allow-remote, and says so on the card', function () {
      if (address === null) this.skip()
      const card = cards.remote
      assert.equal(card.service.remote, true)
      assert.equal(areaVerdicts(card).correctness, true, explain('remote'))
      assert.match(formatCard(card), /remote: the target is not on this machine \(--allow-remote\)/)
      assert.match(check(card, 'growth against body size').figure, /^not judged/)
    })

    it('holds every service card to the --json schema, with its service', function () {
      for (const [name, card] of Object.entries(cards)) {
        const doc = cardJson(card)
        assert.deepEqual(validateCardJson(doc), [], name)
        assert.equal(doc.sha256, null)
        assert.equal(doc.service.url, card.service.url)
      }
    })
  })

  describe('the command line', function () {
    it('classifies loopback targets: 127.0.0.0/8, ::1 and localhost only', function () {
      for (const url of ['http://127.0.0.1:3000/x', 'http://127.1.2.3/', 'http://[::1]:80/', 'http://localhost:8080/ingest']) assert.equal(classifyUrl(url).loopback, true, url)
      for (const url of ['http://192.0.2.1/', 'http://10.0.0.1:80/', 'http://[fd00::2]/', 'http://example.com/']) assert.equal(classifyUrl(url).loopback, false, url)
      assert.match(classifyUrl('https://127.0.0.1/').problem, /only http:\/\//)
    })

    it('refuses a remote URL without --allow-remote, with exit code 2', async function () {
      const run = await runCli(['--url', 'http://192.0.2.1:9/ingest', '--only', 'correctness'])
      assert.equal(run.code, 2)
      assert.match(run.stderr, /not a loopback address .* --allow-remote/)
      const both = await runCli(['--url', 'http://127.0.0.1:9/ingest', '--start', 'node x.js', '--pid', '1'])
      assert.equal(both.code, 2)
      assert.match(both.stderr, /--start or --pid, not both/)
    })

    it('starts a service, grades it and stops it: --json with its service, exit 0 when every check passes', async function () {
      this.timeout(120_000)
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-service-'))
      try {
        const port = await freePort()
        const json = path.join(dir, 'card.json')
        const run = await runCli(['--url', `http://127.0.0.1:${port}/ingest`, '--start', `node ${SERVICES}/streaming.js`, '--quick', '--only', 'correctness', '--json', json, '--out', path.join(dir, 'report')])
        assert.equal(run.code, 0, run.stdout + run.stderr)
        assert.match(run.stdout, /contract: summary/)
        const card = JSON.parse(fs.readFileSync(json, 'utf8'))
        assert.deepEqual(validateCardJson(card), [])
        assert.equal(card.service.mode, 'started')
        assert.equal(card.service.command, `node ${SERVICES}/streaming.js`)
        // stopped: nothing answers at its port any more
        const answered = await new Promise(function ask (resolve) {
          const socket = net.connect(port, '127.0.0.1', function connected () { socket.destroy(); resolve(true) })
          socket.on('error', function refused () { resolve(false) })
        })
        assert.equal(answered, false)
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })
  })
})
