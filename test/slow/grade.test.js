/**
 * The grader (npm run grade, grader/): the cards of the exercises' starters
 * and solutions (exercise 1 has two: a scanner of its own and one on
 * @streamparser/json), handlers that throw, crash, never answer or answer
 * the wrong shape, the speed check's bar (the textbook route), and the
 * --json contract.
 *
 * Every card is graded once, up front, two at a time (each grading has a
 * student's process and a reference lab of its own, measured from outside,
 * so two do not share a figure),
 * with settings smaller than --quick: bodies of 2 to 24 MB, 300 MB bombs, no
 * reference curves (/good, /streamparser-json, /bad). The memory assertions
 * are the verdicts only, whose margins are wide: a buffering route's growth
 * rises by hundreds of MiB per 100 MB against a limit of 25, a streaming
 * one's by a few. So are the speed verdicts: both solutions of exercise 1
 * read about as fast as the textbook route or faster, against a limit of half.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { grade, AREAS, cardJson, formatCard } from '../../grader/index.js'
import { CHECKS } from '../../grader/checks/index.js'
import { areaVerdicts } from '../../grader/card/card.js'
import { validateCardJson } from '../../grader/card/card-json.js'
import { readFigures, judgeAnswer, referenceOf } from '../../grader/checks/reference.js'
import { leastSquaresSlope } from '../../grader/checks/figures.js'
import { median } from '../../lib/measure/stats.js'
import { normalizeSettings } from '../../grader/checks/settings.js'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { readRunRecord } from '../../lib/runs/format.js'
import { DATA_DIR_ENV } from '../../lib/util/project-root.js'
import { SMALL } from '../grade-settings.js'

const FIXTURES = 'test/fixtures/grade'

/**
 * What is graded, and how: name -> [file, grade options]. The solutions get
 * whole cards; the starters the areas their lessons are about, and correctness.
 */
const RUNS = Object.freeze({
  streamStarter: ['exercises/01-stream/starter.js', { areas: ['correctness', 'memory'] }],
  streamSolution: ['exercises/01-stream/solution-stream.js'],
  streamLibrary: ['exercises/01-stream/solution-library.js'],
  exactStarter: ['exercises/02-exact/starter.js', { areas: ['correctness', 'memory'] }],
  exactSolution: ['exercises/02-exact/solution.js'],
  bombStarter: ['exercises/03-bomb-safe/starter.js', { areas: ['correctness', 'memory', 'safety'] }],
  bombSolution: ['exercises/03-bomb-safe/solution.js'],
  throws: [`${FIXTURES}/throws.js`],
  crashes: [`${FIXTURES}/crashes.js`],
  // tiny deadlines: every check of it waits for one
  neverAnswers: [`${FIXTURES}/never-answers.js`, { settings: { requestMs: 1000, bombMs: 1500 } }],
  wrongShape: [`${FIXTURES}/wrong-shape.js`, { areas: ['correctness', 'safety'] }],
  router: [`${FIXTURES}/router.js`, { areas: ['correctness', 'resilience'] }],
  notAHandler: [`${FIXTURES}/not-a-handler.js`]
})

