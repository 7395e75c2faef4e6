/**
 * The card as GitHub Classroom's autograding results (grader/card/classroom.js, `--classroom`):
 * written to a GITHUB_OUTPUT file, read back as GitHub Actions and the reporter read it
 * (test/classroom-reporter.js), the points totalled as GitHub Classroom shows them. Nothing
 * graded: the cards are made here (test/card-fixtures.js); test/slow/ci-workflows.test.js grades
 * a buffering and a streaming handler with the workflow's own command.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {
  AREA_POINTS, appendClassroomOutput, classroomError, classroomResults, fixSentence, pointShares, pointsLine
} from '../../grader/card/classroom.js'
import { AREAS, checksOf } from '../../grader/checks/index.js'
import { GRADER_FAILED } from '../../grader/run/run-checks.js'
import { readGradeArgs } from '../../scripts/grade/args.js'
import { gradedCard } from '../card-fixtures.js'
import { classroomTotals, parseRunnerResults, readStepOutputs } from '../classroom-reporter.js'

const MEMORY = ['growth against body size', 'growth against concurrency']

/** A buffering handler's card: its memory checks fail, with the line that allocated most. */
function bufferingCard (overrides = {}) {
  const card = gradedCard({ failing: MEMORY, ...overrides })
  card.handler = 'src/handler.mjs'
  card.memorySites = {
    sampled: true,
    growthMiB: 248.7,
    allocatedMiB: 75.6,
    note: 'sampled on one upload',
    lines: [{ file: 'src/handler.mjs', line: 28, functionName: 'bufferedCount', kinds: ['parsed', 'string'], allocatedMiB: 75.6, heldMiB: 70, share: 1, code: "doc = JSON.parse(json.toString('utf8'))", does: null }]
  }
  for (const check of card.checks) {
    if (check.area === 'memory') check.hint = "Your line src/handler.mjs:28 (bufferedCount) parses the whole body at once. Stream instead: pipeline(body, zlib.createGunzip(), a record scanner)."
  }
  return card
}

