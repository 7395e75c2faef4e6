/**
 * A class's table from cards graded elsewhere (grader/card/collect.js, `npm run
 * grade -- --collect DIR --seed N`): a folder per student, its card.json beside
 * the file it graded. A card is collected only when the file has the card's
 * sha256 and the card was graded with the class's seed, preset, areas and lab
 * version; every other entry gets a row saying why. The cards are made here
 * (nothing graded); the slow part, cards written by a student's CI workflow
 * and collected from the installed package, is test/slow/ci-workflows.test.js.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { cardJson } from '../grader/card/card-json.js'
import { COLUMNS } from '../grader/card/class-rows.js'
import { collectClass } from '../grader/card/collect.js'
import { labVersion } from '../grader/student/lab-version.js'
import { PROJECT_ROOT } from '../lib/config/options.js'
import { gradedCard } from './card-fixtures.js'
import { parseCsv } from './csv.js'

const HANDLER = 'export default function handler (req, res) { res.end() }\n'
const SEED = 3085585045

/** A --json card of `handler` whose digest is `text`'s, graded as the class grades unless told otherwise. */
function cardFor (handler, text, lab, { passed = true, ...overrides } = {}) {
  const card = gradedCard({
    handler,
    seed: SEED,
    labVersion: lab,
    digest: createHash('sha256').update(text).digest('hex'),
    failing: passed ? [] : ['growth against body size'],
    figures: { slope: passed ? 1.2 : 310 }
  })
  return cardJson({ ...card, ...overrides })
}

function runCli (args) {
  return new Promise(function run (resolve) {
    execFile(process.execPath, ['scripts/grade.js', ...args], { cwd: PROJECT_ROOT, timeout: 20_000 }, function done (err, stdout, stderr) {
      resolve({ code: err ? err.code : 0, stdout, stderr })
    })
  })
}

