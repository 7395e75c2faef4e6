/**
 * Cards written by hand (grader/card/collect.js, card-json.js, measures.js):
 * a card with the right sha256 is still refused unless its checks are the
 * grader's own for its areas and every figure is in its range and direction;
 * and `--verify K` grades K collected cards' submissions again and refuses each
 * card that disagrees (grader/card/verify.js), here with a stand-in for grade()
 * (the real grading: test/slow/grade-verify.test.js).
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { cardJson } from '../grader/card/card-json.js'
import { collectClass } from '../grader/card/collect.js'
import { chooseCards, verifyLine } from '../grader/card/verify.js'
import { labVersion } from '../grader/student/lab-version.js'
import { PROJECT_ROOT } from '../lib/config/options.js'
import { gradedCard } from './card-fixtures.js'
import { parseCsv } from './csv.js'

const SEED = 3085585045
const STREAMS = 'export default function streams (req, res) { res.end() }\n'
const BUFFERS = 'export default function buffers (req, res) { res.end("held") }\n'

function digestOf (text) {
  return createHash('sha256').update(text).digest('hex')
}

function runCli (args) {
  return new Promise(function run (resolve) {
    execFile(process.execPath, ['scripts/grade.js', ...args], { cwd: PROJECT_ROOT, timeout: 20_000 }, function done (err, stdout, stderr) {
      resolve({ code: err ? err.code : 0, stdout, stderr })
    })
  })
}

describe('npm run grade -- --collect DIR: cards written by hand', function () {
  let dir
  let lab
  let honest

  before(async function makeDir () {
    lab = await labVersion()
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-forged-'))
    honest = cardJson(gradedCard({ handler: 'handler.js', seed: SEED, labVersion: lab, digest: digestOf(STREAMS) }))
  })

  after(function removeDir () {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  /** A class of one student each: `handler.js` and the card given, collected; the row. */
  async function collectOne (name, card, text = STREAMS, options = {}) {
    const cards = path.join(dir, name, 'cards')
    fs.mkdirSync(path.join(cards, name), { recursive: true })
    fs.writeFileSync(path.join(cards, name, 'handler.js'), text)
    fs.writeFileSync(path.join(cards, name, 'card.json'), typeof card === 'string' ? card : JSON.stringify(card))
    const out = path.join(dir, name, 'out')
    const result = await collectClass(cards, { csv: path.join(out, 'class.csv'), html: path.join(out, 'class.html'), seed: SEED, preset: 'quick', labVersion: lab, ...options })
    return { row: result.rows[0], result, csv: fs.readFileSync(path.join(out, 'class.csv'), 'utf8') }
  }

  /** The honest card, changed by `forge`. */
  function forged (forge) {
    const doc = structuredClone(honest)
    forge(doc)
    return doc
  }

  it('collects the honest card', async function () {
    const { row } = await collectOne('honest', honest)
    assert.equal(row.verdict, 'pass', row.error)
    assert.equal(row.checks_total, 19)
  })

  it('refuses a card with one invented check per area, naming the first that is not the grader\'s', async function () {
    const doc = forged(function inventChecks (d) {
      d.checks = Object.keys(d.areas).map(function invented (area) { return { area, name: 'all good', pass: true, figure: 'fine', limit: 'none', hint: null } })
      d.measures = []
    })
    const { row } = await collectOne('invented', doc)
    assert.equal(row.verdict, 'refused')
    assert.match(row.error, /^not collected: card\.json is not a --json card: checks\[0\] is "correctness: all good", the grader's check there is "correctness: generated documents"/)
  })

  it('refuses a card of a single correctness check', async function () {
    const doc = forged(function oneCheck (d) {
      d.checks = [d.checks[0]]
      d.areas = { correctness: 'pass' }
      d.measures = []
    })
    const { row } = await collectOne('single', doc, STREAMS, { areas: ['correctness'] })
    assert.equal(row.verdict, 'refused')
    assert.match(row.error, /checks has 1 check, the grader's of correctness are 8: checks\[1\] must be "correctness: strings that look like records"/)
  })

  it('refuses a slope of -1e300, and keeps it out of the CSV', async function () {
    const doc = forged(function hugeSlope (d) { d.measures.find(function slope (m) { return m.name === 'slope' }).value = -1e300 })
    const { row, csv } = await collectOne('slope', doc)
    assert.equal(row.verdict, 'refused')
    assert.match(row.error, /measures\[0\]\.value -1e\+300 is out of a slope's range, -\d+(\.\d+)? to \d+(\.\d+)? MiB per 100 MB/)
    const [header, cells] = parseCsv(csv)
    assert.equal(cells[header.indexOf('memory_size_slope_MiB_per_100MB')], '')
  })

  it('refuses figures no measurement gives: Infinity (1e999 in JSON), NaN (null in JSON), a negative peak or MB/s', async function () {
    const index = function index (name) { return honest.measures.findIndex(function named (m) { return m.name === name }) }
    const text = JSON.stringify(honest).replace('"value":1.1', '"value":1e999')
    assert.match((await collectOne('infinity', text)).row.error, new RegExp(`measures\\[${index('ratio')}\\]\\.value must be a finite number`))
    const nan = forged(function notANumber (d) { d.measures[index('ratio')].value = NaN })
    assert.match((await collectOne('nan', nan)).row.error, new RegExp(`measures\\[${index('ratio')}\\]\\.value must be a finite number`))
    const peak = forged(function negativePeak (d) { d.measures[index('peak')].value = -3 })
    assert.match((await collectOne('peak', peak)).row.error, new RegExp(`measures\\[${index('peak')}\\]\\.value -3 is out of a peak's range, 0 to 1048576 MiB`))
    const speed = forged(function negativeSpeed (d) { d.measures[index('MB/s')].value = -17 })
    assert.match((await collectOne('speed', speed)).row.error, new RegExp(`measures\\[${index('MB/s')}\\]\\.value -17 is out of a MB/s's range, 0 to 100000 MB/s`))
  })

  it('refuses a measure whose direction, unit or check is not the lab\'s', async function () {
    const better = forged(function flipped (d) { d.measures[0].better = 'higher' })
    assert.match((await collectOne('better', better)).row.error, /measures\[0\]\.better must be lower: a slope is better lower/)
    const unit = forged(function otherUnit (d) { d.measures[0].unit = 'MiB per GB' })
    assert.match((await collectOne('unit', unit)).row.error, /measures\[0\]\.unit must be MiB per 100 MB/)
    const area = forged(function slopeOfSpeed (d) { d.measures.push({ ...d.measures[0], area: 'speed', check: 'throughput against /streamparser-json' }) })
    assert.match((await collectOne('area', area)).row.error, /a slope is a figure of memory, not of speed/)
  })

  describe('--verify K', function () {
    /** A stand-in for grade(): what the submission's text makes a grading here say. */
    function gradeHere (file, options) {
      const text = fs.readFileSync(file, 'utf8')
      const buffers = text === BUFFERS
      return Promise.resolve(gradedCard({
        handler: file,
        seed: options.seed,
        labVersion: lab,
        digest: digestOf(text),
        areas: options.areas,
        failing: buffers ? ['growth against body size', 'growth against concurrency'] : [],
        figures: buffers ? { slope: 310, peak: 480 } : {}
      }))
    }

    it('draws the same cards from the same seed, every card when K is more than the class', function () {
      const names = ['alice', 'bob', 'carol', 'dave', 'erin']
      assert.deepEqual(chooseCards(names, 2, 11), chooseCards([...names].reverse(), 2, 11))
      assert.equal(chooseCards(names, 2, 11).length, 2)
      assert.deepEqual(chooseCards(names, 9, 11), names)
      const draws = new Set([1, 2, 3, 4, 5, 6, 7, 8].map(function drawn (seed) { return chooseCards(names, 2, seed).join() }))
      assert.ok(draws.size > 1, 'another seed, another draw')
    })

    it('refuses a card that claims a pass its submission does not get here, and notes the one that agrees', async function () {
      // mallory's card is alice's honest card beside a buffering handler, its sha256 made to match
      const mallory = forged(function copied (d) { d.sha256 = digestOf(BUFFERS) })
      const cards = path.join(dir, 'verify', 'cards')
      for (const [name, text, card] of [['alice', STREAMS, honest], ['mallory', BUFFERS, mallory]]) {
        fs.mkdirSync(path.join(cards, name), { recursive: true })
        fs.writeFileSync(path.join(cards, name, 'handler.js'), text)
        fs.writeFileSync(path.join(cards, name, 'card.json'), JSON.stringify(card))
      }
      const csv = path.join(dir, 'verify', 'out', 'class.csv')
      const result = await collectClass(cards, { csv, html: path.join(dir, 'verify', 'out', 'class.html'), seed: SEED, preset: 'quick', labVersion: lab, verify: { count: 2, seed: 5, grade: gradeHere } })
      const [alice, malloryRow] = result.rows
      const { bodySeed, ...drawn } = result.verify
      assert.deepEqual(drawn, { seed: 5, chosen: ['alice', 'mallory'], disagree: ['mallory'] })
      assert.equal(alice.verdict, 'pass')
      assert.match(alice.notes, new RegExp(`graded here \\(--verify, seed ${bodySeed}\\): pass 19/19, the card agrees$`))
      assert.equal(malloryRow.verdict, 'refused')
      assert.match(malloryRow.error, /^not collected: the card disagrees with its submission graded here \(--verify\): memory: the card says pass, graded here fail; memory: growth against body size, slope 310 MiB per 100 MB, the card's 1\.2: worse than the card by 308\.8/)
      assert.match(fs.readFileSync(csv, 'utf8'), /mallory,refused,/)
      assert.equal(verifyLine(result.verify), `--verify: graded again here alice, mallory, drawn with --verify-seed 5 (give it again to draw the same), on bodies of seed ${bodySeed}, not the cards' (--seed ${bodySeed} grades one so again): 1 disagrees (mallory), refused`)
    })

    it('grades again on the bodies of a fresh seed, never the cards\' seed every student knows, a new one each run', async function () {
      const cards = path.join(dir, 'fresh', 'cards')
      fs.mkdirSync(path.join(cards, 'alice'), { recursive: true })
      fs.writeFileSync(path.join(cards, 'alice', 'handler.js'), STREAMS)
      fs.writeFileSync(path.join(cards, 'alice', 'card.json'), JSON.stringify(honest))
      const seeds = []
      const recordSeed = function recordSeed (file, options) {
        seeds.push(options.seed)
        return gradeHere(file, options)
      }
      for (const run of ['one', 'two']) {
        const out = path.join(dir, 'fresh', run)
        const result = await collectClass(cards, { csv: path.join(out, 'class.csv'), html: path.join(out, 'class.html'), seed: SEED, preset: 'quick', labVersion: lab, verify: { count: 1, seed: 5, grade: recordSeed } })
        assert.equal(result.verify.bodySeed, seeds.at(-1))
        assert.match(verifyLine(result.verify), new RegExp(`on bodies of seed ${seeds.at(-1)}, not the cards'`))
      }
      assert.ok(seeds.every(function notTheCards (seed) { return seed !== SEED }), String(seeds))
      assert.notEqual(seeds[0], seeds[1])
    })

    it('refuses a card whose figure is better than measured here by more than the tolerance, never one that is worse', async function () {
      const cards = path.join(dir, 'figures', 'cards')
      const better = cardJson(gradedCard({ handler: 'handler.js', seed: SEED, labVersion: lab, digest: digestOf(STREAMS), figures: { ratio: 3 } }))
      const worse = cardJson(gradedCard({ handler: 'handler.js', seed: SEED, labVersion: lab, digest: digestOf(STREAMS), figures: { ratio: 0.6 } }))
      for (const [name, card] of [['claims-faster', better], ['claims-slower', worse]]) {
        fs.mkdirSync(path.join(cards, name), { recursive: true })
        fs.writeFileSync(path.join(cards, name, 'handler.js'), STREAMS)
        fs.writeFileSync(path.join(cards, name, 'card.json'), JSON.stringify(card))
      }
      const out = path.join(dir, 'figures', 'out')
      const result = await collectClass(cards, { csv: path.join(out, 'class.csv'), html: path.join(out, 'class.html'), seed: SEED, preset: 'quick', labVersion: lab, verify: { count: 2, seed: 5, grade: gradeHere } })
      assert.deepEqual(result.verify.disagree, ['claims-faster'])
      assert.match(result.rows[0].error, /speed: throughput against \/streamparser-json, ratio 1\.1 × \/streamparser-json, the card's 3: worse than the card by 1\.9/)
    })

    it('on the command line: goes with --collect, takes a count and a seed, prints the seed', async function () {
      const alone = await runCli(['exercises/01-stream/starter.js', '--verify', '2'])
      assert.equal(alone.code, 2)
      assert.match(alone.stderr, /--verify goes with --collect/)
      const cards = path.join(dir, 'honest', 'cards')
      for (const bad of ['0', 'two', '-1']) {
        const run = await runCli(['--collect', cards, '--seed', String(SEED), '--quick', `--verify=${bad}`, '--csv', path.join(dir, 'cli', 'class.csv')])
        assert.equal(run.code, 2, bad)
        assert.match(run.stderr, /--verify takes how many cards to grade again, 1 to 1000/)
      }
      // a class whose every card is refused: nothing to grade again, and the draw's seed printed all the same
      const none = await runCli(['--collect', path.join(dir, 'invented', 'cards'), '--seed', String(SEED), '--quick', '--verify', '3', '--csv', path.join(dir, 'cli', 'class.csv')])
      assert.equal(none.code, 1, none.stderr)
      assert.match(none.stdout, /^--verify: graded again here none \(no card was collected\), drawn with --verify-seed \d+ \(give it again to draw the same\), on bodies of seed \d+, not the cards' \(--seed \d+ grades one so again\): every card agrees$/m)
      const seedAlone = await runCli(['--collect', cards, '--seed', String(SEED), '--verify-seed', '5', '--csv', path.join(dir, 'cli', 'class.csv')])
      assert.equal(seedAlone.code, 2)
      assert.match(seedAlone.stderr, /--verify-seed goes with --verify/)
    })
  })
})