/** The results as the reporter gets them: appended to GITHUB_OUTPUT, read as a step output, decoded. */
async function asTheReporterReadsThem (results) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-classroom-'))
  try {
    const file = path.join(dir, 'output')
    fs.writeFileSync(file, 'other=1\n')
    assert.equal(await appendClassroomOutput(results, { GITHUB_OUTPUT: file }), file)
    const outputs = readStepOutputs(fs.readFileSync(file, 'utf8'))
    assert.equal(outputs.other, '1', 'what was in the file stays')
    return parseRunnerResults('grade', { GRADE_RESULTS: outputs.result })
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

describe('grader/card/classroom.js: the card as GitHub Classroom\'s points', function () {
  describe('a buffering handler (memory fails, every other area passes)', function () {
    it('gets partial credit: Points 96/120, and the reporter fails the step', async function () {
      const [decoded] = await asTheReporterReadsThem(classroomResults(bufferingCard()))
      assert.equal(decoded.results.status, 'fail')
      assert.deepEqual(classroomTotals([decoded]), { totalPoints: 96, maxPoints: 120, text: 'Points 96/120', failed: true })
    })

    it('has a test per check, named by its area and check, in the card\'s order', function () {
      const results = classroomResults(bufferingCard())
      assert.deepEqual(results.tests.map(function name (t) { return t.name }), checksOf(AREAS).map(function name (c) { return `${c.area}: ${c.name}` }))
      assert.deepEqual(results.tests.filter(function failed (t) { return t.status === 'fail' }).map(function name (t) { return t.name }), MEMORY.map(function name (n) { return `memory: ${n}` }))
    })

    it('names the student\'s line in each failed memory test, and the fix in one sentence', function () {
      const failed = classroomResults(bufferingCard()).tests.filter(function failed (t) { return t.status === 'fail' })
      for (const test of failed) {
        assert.equal(test.score, 0)
        assert.deepEqual([test.filename, test.line_no], ['src/handler.mjs', 28])
        assert.match(test.message, /^f \[limit: l\]\. Your line: src\/handler\.mjs:28 in bufferedCount: 75\.6 MiB allocated \(parsed, string\)/)
        assert.match(test.message, / Fix: Stream instead: pipeline\(body, zlib\.createGunzip\(\), a record scanner\)\.$/)
        assert.equal(test.test_code, test.message, 'the reporter\'s log prints test_code')
      }
    })

    it('says the figure of a failed check with no line, and its hint\'s first sentence', function () {
      const card = gradedCard({ failing: ['escapes'] })
      card.checks.find(function escapes (c) { return c.name === 'escapes' }).hint = 'Inside a string a backslash escapes. Let JSON.parse read the escapes.'
      const test = classroomResults(card).tests.find(function escapes (t) { return t.name === 'correctness: escapes' })
      assert.deepEqual([test.message, test.filename, test.line_no, test.score, test.max_score], ['f [limit: l]. Fix: Inside a string a backslash escapes.', '', 0, 0, 3])
    })
  })

  describe('a streaming handler (every check passes)', function () {
    it('gets full marks: Points 120/120, and the step passes', async function () {
      const [decoded] = await asTheReporterReadsThem(classroomResults(gradedCard()))
      assert.equal(decoded.results.status, 'pass')
      assert.ok(decoded.results.tests.every(function passed (t) { return t.status === 'pass' && t.line_no === 0 && t.test_code === '' }))
      assert.deepEqual(classroomTotals([decoded]), { totalPoints: 120, maxPoints: 120, text: 'Points 120/120', failed: false })
    })

    it('is graded only on the areas asked for (--only): Points 48/48 for correctness and memory', async function () {
      const [decoded] = await asTheReporterReadsThem(classroomResults(gradedCard({ areas: ['correctness', 'memory'] })))
      assert.equal(classroomTotals([decoded]).text, 'Points 48/48')
    })
  })

  describe('points', function () {
    it('gives each area AREA_POINTS, shared equally by its checks', function () {
      const tests = classroomResults(gradedCard()).tests
      for (const area of AREAS) {
        const points = tests.filter(function inArea (t) { return t.name.startsWith(`${area}: `) }).map(function max (t) { return t.max_score })
        assert.equal(points.reduce(function sum (a, b) { return a + b }, 0), AREA_POINTS, area)
        assert.equal(new Set(points).size, 1, `${area}: ${points}`)
      }
    })

    it('shares points in whole numbers that add up, whatever the number of checks', function () {
      assert.deepEqual(pointShares(24, 7), [4, 4, 4, 3, 3, 3, 3])
      for (let n = 1; n <= 30; n++) assert.equal(pointShares(AREA_POINTS, n).reduce(function sum (a, b) { return a + b }, 0), AREA_POINTS, String(n))
    })

    it('says the points as GitHub Classroom does, and how many tests failed', function () {
      assert.equal(pointsLine(classroomResults(bufferingCard())), 'Points 96/120 (2 of 19 tests failed)')
    })
  })

  describe('the flag (npm run grade -- FILE --classroom)', function () {
    it('asks for the results with one handler or a service, and is off by default', function () {
      assert.equal(readGradeArgs(['exercises/01-stream/starter.js', '--classroom']).classroom, true)
      assert.equal(readGradeArgs(['--url', 'http://127.0.0.1:3100/ingest', '--classroom']).classroom, true)
      assert.equal(readGradeArgs(['exercises/01-stream/starter.js']).classroom, false)
    })

    it('is refused with a folder and with --collect: one card, one student\'s CI', function () {
      assert.throws(function folder () { readGradeArgs(['exercises/', '--classroom']) }, /--classroom .*are for one card/)
      assert.throws(function collect () { readGradeArgs(['--collect', 'exercises/', '--seed', '1', '--classroom']) }, /--classroom grades one target/)
    })
  })

  describe('the fix sentence', function () {
    it('is the hint\'s first sentence, past one that only names the line', function () {
      assert.equal(fixSentence('Your route holds the whole body: stream it instead. Pipe the request.'), 'Your route holds the whole body: stream it instead.')
      assert.equal(fixSentence('Your line a.js:3 (f: x = JSON.parse(y)) parses it. Stream instead: pipeline().'), 'Stream instead: pipeline().')
      assert.equal(fixSentence('Use zlib.createGunzip() and JSON.parse each record, then answer.'), 'Use zlib.createGunzip() and JSON.parse each record, then answer.')
      assert.equal(fixSentence(null), null)
    })
  })

  describe('what reaches the reporter', function () {
    it('writes nothing when GITHUB_OUTPUT is not set', async function () {
      assert.equal(await appendClassroomOutput(classroomResults(gradedCard()), {}), null)
    })

    it('shows a name or a line the submission controls with its control characters escaped', function () {
      const card = bufferingCard()
      card.memorySites.lines[0].functionName = 'evil\x1b[2K\nPASS'
      const test = classroomResults(card).tests.find(function failed (t) { return t.status === 'fail' })
      assert.ok(!/[\x00-\x1f]/.test(test.message), test.message) // eslint-disable-line no-control-regex
      assert.match(test.message, /evil\\x1b\[2K\\nPASS/)
    })

    it('a check the grader failed on is a test in error, worth nothing, and says it was not the handler', async function () {
      const card = gradedCard({ failing: ['growth against concurrency'] })
      Object.assign(card.checks.find(function concurrency (c) { return c.name === 'growth against concurrency' }), { figure: GRADER_FAILED, reason: 'Error: the lab did not start within 20 s\n    at start (lab.js:1:1)' })
      const [decoded] = await asTheReporterReadsThem(classroomResults(card))
      const test = decoded.results.tests.find(function errored (t) { return t.status !== 'pass' })
      assert.deepEqual([test.status, test.score, test.message], ['error', 0, 'The grader failed on this check, not your handler (the lab did not start within 20 s): push again to grade again.'])
      assert.equal(decoded.results.status, 'error')
      assert.deepEqual(classroomTotals([decoded]), { totalPoints: 108, maxPoints: 120, text: 'Points 108/120', failed: true })
    })

    it('is "fail", not "error", when the handler failed a check beside one the grader failed on', function () {
      const card = gradedCard({ failing: MEMORY })
      card.checks.find(function concurrency (c) { return c.name === 'growth against concurrency' }).figure = GRADER_FAILED
      assert.equal(classroomResults(card).status, 'fail')
    })

    it('a grading with no card is one test in error, worth every point asked for: Points 0/48', async function () {
      const [decoded] = await asTheReporterReadsThem(classroomError('the handler would run as root', ['correctness', 'memory']))
      assert.equal(decoded.results.status, 'error')
      assert.equal(decoded.results.tests[0].message, 'the handler would run as root')
      assert.deepEqual(classroomTotals([decoded]), { totalPoints: 0, maxPoints: 48, text: 'Points 0/48', failed: true })
    })
  })
})