describe('npm run grade -- --collect DIR (grader/card/collect.js)', function () {
  let dir
  let cards
  let out
  let lab

  before(async function makeCards () {
    lab = await labVersion()
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-collect-'))
    cards = path.join(dir, 'cards')
    out = path.join(dir, 'out')
    const student = function student (name, file, text, card) {
      fs.mkdirSync(path.dirname(path.join(cards, name, file)), { recursive: true })
      fs.writeFileSync(path.join(cards, name, file), text)
      if (card !== null) fs.writeFileSync(path.join(cards, name, 'card.json'), typeof card === 'string' ? card : JSON.stringify(card))
    }
    student('alice', 'src/handler.mjs', HANDLER, cardFor('src/handler.mjs', HANDLER, lab))
    student('bob', 'handler.js', HANDLER + '// changed after grading\n', cardFor('handler.js', HANDLER, lab))
    student('carol', 'handler.js', HANDLER, cardFor('handler.js', HANDLER, lab, { seed: 12 }))
    student('dave', 'handler.js', HANDLER, cardFor('handler.js', HANDLER, lab, { preset: 'full' }))
    student('erin', 'handler.js', HANDLER, cardFor('handler.js', HANDLER, '0.0.1'))
    student('frank', 'handler.js', HANDLER, null)
    student('grace', 'handler.js', HANDLER, cardFor('/home/grace/handler.js', HANDLER, lab))
    student('heidi', 'handler.js', HANDLER, '{ "verdict": "pass" }')
    student('ivan', 'handler.cjs', 'module.exports = function h (req, res) { res.end() }\n', cardFor('handler.cjs', 'module.exports = function h (req, res) { res.end() }\n', lab, { passed: false }))
    fs.writeFileSync(path.join(cards, 'README.txt'), 'downloaded from the class\'s runs')
  })

  after(function removeCards () {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  function table (csv) {
    const [header, ...body] = parseCsv(fs.readFileSync(csv, 'utf8'))
    assert.deepEqual(header, COLUMNS)
    return body.map(function asRow (cells) { return Object.fromEntries(header.map(function pair (column, k) { return [column, cells[k]] })) })
  }

  it('builds the class table from the cards, a row each, and refuses each card that does not hold, with the reason', async function () {
    const csv = path.join(out, 'class.csv')
    const result = await collectClass(cards, { csv, html: path.join(out, 'class.html'), seed: SEED, preset: 'quick', areas: null, labVersion: lab })
    const rows = table(result.csv)
    const said = Object.fromEntries(rows.map(function pair (r) { return [r.name, [r.verdict, r.error]] }))
    assert.deepEqual(Object.keys(said), ['README.txt', 'alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan'])
    assert.deepEqual(said.alice, ['pass', ''])
    assert.deepEqual(said.ivan, ['fail', ''])
    assert.equal(said['README.txt'][0], 'skipped')
    assert.match(said.bob[1], /^not collected: handler\.js beside the card is not the file graded: its sha256 is [0-9a-f]{64}, the card's [0-9a-f]{64}$/)
    assert.equal(said.carol[1], `not collected: graded with seed 12, not the class's ${SEED} (--seed): other bodies`)
    assert.equal(said.dave[1], 'not collected: graded with the full preset, not the class\'s quick (--quick)')
    assert.equal(said.erin[1], `not collected: graded by lab 0.0.1, not the class's ${lab}: grade with the same streamlab package`)
    assert.equal(said.frank[1], 'not collected: no card.json in the folder')
    assert.match(said.grace[1], /^not collected: the card graded \/home\/grace\/handler\.js: a path inside the student's folder is needed/)
    assert.match(said.heidi[1], /^not collected: card\.json is not a --json card: /)
    for (const name of ['bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi']) assert.equal(said[name][0], 'refused', name)
  })

  it('fills a collected row as a class run would: areas, counts, key figures, digest, the card beside it', async function () {
    const csv = path.join(out, 'figures.csv')
    await collectClass(cards, { csv, html: path.join(out, 'figures.html'), seed: SEED, preset: 'quick', areas: null, labVersion: lab })
    const alice = table(csv).find(function named (r) { return r.name === 'alice' })
    assert.deepEqual([alice.correctness, alice.memory, alice.speed, alice.safety, alice.resilience], ['pass', 'pass', 'pass', 'pass', 'pass'])
    assert.deepEqual([alice.checks_passed, alice.checks_total, alice.memory_size_slope_MiB_per_100MB, alice.speed_ratio, alice.speed_MBps], ['19', '19', '1.2', '1.1', '17'])
    assert.equal(alice.sha256, createHash('sha256').update(HANDLER).digest('hex'))
    assert.equal(alice.submission, path.join(cards, 'alice', 'src', 'handler.mjs'))
    assert.equal(alice.report, path.join(cards, 'alice', 'card.json'))
    const ivan = table(csv).find(function named (r) { return r.name === 'ivan' })
    assert.equal(ivan.failed_checks, 'memory: growth against body size')
  })

  it('refuses a card of other areas when the class gives --only', async function () {
    const csv = path.join(out, 'only.csv')
    await collectClass(cards, { csv, html: path.join(out, 'only.html'), seed: SEED, preset: 'quick', areas: ['correctness'], labVersion: lab })
    const alice = table(csv).find(function named (r) { return r.name === 'alice' })
    assert.equal(alice.error, 'not collected: graded the areas correctness, memory, speed, safety, resilience, not the class\'s correctness (--only)')
  })

  it('on the command line: needs --seed, writes the table outside the folder, exits 1 when a card is refused', async function () {
    const noSeed = await runCli(['--collect', cards, '--quick'])
    assert.equal(noSeed.code, 2)
    assert.match(noSeed.stderr, /--collect needs the class's --seed/)
    const inside = await runCli(['--collect', cards, '--seed', String(SEED), '--quick', '--csv', path.join(cards, 'class.csv')])
    assert.equal(inside.code, 2)
    assert.match(inside.stderr, /inside the class's folder/)
    const run = await runCli(['--collect', cards, '--seed', String(SEED), '--quick', '--csv', path.join(out, 'cli.csv')])
    assert.equal(run.code, 1, run.stderr)
    assert.match(run.stdout, /^10 entries collected for seed 3085585045: 1 passed, 1 failed, 7 refused, 1 skipped \(not a submission\)$/m)
    assert.match(run.stdout, /^REFUSED {2}bob {2}not collected: handler\.js beside the card is not the file graded/m)
    assert.equal(table(path.join(out, 'cli.csv')).length, 10)
    assert.ok(fs.existsSync(path.join(out, 'cli.html')))
  })
})