describe('npm run grade', function () {
  const cards = {}
  const times = {}

  before(async function gradeEverything () {
    // a deadline for a run that is stuck, not a speed target: on Node 24 in portable mode beside
    // two CPU hogs these gradings took about five minutes
    this.timeout(900_000)
    const queue = Object.entries(RUNS)
    async function worker () {
      while (queue.length > 0) {
        const [name, [file, options = {}]] = queue.shift()
        const started = Date.now()
        cards[name] = await grade(file, { preset: 'quick', ...options, settings: { ...SMALL, ...options.settings } })
        times[name] = Date.now() - started
      }
    }
    await Promise.all([worker(), worker()])
    if (process.env.STREAMLAB_GRADE_TIMES) console.log(times)
  })

  function verdicts (name) {
    return areaVerdicts(cards[name])
  }

  function explain (name) {
    return formatCard(cards[name])
  }

  describe('the exercises', function () {
    for (const name of ['streamSolution', 'streamLibrary', 'exactSolution', 'bombSolution']) {
      it(`passes every check of ${RUNS[name][0]}`, function () {
        assert.equal(cards[name].passed, true, explain(name))
        assert.equal(cards[name].checks.length, CHECKS.length)
      })
    }

    it('judges speed against the textbook route, with /good shown as the ceiling', function () {
      const speed = cards.streamLibrary.checks.find(function speedCheck (c) { return c.area === 'speed' })
      assert.equal(speed.name, 'throughput against /streamparser-json')
      assert.match(speed.limit, /^at least [\d.]+× \/streamparser-json$/)
      assert.match(speed.figure, /^[\d.]+ MB\/s, [\d.]+× \/streamparser-json \([\d.]+ MB\/s\); \/good [\d.]+ MB\/s \(on \d+ MB, median of \d+\)$/, speed.figure)
      const { studentMBps, textbookMBps, goodMBps, ratio } = speed.details
      assert.ok(studentMBps > 0 && textbookMBps > 0 && goodMBps > 0, JSON.stringify(speed.details))
      // the figures are rounded to 0.1 MB/s and the ratio to 0.01: within 3 % of each other
      assert.ok(Math.abs(ratio / (studentMBps / textbookMBps) - 1) < 0.03, `the ratio is the handler's median over the textbook route's: ${JSON.stringify(speed.details)}`)
    })

    it('fails the buffering starter on memory, and passes its answers', function () {
      const v = verdicts('streamStarter')
      assert.equal(v.memory, false, explain('streamStarter'))
      assert.equal(v.correctness, true, explain('streamStarter'))
      const bySize = cards.streamStarter.checks.find(function sizeCheck (c) { return c.name === 'growth against body size' })
      assert.equal(bySize.pass, false)
      assert.match(bySize.figure, /MiB per 100 MB/)
      assert.match(bySize.hint, /stream/)
    })

    it('fails the chunk-by-chunk counter on answers, and passes its memory', function () {
      const v = verdicts('exactStarter')
      assert.equal(v.correctness, false, explain('exactStarter'))
      assert.equal(v.memory, true, explain('exactStarter'))
      const lookalikes = cards.exactStarter.checks.find(function lookalikeCheck (c) { return c.name === 'strings that look like records' })
      assert.match(lookalikes.figure, /items \d+, expected \d+/)
    })

    it('fails the unguarded counter on zip bombs, and passes its answers and memory', function () {
      const v = verdicts('bombStarter')
      assert.equal(v.safety, false, explain('bombStarter'))
      assert.equal(v.correctness, true, explain('bombStarter'))
      assert.equal(v.memory, true, explain('bombStarter'))
      const bombs = cards.bombStarter.checks.filter(function bombCheck (c) { return c.name.startsWith('zip bomb') })
      // ratio, members, chained, and one per encoding the handler takes (gzip alone: the lab's contract)
      assert.equal(bombs.length, 4)
      assert.ok(bombs.some(function perEncoding (c) { return c.name === 'zip bomb: each encoding it takes' }))
      assert.ok(bombs.every(function failed (c) { return !c.pass }), explain('bombStarter'))
    })

    it('grades a handler exported as an express.Router()', function () {
      assert.equal(cards.router.passed, true, explain('router'))
      assert.deepEqual(cards.router.areas, ['correctness', 'resilience'])
    })
  })

  describe('handlers that misbehave', function () {
    it('fails a handler that throws, with its error and file as the reason', function () {
      const card = cards.throws
      assert.equal(card.passed, false)
      const first = card.checks[0]
      assert.match(first.figure, /500/)
      assert.match(first.reason, /the handler threw on purpose \(.*throws\.js:\d+/)
    })

    it('survives a handler that crashes its process, starts it again, and marks the rest of each area not run', function () {
      const card = cards.crashes
      assert.equal(card.passed, false)
      assert.ok(card.lab.restarts >= 1, `restarts: ${card.lab.restarts}`)
      // every area met the crash on a lab started again (or a fresh one): none was skipped for good
      for (const area of AREAS) {
        const [first, ...rest] = card.checks.filter(function inArea (c) { return c.area === area })
        assert.match(first.reason, /the student's process died .*crashed the process on purpose \(.*crashes\.js:\d+/, `${area}: ${first.reason}`)
        for (const c of rest) assert.match(c.reason, new RegExp(`not run: the student's process died in "${first.name}"`))
      }
    })

    it('fails a handler that never answers, one deadline per area', function () {
      const card = cards.neverAnswers
      assert.equal(card.passed, false)
      assert.match(card.checks[0].figure, /no answer within \d+ s/)
      const notRun = card.checks.filter(function skipped (c) { return c.figure === 'not run' })
      assert.ok(notRun.length >= 10, explain('neverAnswers'))
      assert.ok(times.neverAnswers < 60_000, `took ${times.neverAnswers} ms`)
    })

    it('fails a handler that answers the wrong shape, and says what it lacks', function () {
      const card = cards.wrongShape
      assert.equal(verdicts('wrongShape').correctness, false)
      assert.match(card.checks[0].figure, /no "items" in the answer \(keys: count, bytes\)/)
      assert.equal(verdicts('wrongShape').safety, false)
      const ratio = card.checks.find(function ratioBomb (c) { return c.name === 'zip bomb: ratio' })
      assert.match(ratio.figure, /^200: accepted/)
    })

    it('fails every check of a module that does not load, with the reason', function () {
      const card = cards.notAHandler
      assert.match(card.loadError, /no default export that is a function/)
      assert.ok(card.checks.every(function notRun (c) { return !c.pass && c.figure === 'not run' }))
    })
  })

  describe('the card as JSON', function () {
    it('holds every card to the schema', function () {
      for (const [name, card] of Object.entries(cards)) {
        assert.deepEqual(validateCardJson(cardJson(card)), [], name)
      }
    })

    it('refuses what breaks the schema', function () {
      const good = cardJson(cards.streamSolution)
      assert.deepEqual(validateCardJson(good), [])
      const bad = structuredClone(good)
      bad.checks[0].area = 'style'
      bad.checks[1].pass = 'yes'
      bad.checks[2].hint = 'a hint on a pass'
      delete bad.checks[3].limit
      const problems = validateCardJson(bad).join('\n')
      assert.match(problems, /checks\[0\]\.area must be one of/)
      assert.match(problems, /checks\[1\]\.pass must be a boolean/)
      assert.match(problems, /checks\[2\]\.hint must be null when the check passed/)
      assert.match(problems, /checks\[3\]\.limit must be a non-empty string/)
    })

    it('npm run grade -- --json writes the card and a run record, and exits 1 when a check fails', async function () {
      this.timeout(120_000)
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-grade-'))
      try {
        const json = path.join(dir, 'card.json')
        const data = path.join(dir, 'data')
        const run = await runCli([`${FIXTURES}/throws.js`, '--quick', '--only', 'correctness,speed', '--json', json, '--out', path.join(dir, 'report')], { [DATA_DIR_ENV]: data })
        assert.equal(run.code, 1, run.stderr)
        assert.match(run.stdout, /^FAIL {2}correctness {2}generated documents/m)
        const card = JSON.parse(fs.readFileSync(json, 'utf8'))
        assert.deepEqual(validateCardJson(card), [])
        assert.equal(card.handler, `${FIXTURES}/throws.js`)
        assert.deepEqual([...new Set(card.checks.map(function area (c) { return c.area }))], ['correctness', 'speed'])
        for (const file of ['results.json', 'report.html']) assert.ok(fs.existsSync(path.join(dir, 'report', file)), file)
        // the run record (grader/card/card-record.js), as npm run runs lists it
        const [recordFile] = fs.readdirSync(path.join(data, 'runs'))
        assert.match(run.stderr, new RegExp(`written: .*runs/${recordFile.replace('.', '\\.')}`))
        const record = readRunRecord(fs.readFileSync(path.join(data, 'runs', recordFile)), recordFile)
        assert.deepEqual([record.run.experiment, record.run.source, record.run.seed, record.run.params.target], ['grade', 'grade', card.seed, `${FIXTURES}/throws.js`])
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })

    it('answers a usage error with exit code 2', async function () {
      const run = await runCli(['no/such/handler.js'])
      assert.equal(run.code, 2)
      assert.match(run.stderr, /no such file/)
    })
  })

  describe('reading answers', function () {
    const reference = referenceOf('{"items":[{"id":1},{"id":2,"x":{"id":9}},{"id":"3"},{"id":4}]}')

    it('counts records and their top-level integer ids', function () {
      assert.deepEqual(reference, { items: 4, idSum: '7' })
    })

    it('reads the figures at the top level or under summary', function () {
      assert.deepEqual(readFigures({ items: 4, idSum: '7' }), { items: 4, idSum: '7' })
      assert.deepEqual(readFigures({ route: 'good', summary: { items: 4, idSum: '7', sha256: 'x' } }), { items: 4, idSum: '7' })
      assert.deepEqual(readFigures({ items: 4 }), { items: 4, idSum: null })
      assert.match(readFigures({ count: 4 }).problem, /no "items"/)
      assert.match(readFigures({ items: '4' }).problem, /whole number/)
      assert.match(readFigures({ items: 4, idSum: 7.5 }).problem, /decimal string/)
    })

    it('judges an answer against the reference', function () {
      assert.equal(judgeAnswer({ status: 200, json: { items: 4, idSum: '7' }, text: '' }, reference).ok, true)
      assert.equal(judgeAnswer({ status: 200, json: { items: 4 }, text: '' }, reference).ok, true)
      assert.match(judgeAnswer({ status: 200, json: { items: 4, idSum: '16' }, text: '' }, reference).why, /idSum 16, expected 7/)
      assert.match(judgeAnswer({ status: 0, json: null, text: '', error: 'timeout', ms: 5000 }, reference).why, /no answer within 5 s/)
    })

    it('measures a slope by least squares', function () {
      assert.equal(leastSquaresSlope([[0, 1], [1, 3], [2, 5]]), 2)
      assert.equal(leastSquaresSlope([[1, 7], [1, 9]]), 0)
    })

    it('takes the median of the speed rounds', function () {
      assert.equal(median([30, 10, 20]), 20)
      assert.equal(median([10, 40]), 25)
      assert.equal(median([]), null)
    })

    it('shows the lab\'s routes beside a memory line when they were measured', function () {
      const check = { area: 'memory', name: 'growth against body size', pass: true, figure: '+0.2 MiB per 100 MB', limit: 'at most 25', meaning: 'peak', details: { unit: 'MiB per 100 MB', referenceSlopes: { good: 0.4, 'streamparser-json': 1.1, bad: null } } }
      const card = { handler: 'h.js', preset: 'quick', ms: 1000, checks: [check], passed: true, lab: { restarts: 0 } }
      assert.match(formatCard(card), /\n {6}beside: \/good \+0\.4 · \/streamparser-json \+1\.1 · \/bad not measured \(MiB per 100 MB: /)
      const unmeasured = { ...card, checks: [{ ...check, details: { unit: 'MiB per 100 MB', referenceSlopes: null } }] }
      assert.doesNotMatch(formatCard(unmeasured), /beside/)
    })

    it('refuses unknown settings', function () {
      assert.throws(function unknown () { normalizeSettings('quick', { size: 1 }) }, /unknown grade setting "size"/)
      assert.throws(function falling () { normalizeSettings('quick', { sizes: [5e6, 1e6] }) }, /must rise/)
      assert.throws(function preset () { normalizeSettings('slow') }, /preset/)
    })
  })
})

function runCli (args, env = {}) {
  return new Promise(function run (resolve) {
    execFile(process.execPath, ['scripts/grade.js', ...args], { cwd: PROJECT_ROOT, timeout: 110_000, env: { ...process.env, ...env } }, function done (err, stdout, stderr) {
      resolve({ code: err ? err.code : 0, stdout, stderr })
    })
  })
}
