/**
 * The card as GitHub Classroom's autograding results (`--classroom`): the JSON its autograding
 * reporter reads, base64-encoded, from a grading step's `result` output (docs/sources.md,
 * "GitHub Classroom"; docs/grading-in-ci.md, "Points in GitHub Classroom"). A test per check;
 * each area is worth AREA_POINTS, shared by its checks, so a failed check costs its share only.
 * A failed test's message is its figure against the limit, the student's line (a memory or a zip-bomb
 * check: the card's top allocation site, where the body is held) and the fix in one sentence. A check the grader itself failed on
 * is a test in error, saying why: worth nothing, but not blamed on the handler.
 */
import fs from 'node:fs'
import { AREAS } from '../checks/index.js'
import { GRADER_FAILED } from '../run/run-checks.js'
import { memorySitesOf, sitesLines } from './sites-lines.js'
import { shownText } from '../../lib/util/escape.js'

/** What each area is worth: a multiple of every area's number of checks, so that each check's share is whole. */
export const AREA_POINTS = 24

/**
 * @typedef {{ name: string, status: 'pass'|'fail'|'error', score: number, max_score: number, message: string,
 *   test_code: string, filename: string, line_no: number, duration: number }} ClassroomTest
 * @typedef {{ version: 1, status: 'pass'|'fail'|'error', max_score: number, tests: ClassroomTest[] }} ClassroomResults
 */

/**
 * @param {object} card as grade() or gradeService() returns it, or its --json document
 * @returns {ClassroomResults}
 */
export function classroomResults (card) {
  const sites = memorySitesOf(card)
  const topSite = sites?.lines?.[0] ?? null
  const tests = []
  for (const area of AREAS) {
    const checks = card.checks.filter(function inArea (c) { return c.area === area })
    const shares = pointShares(AREA_POINTS, checks.length)
    checks.forEach(function test (check, k) {
      const siteLine = namesTheLine(check) && topSite !== null ? sitesLines(sites)[0] : null
      tests.push(testOf(check, shares[k], siteLine === null ? null : topSite, siteLine))
    })
  }
  const failed = tests.some(function failing (t) { return t.status === 'fail' })
  const errored = tests.some(function erred (t) { return t.status === 'error' })
  return {
    version: 1,
    // the reporter fails the step on either; 'fail' when the handler failed a check
    status: failed || (card.passed === false && !errored) ? 'fail' : errored ? 'error' : 'pass',
    max_score: tests.reduce(function sum (n, t) { return n + t.max_score }, 0),
    tests
  }
}

/** Whether a failed check is the body held whole: a memory check, or a zip bomb let through (it inflated into that line). */
function namesTheLine (check) {
  return !check.pass && (check.area === 'memory' || (check.area === 'safety' && check.name.startsWith('zip bomb')))
}

/**
 * `points` shared by `n` checks in whole points, the first ones taking the remainder.
 * @returns {number[]}
 */
export function pointShares (points, n) {
  const base = Math.floor(points / n)
  return Array.from({ length: n }, function share (_, k) { return base + (k < points - base * n ? 1 : 0) })
}

/** The step output GitHub Actions reads from $GITHUB_OUTPUT: `result=` and the JSON in base64, one line. */
export function classroomOutputLine (results) {
  return `result=${Buffer.from(JSON.stringify(results), 'utf8').toString('base64')}\n`
}

/** What GitHub Classroom shows for these results, as its reporter totals them: `Points X/Y`. */
export function pointsLine (results) {
  const total = results.tests.reduce(function sum (n, t) { return n + t.score }, 0)
  const failed = results.tests.filter(function failing (t) { return t.status !== 'pass' }).length
  return `Points ${total}/${results.max_score} (${failed} of ${results.tests.length} tests failed)`
}

/**
 * Append the results to the file GitHub Actions names in GITHUB_OUTPUT.
 * @param {ClassroomResults} results
 * @param {NodeJS.ProcessEnv} env
 * @returns {Promise<string|null>} the file written, null when GITHUB_OUTPUT is not set
 */
export async function appendClassroomOutput (results, env) {
  const file = env.GITHUB_OUTPUT
  if (file === undefined || file === '') return null
  await fs.promises.appendFile(file, classroomOutputLine(results))
  return file
}

/** One check as a test: its share when it passed, none when it failed or the grader failed on it. */
function testOf (check, share, site, siteLine) {
  const graderFailed = !check.pass && check.figure === GRADER_FAILED
  const message = shownText(check.pass ? figureAgainstLimit(check) : graderFailed ? graderFailure(check) : failureMessage(check, siteLine))
  return {
    name: shownText(`${check.area}: ${check.name}`),
    status: check.pass ? 'pass' : graderFailed ? 'error' : 'fail',
    score: check.pass ? share : 0,
    max_score: share,
    message,
    // the reporter's log prints a test's test_code, never a failed test's message: the same words there
    test_code: check.pass ? '' : message,
    filename: shownText(site?.file ?? ''),
    line_no: site?.line ?? 0,
    duration: check.ms ?? 0
  }
}

/** Why the grader failed on a check, in its first line: grading again may pass. */
function graderFailure (check) {
  const why = String(check.reason ?? '').split('\n')[0].replace(/^Error: /, '')
  return `The grader failed on this check, not your handler${why === '' ? '' : ` (${why})`}: push again to grade again.`
}

function figureAgainstLimit (check) {
  return `${check.figure} [limit: ${check.limit}]`
}

/** The figure against the limit, the line (when one is named), and the fix. */
function failureMessage (check, siteLine) {
  const parts = [`${figureAgainstLimit(check)}.`]
  if (siteLine !== null) parts.push(`Your ${siteLine}.`)
  const fix = fixSentence(check.hint)
  if (fix !== null) parts.push(`Fix: ${fix}`)
  return parts.join(' ')
}

/**
 * The hint's first sentence that says what to do: a hint that opens by naming the line
 * (grader/checks/memory-sites.js) has its fix in the next one.
 * @param {string|null|undefined} hint
 * @returns {string|null}
 */
export function fixSentence (hint) {
  if (!hint) return null
  const sentences = hint.split(/(?<=[.!?])\s+(?=[A-Z])/)
  return sentences.find(function says (s) { return !s.startsWith('Your line ') }) ?? sentences[0]
}

/**
 * The results of a grading that ended without a card (a handler the grader will not run, a
 * crash): one test in error, worth every point of the areas asked for, so that the reporter
 * prints why and GitHub Classroom shows no points rather than none at all.
 * @param {string} message why there is no card
 * @param {string[]|null} [areas] the areas asked for (--only), all of them by default
 * @returns {ClassroomResults & { status: 'error' }}
 */
export function classroomError (message, areas = null) {
  const maxScore = (areas ?? AREAS).length * AREA_POINTS
  const text = shownText(message)
  return {
    version: 1,
    status: 'error',
    max_score: maxScore,
    tests: [{
      name: 'grading', status: 'error', score: 0, max_score: maxScore, message: text, test_code: text, filename: '', line_no: 0, duration: 0
    }]
  }
}
