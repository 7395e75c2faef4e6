/**
 * `--collect DIR --verify K` with real gradings (grader/card/verify.js): a
 * class of two, alice's card honest (exercise 1's streaming solution, graded
 * here first, as her CI would), mallory's forged (exercise 1's buffering
 * starter beside alice's card, its sha256 made to match). Both are graded
 * again; mallory's card is refused for its memory verdict. Small settings
 * (test/grade-settings.js), correctness and memory only: seconds, not minutes.
 * The fast part, with a stand-in grading: test/grade-collect-forged.test.js.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { cardJson } from '../../grader/card/card-json.js'
import { collectClass } from '../../grader/card/collect.js'
import { fileDigest } from '../../grader/student/digest.js'
import { labVersion } from '../../grader/student/lab-version.js'
import { grade } from '../../grader/run/grade-handler.js'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { smallSettings } from '../grade-settings.js'

// as test/slow/grade-class.test.js: a buffering route's rise clears the noise floor on both curves
const SMALL = smallSettings({ sizes: [2e6, 8e6, 24e6], concurrency: [1, 4], concurrencyBytes: 8e6 })
const AREAS = ['correctness', 'memory']
const SEED = 1234

describe('npm run grade -- --collect DIR --verify K', function () {
  let dir

  before(function makeDir () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-verify-'))
  })

  after(function removeDir () {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('grades both submissions again and refuses the card whose verdict its submission does not get', async function () {
    this.timeout(600_000)
    const cards = path.join(dir, 'cards')
    const student = function student (name, source) {
      fs.mkdirSync(path.join(cards, name), { recursive: true })
      fs.copyFileSync(path.join(PROJECT_ROOT, source), path.join(cards, name, 'handler.js'))
      return path.join(cards, name, 'handler.js')
    }
    const alice = student('alice', 'exercises/01-stream/solution-stream.js')
    const mallory = student('mallory', 'exercises/01-stream/starter.js')
    const card = cardJson(await grade(alice, { preset: 'quick', settings: SMALL, areas: AREAS, seed: SEED, isolation: { submission: path.dirname(alice) } }))
    assert.equal(card.verdict, 'pass', JSON.stringify(card.checks))
    const honest = { ...card, handler: 'handler.js' }
    fs.writeFileSync(path.join(cards, 'alice', 'card.json'), JSON.stringify(honest))
    fs.writeFileSync(path.join(cards, 'mallory', 'card.json'), JSON.stringify({ ...honest, sha256: await fileDigest(mallory) }))

    const out = path.join(dir, 'out')
    const result = await collectClass(cards, {
      csv: path.join(out, 'class.csv'),
      html: path.join(out, 'class.html'),
      seed: SEED,
      preset: 'quick',
      areas: AREAS,
      labVersion: await labVersion(),
      verify: { count: 2, seed: 1, settings: SMALL }
    })
    const [aliceRow, malloryRow] = result.rows
    assert.deepEqual(result.verify.chosen, ['alice', 'mallory'])
    assert.ok(result.verify.disagree.includes('mallory'))
    assert.equal(malloryRow.verdict, 'refused')
    assert.match(malloryRow.error, /^not collected: the card disagrees with its submission graded here \(--verify\): memory: the card says pass, graded here fail/)
    assert.match(malloryRow.notes, new RegExp(`graded here \\(--verify, seed ${result.verify.bodySeed}\\): fail \\d+/10$`))
    // alice's verdicts agree; her figures are a busy machine's, held to the baseline's tolerance, so only the verdicts are asserted
    assert.doesNotMatch(aliceRow.error ?? '', /the card says/)
  })
})
