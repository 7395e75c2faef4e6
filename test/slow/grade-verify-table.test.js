/**
 * `--collect DIR --verify K` against a table made for the class's public seed
 * (test/fixtures/cheats/seed-table.js): graded with that seed, the handler passes the memory
 * area without reading a body; its card, honest to that grading, is collected, then graded again
 * on bodies of a fresh seed, where the handler buffers, and refused. Small settings
 * (test/grade-settings.js), memory only. The fast part, with a stand-in grading:
 * test/grade-collect-forged.test.js.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { cardJson } from '../../grader/card/card-json.js'
import { collectClass } from '../../grader/card/collect.js'
import { verifyLine } from '../../grader/card/verify.js'
import { labVersion } from '../../grader/student/lab-version.js'
import { grade } from '../../grader/run/grade-handler.js'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { seedTableHandler } from '../fixtures/cheats/seed-table.js'
import { smallSettings } from '../grade-settings.js'

// as test/slow/grade-verify.test.js: a buffering route's rise clears the noise floor on both curves
const SMALL = smallSettings({ sizes: [2e6, 8e6, 24e6], concurrency: [1, 4], concurrencyBytes: 8e6 })
const AREAS = ['memory']
/** The class's seed, as public as the students' workflow. */
const CLASS_SEED = 3085585045

describe('npm run grade -- --collect DIR --verify K: a table made for the class\'s seed', function () {
  let dir

  before(function makeDir () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-verify-table-'))
  })

  after(function removeDir () {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('passes a grading with the class\'s seed, and is refused when --verify grades it on fresh bodies', async function () {
    this.timeout(600_000)
    const folder = path.join(dir, 'cards', 'mallory')
    fs.mkdirSync(folder, { recursive: true })
    const handler = path.join(folder, 'handler.js')
    const inputs = path.join(PROJECT_ROOT, 'test-data', 'grade-verify-table')
    fs.writeFileSync(handler, await seedTableHandler({ seed: CLASS_SEED, sizes: [...SMALL.sizes, SMALL.concurrencyBytes], dir: inputs }))
    const graded = await grade(handler, { preset: 'quick', settings: SMALL, areas: AREAS, seed: CLASS_SEED, isolation: { submission: folder } })
    const card = cardJson(graded)
    assert.equal(card.verdict, 'pass', `the table passes with its own seed: ${JSON.stringify(card.checks)}`)
    fs.writeFileSync(path.join(folder, 'card.json'), JSON.stringify({ ...card, handler: 'handler.js' }))

    const out = path.join(dir, 'out')
    const result = await collectClass(path.join(dir, 'cards'), {
      csv: path.join(out, 'class.csv'),
      html: path.join(out, 'class.html'),
      seed: CLASS_SEED,
      preset: 'quick',
      areas: AREAS,
      labVersion: await labVersion(),
      verify: { count: 1, seed: 1, settings: SMALL }
    })
    assert.notEqual(result.verify.bodySeed, CLASS_SEED)
    assert.deepEqual(result.verify.disagree, ['mallory'], verifyLine(result.verify))
    const [row] = result.rows
    assert.equal(row.verdict, 'refused')
    assert.match(row.error, /^not collected: the card disagrees with its submission graded here \(--verify\): memory: the card says pass, graded here fail/)
    const line = new RegExp(`on bodies of seed ${result.verify.bodySeed}, not the cards'.*1 disagrees \\(mallory\\), refused$`)
    assert.match(verifyLine(result.verify), line)
  })
})
