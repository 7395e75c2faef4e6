/**
 * Inputs a handler cannot predict (grader/checks/bodies.js): every body a grading
 * sends is drawn from a seed of the run's own (crypto random unless
 * --seed names one), and each is sent with and without a Content-Length.
 * The framing-table cheat (test/fixtures/cheats/framing-table.js: 411 to
 * every chunked body, the big documents answered from a table of
 * Content-Length to answer made for the seed every run used to have) fails
 * every check it attacked.
 *
 * The gradings here use settings smaller than --quick (bodies of 2 to 8 MB,
 * 300 MB bombs, no reference curves) and the areas each assertion needs.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { cardJson, formatCard, grade } from '../../grader/index.js'
import {
  bombParams, brokenRecord, corrupt, escapes, everyTrap, generatedDocument, generatedSizes, layout,
  lookalikeStrings, multiByte, truncated, withSeed
} from '../../grader/checks/bodies.js'
import { areaVerdicts } from '../../grader/card/card.js'
import { validateCardJson } from '../../grader/card/card-json.js'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { TABLE, TABLE_BYTES, TABLE_SEED } from '../fixtures/cheats/framing-table.js'
import { procAvailable } from '../../lib/util/platform.js'
import { smallSettings } from '../grade-settings.js'

// the body-size curve on SMALL's bodies, up to 24 MB: a buffering path's rise there is well past the
// grader's noise floor (grader/checks/settings.js noiseMiB), which the table's 2 to 8 MB bodies barely pass
const SMALL = smallSettings({ concurrency: [1, 4], concurrencyBytes: TABLE_BYTES[1], speedBytes: TABLE_BYTES[2] })

const HONEST = 'exercises/02-exact/solution.js'
const CHEAT = 'test/fixtures/cheats/framing-table.js'
/** The cheat's run gets a seed of its own choosing, so that what its table knows is fixed: none of this seed's documents. */
const CHEAT_SEED = 20261125

describe('grading inputs a handler cannot predict', function () {
  let dir

  before(function makeDir () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-grade-inputs-'))
  })

  after(function removeDir () {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  describe('bodies drawn from a seed', function () {
    const makers = { lookalikeStrings, escapes, multiByte, layout, brokenRecord, everyTrap }

    it('makes the same bytes from the same seed, and other bytes from another', function () {
      for (const [name, make] of Object.entries(makers)) {
        assert.ok(make(11).gzip.equals(make(11).gzip), `${name}: seed 11 twice`)
        assert.ok(!make(11).gzip.equals(make(12).gzip), `${name}: seeds 11 and 12`)
      }
      for (const damaged of [truncated, corrupt]) {
        const again = damaged(lookalikeStrings(11), 11).map(function bytes (b) { return b.gzip })
        assert.deepEqual(damaged(lookalikeStrings(11), 11).map(function bytes (b) { return b.gzip }), again)
      }
      assert.deepEqual(generatedSizes(11), generatedSizes(11))
      assert.notDeepEqual(generatedSizes(11), generatedSizes(12))
      assert.deepEqual(bombParams('ratio', 3e8, 11), bombParams('ratio', 3e8, 11))
      assert.notDeepEqual(bombParams('ratio', 3e8, 11), bombParams('ratio', 3e8, 12))
      assert.notDeepEqual(bombParams('depth', 3e8, 11), bombParams('depth', 3e8, 12))
    })

    it('gives a generated document of one size another Content-Length and count under another seed', async function () {
      const one = await generatedDocument({ bytes: TABLE_BYTES[2], seed: 11, dir })
      const other = await generatedDocument({ bytes: TABLE_BYTES[2], seed: 12, dir })
      assert.notEqual(one.compressedBytes, other.compressedBytes)
      assert.notEqual(one.reference.items, other.reference.items)
    })

    it('keeps each run\'s seed to itself when two runs overlap in one process', async function () {
      async function seedAfterAWait (seed) {
        return withSeed(seed, async function run () {
          await new Promise(function later (resolve) { setTimeout(resolve, 20) })
          return { current: (await generatedDocument({ size: 10, dir })).seed, sizes: generatedSizes() }
        })
      }
      const [a, b] = await Promise.all([seedAfterAWait(101), seedAfterAWait(202)])
      assert.deepEqual(a, { current: 101, sizes: generatedSizes(101) })
      assert.deepEqual(b, { current: 202, sizes: generatedSizes(202) })
    })
  })

  describe('a seed per run', function () {
    const cards = []

    before(async function gradeTwice () {
      this.timeout(120_000)
      const runs = [0, 1].map(function gradeOnce () { return grade(HONEST, { preset: 'quick', settings: SMALL, areas: ['correctness'] }) })
      cards.push(...await Promise.all(runs))
    })

    it('draws a new seed for each run and names it on the card and in the JSON', function () {
      const [a, b] = cards
      assert.notEqual(a.seed, b.seed)
      for (const card of cards) {
        assert.match(formatCard(card), new RegExp(`seed ${card.seed}\\b`))
        assert.equal(cardJson(card).seed, card.seed)
        assert.deepEqual(validateCardJson(cardJson(card)), [])
      }
    })

    it('sends each run the documents its own seed draws', function () {
      for (const card of cards) {
        assert.equal(card.passed, true, formatCard(card))
        const generated = card.checks.find(function named (c) { return c.name === 'generated documents' })
        const labels = [...new Set(generated.details.answers.map(function label (a) { return a.label }))]
        assert.deepEqual(labels, generatedSizes(card.seed).map(function label (size) { return `${size} records` }))
      }
    })

    it('sends every body with and without a Content-Length', function () {
      for (const check of cards[0].checks.filter(function compared (c) { return c.details?.answers })) {
        const framings = new Set(check.details.answers.map(function framing (a) { return a.framing }))
        assert.deepEqual([...framings].sort(), ['chunked', 'length'], check.name)
      }
    })

    it('sends the same bodies again with --seed', async function () {
      this.timeout(120_000)
      const [a, b] = cards
      const out = path.join(dir, 'again')
      const json = path.join(dir, 'again.json')
      const run = await runCli([HONEST, '--quick', '--only', 'correctness', '--seed', String(a.seed), '--json', json, '--out', out])
      assert.equal(run.code, 0, run.stderr)
      assert.equal(JSON.parse(fs.readFileSync(json, 'utf8')).seed, a.seed)
      const again = JSON.parse(fs.readFileSync(path.join(out, 'results.json'), 'utf8')).card
      // the answers name every body's records: the same seed, the same bodies
      assert.deepEqual(answersOf(again), answersOf(a))
      assert.notDeepEqual(answersOf(b), answersOf(a))
    })
  })

  describe('the framing-table cheat', function () {
    let card

    before(async function gradeTheCheat () {
      this.timeout(180_000)
      card = await grade(CHEAT, { preset: 'quick', settings: SMALL, seed: CHEAT_SEED })
    })

    function check (name) {
      return card.checks.find(function named (c) { return c.name === name })
    }

    it('holds a table that answers the documents of the seed every run used to have', async function () {
      for (const bytes of TABLE_BYTES) {
        const doc = await generatedDocument({ bytes, seed: TABLE_SEED, dir })
        assert.deepEqual(TABLE.get(doc.compressedBytes), doc.reference, `${bytes} B`)
      }
    })

    it('finds none of the run\'s documents in its table', async function () {
      for (const bytes of TABLE_BYTES) {
        const doc = await generatedDocument({ bytes, seed: CHEAT_SEED, dir })
        assert.equal(TABLE.has(doc.compressedBytes), false, `${bytes} B`)
      }
    })

    it('fails correctness: every chunked body gets 411, and the reason says the framing decided', function () {
      assert.equal(areaVerdicts(card).correctness, false, formatCard(card))
      const generated = check('generated documents')
      assert.match(generated.figure, /411 length\.required \(.*chunked, no Content-Length\)/)
      assert.match(generated.reason, /answered with a Content-Length, not chunked/)
      const broken = check('a record that does not parse')
      assert.equal(broken.pass, false, broken.figure)
      assert.match(broken.figure, /a good body sent the same way: 411/)
    })

    it('fails every zip bomb: a 411 refuses a good chunked body too', function () {
      for (const variant of ['ratio', 'members', 'depth']) {
        const bomb = check(`zip bomb: ${variant}`)
        assert.equal(bomb.pass, false, bomb.figure)
        assert.match(bomb.figure, /^411 length\.required .* a good body sent the same way: 411/, bomb.figure)
        assert.match(bomb.reason, /depends on how the body is framed/)
      }
    })

    it('fails the truncated and corrupt bodies for the same reason', function () {
      for (const name of ['truncated body', 'corrupt body']) {
        assert.equal(check(name).pass, false, check(name).figure)
        assert.match(check(name).figure, /a good body sent the same way: 411/)
      }
    })

    it('fails memory: the table knows none of the documents, and the path behind it buffers', function () {
      if (!procAvailable()) this.skip() // a peak sampled with ps every 50 ms can miss these small bodies' short spikes
      assert.equal(check('growth against body size').pass, false, check('growth against body size').figure)
    })

    it('reads speed from the handler\'s own work: no table answer at thousands of MB/s', function () {
      const speed = card.checks.find(function speedCheck (c) { return c.area === 'speed' })
      const mbps = Number(/^([\d.]+) MB\/s/.exec(speed.figure)?.[1])
      // a table answers an 8 MB body before reading it (thousands of MB/s); parsing it, /good reads about 100
      assert.ok(mbps > 0 && mbps < 1000, speed.figure)
    })
  })
})

/** Each answer's body and figures: which records the bodies held. */
function answersOf (card) {
  return card.checks.flatMap(function answers (c) {
    return (c.details?.answers ?? []).map(function what (a) { return `${c.name} | ${a.label ?? a.body} | ${a.framing} | ${a.why}` })
  })
}

function runCli (args) {
  return new Promise(function run (resolve) {
    execFile(process.execPath, ['scripts/grade.js', ...args], { cwd: PROJECT_ROOT, timeout: 110_000 }, function done (err, stdout, stderr) {
      resolve({ code: err ? err.code : 0, stdout, stderr })
    })
  })
}
