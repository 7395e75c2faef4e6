/**
 * The memory gate (grader/card/baseline.js, `--baseline CARD.json`): a run's
 * measures held to an earlier card's, measure by measure, worse by more than
 * the tolerance (and the measure's noise floor) failing and naming the
 * baseline; the measures a card keeps (grader/card/measures.js); a baseline
 * that is no card, or of another preset, refused before anything is graded.
 * Cards made here, nothing graded.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { baselineLines, compareWithBaseline, DEFAULT_TOLERANCE, noiseFloor, parseTolerance, readBaseline } from '../../grader/card/baseline.js'
import { cardJson, validateCardJson } from '../../grader/card/card-json.js'
import { cardMeasures } from '../../grader/card/measures.js'
import { LIMITS } from '../../grader/checks/settings.js'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { gradedCard as cardWith } from '../card-fixtures.js'

/** A card as grade() returns it (test/card-fixtures.js), its figures changed. */
function gradedCard ({ slope, peak, concurrency, ratio, bomb } = {}) {
  return cardWith({ figures: { slope, peak, concurrency, ratio, bomb } })
}

function runCli (args) {
  return new Promise(function run (resolve) {
    execFile(process.execPath, ['scripts/grade.js', ...args], { cwd: PROJECT_ROOT, timeout: 20_000 }, function done (err, stdout, stderr) {
      resolve({ code: err ? err.code : 0, stdout, stderr })
    })
  })
}

describe('grader/card/measures.js', function () {
  it('keeps each memory curve\'s slope and peak, each bomb\'s peak and the speed ratio and MB/s, as numbers naming their check', function () {
    const measures = cardMeasures(gradedCard())
    assert.deepEqual(measures.map(function said (m) { return `${m.area}: ${m.check}, ${m.name} = ${m.value} ${m.unit} (${m.better})` }), [
      'memory: growth against body size, slope = 1.2 MiB per 100 MB (lower)',
      'memory: growth against body size, peak = 14.5 MiB (lower)',
      'memory: growth against concurrency, slope = 0.4 MiB per upload in flight (lower)',
      'memory: growth against concurrency, peak = 5 MiB (lower)',
      'speed: throughput against /streamparser-json, ratio = 1.1 × /streamparser-json (higher)',
      'speed: throughput against /streamparser-json, MB/s = 17 MB/s (higher)',
      'safety: zip bomb: ratio, peak = 9.3 MiB (lower)'
    ])
  })

  it('gives none for a check that gave no figure, and the --json card holds them to its contract', function () {
    const card = gradedCard()
    const named = function named (name) { return card.checks.find(function is (c) { return c.name === name }) }
    named('growth against body size').details = { points: [{ x: 5e6, growthMiB: 3 }], reference: null } // cut short: no slope
    named('throughput against /streamparser-json').details = null
    assert.deepEqual(cardMeasures(card).map(function named (m) { return `${m.check} ${m.name}` }),
      ['growth against concurrency slope', 'growth against concurrency peak', 'zip bomb: ratio peak'])
    const doc = cardJson(gradedCard())
    assert.deepEqual(validateCardJson(doc), [])
    doc.measures[0].value = 'big'
    doc.measures[1].check = 'no such check'
    assert.match(validateCardJson(doc).join('\n'), /measures\[0\]\.value must be a finite number\nmeasures\[1\] names no check on the card/)
  })
})

describe('grader/card/baseline.js', function () {
  const baseline = cardJson(gradedCard())

  it('passes the same card, every figure within the tolerance', function () {
    const gate = compareWithBaseline(cardJson(gradedCard()), baseline, { file: 'baseline.json' })
    assert.equal(gate.passed, true)
    assert.equal(gate.lines.length, 6, 'slopes, peaks and the ratio; MB/s is the machine\'s')
    assert.ok(gate.lines.every(function within (l) { return !l.worse }))
    assert.deepEqual(gate.notes, [])
    assert.equal(baselineLines(gate)[0], 'baseline baseline.json: PASS, tolerance 25%')
  })

  it('fails a card whose memory grew, each line worse naming the baseline and its figure', function () {
    const regressed = cardJson(gradedCard({ slope: 310, peak: 480, bomb: 260 }))
    const gate = compareWithBaseline(regressed, baseline, { file: 'ci/memory-baseline.json' })
    assert.equal(gate.passed, false)
    const worse = gate.lines.filter(function isWorse (l) { return l.worse })
    assert.deepEqual(worse.map(function named (l) { return `${l.check} ${l.name}` }),
      ['growth against body size slope', 'growth against body size peak', 'zip bomb: ratio peak'])
    assert.equal(worse[0].text, 'memory: growth against body size, slope 310 MiB per 100 MB, the baseline\'s 1.2: worse than the baseline by 308.8 MiB per 100 MB, more than the 25% tolerance allows (5)')
    const lines = baselineLines(gate)
    assert.equal(lines[0], 'baseline ci/memory-baseline.json: FAIL (3 of 6 worse), tolerance 25%')
    assert.ok(lines.filter(function failed (l) { return l.startsWith('FAIL') }).every(function named (l) { return /baseline/.test(l) }))
  })

  it('fails a speed ratio that fell by more than the tolerance, and passes one that rose', function () {
    assert.equal(compareWithBaseline(cardJson(gradedCard({ ratio: 0.6 })), baseline).passed, false)
    assert.equal(compareWithBaseline(cardJson(gradedCard({ ratio: 3 })), baseline).passed, true)
  })

  it('never fails a difference under the measure\'s noise floor, whatever the percentage', function () {
    // a slope of 1.2 to 5.9 is +390%, and under the floor (a fifth of the 25 MiB limit)
    assert.equal(noiseFloor({ name: 'slope', unit: 'MiB per 100 MB' }), LIMITS.sizeSlopeMiBPer100MB / 5)
    assert.equal(compareWithBaseline(cardJson(gradedCard({ slope: 5.9 })), baseline).passed, true)
    assert.equal(compareWithBaseline(cardJson(gradedCard({ slope: 6.3 })), baseline).passed, false)
  })

  it('takes another tolerance, and reads --tolerance as a percentage', function () {
    assert.equal(DEFAULT_TOLERANCE, 0.25)
    assert.equal(parseTolerance('40%'), 0.4)
    assert.equal(parseTolerance('10'), 0.1)
    for (const bad of ['-5%', 'lots', '2000%']) assert.throws(function parse () { parseTolerance(bad) }, TypeError)
    const peakUp = cardJson(gradedCard({ peak: 40 }))
    assert.equal(compareWithBaseline(peakUp, baseline).passed, false)
    assert.equal(compareWithBaseline(peakUp, baseline, { tolerance: 2 }).passed, true)
  })

  it('refuses a baseline of another preset, and says when the lab version, the seed or the target differ', function () {
    const full = { ...baseline, preset: 'full' }
    const refused = compareWithBaseline(cardJson(gradedCard()), full)
    assert.equal(refused.passed, false)
    assert.match(refused.notes[0], /the baseline is a card of the full run, this run is --quick/)
    const other = { ...baseline, labVersion: '0.0.9', seed: 8, handler: 'http://127.0.0.1:4000/ingest' }
    const gate = compareWithBaseline(cardJson(gradedCard()), other)
    assert.equal(gate.passed, true)
    assert.deepEqual(gate.notes.map(function first (n) { return n.split(':')[0] }), [
      'the baseline was graded by lab 0.0.9, this run by 0.1.0',
      'the baseline graded http',
      'the baseline\'s seed was 8, this run\'s 7'
    ])
  })

  it('fails a 500× regression, in the lab\'s direction even when the baseline\'s `better` is flipped', function () {
    const regressed = cardJson(gradedCard({ slope: 1.2 * 500 }))
    assert.equal(compareWithBaseline(regressed, baseline).passed, false)
    const flipped = structuredClone(baseline)
    for (const m of flipped.measures) m.better = m.better === 'lower' ? 'higher' : 'lower'
    const gate = compareWithBaseline(regressed, flipped)
    assert.equal(gate.passed, false)
    assert.match(gate.lines[0].text, /slope 600 MiB per 100 MB, the baseline's 1\.2: worse than the baseline by 598\.8/)
    assert.equal(gate.lines[0].better, 'lower')
  })

  it('says which baseline figures this run has not (an area left out)', function () {
    const run = cardJson(gradedCard())
    run.measures = run.measures.filter(function notSpeed (m) { return m.area !== 'speed' })
    const gate = compareWithBaseline(run, baseline)
    assert.equal(gate.passed, true)
    assert.match(gate.notes.join('\n'), /speed: throughput against \/streamparser-json, ratio: in the baseline, not in this run/)
  })

  it('is what docs/grading-in-ci.md says: the tolerance, each floor, exit code 4', function () {
    const page = fs.readFileSync(path.join(PROJECT_ROOT, 'docs', 'grading-in-ci.md'), 'utf8').replace(/\s+/g, ' ')
    const quoted = [
      `**The tolerance** is ${DEFAULT_TOLERANCE * 100}% of the baseline's figure`,
      `${noiseFloor({ name: 'peak', unit: 'MiB' })} MiB for a peak`,
      `(${noiseFloor({ name: 'slope', unit: 'MiB per 100 MB' })} MiB per 100 MB, ${noiseFloor({ name: 'slope', unit: 'MiB per upload in flight' })} MiB per upload)`,
      `for the speed ratio (${noiseFloor({ name: 'ratio', unit: '' })})`,
      '| 4 | every check passed, but a figure is worse than the baseline\'s |'
    ]
    for (const text of quoted) assert.ok(page.includes(text), text)
    assert.match(fs.readFileSync(path.join(PROJECT_ROOT, 'scripts', 'grade.js'), 'utf8'), /const EXIT_BASELINE = 4\n/)
  })

  describe('readBaseline, and --baseline on the command line', function () {
    let dir
    before(function makeDir () { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-baseline-')) })
    after(function removeDir () { fs.rmSync(dir, { recursive: true, force: true }) })

    function write (name, value) {
      const file = path.join(dir, name)
      fs.writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value))
      return file
    }

    it('reads a card, and says why a file is not one', async function () {
      assert.equal((await readBaseline(write('good.json', baseline))).problem, null)
      assert.match((await readBaseline(path.join(dir, 'missing.json'))).problem, /cannot be read \(ENOENT\)/)
      assert.match((await readBaseline(write('text.json', 'not json'))).problem, /is not JSON/)
      const older = { ...baseline }
      delete older.measures
      assert.match((await readBaseline(write('older.json', older))).problem, /has no measures: .* write it again with --json/)
      assert.match((await readBaseline(write('broken.json', { ...baseline, verdict: 'maybe' }))).problem, /is not a --json card: verdict must be pass/)
    })

    it('refuses a baseline written by hand: no figures, a flipped `better`, a figure out of range, checks not the grader\'s', async function () {
      assert.match((await readBaseline(write('empty.json', { ...baseline, measures: [] }))).problem, /empty\.json has no figure to hold a run to/)
      const flipped = structuredClone(baseline)
      flipped.measures[0].better = 'higher'
      assert.match((await readBaseline(write('flipped.json', flipped))).problem, /is not a --json card: measures\[0\]\.better must be lower: a slope is better lower/)
      const huge = structuredClone(baseline)
      huge.measures[0].value = 1e300
      assert.match((await readBaseline(write('huge.json', huge))).problem, /measures\[0\]\.value 1e\+300 is out of a slope's range/)
      const invented = { ...baseline, checks: [{ area: 'memory', name: 'growth against body size', pass: true, figure: 'f', limit: 'l', hint: null }], areas: { memory: 'pass' } }
      assert.match((await readBaseline(write('invented.json', invented))).problem, /checks has 1 check, the grader's of memory are 2/)
    })

    it('is a usage error before anything is graded: a baseline that is no card, or one of another preset', async function () {
      const url = ['--url', 'http://127.0.0.1:9/ingest', '--quick', '--only', 'correctness']
      const notCard = await runCli([...url, '--baseline', write('notes.json', '{"a":1}')])
      assert.equal(notCard.code, 2, notCard.stderr)
      assert.match(notCard.stderr, /^grade: the baseline .*notes\.json is not a --json card/)
      const full = await runCli([...url, '--baseline', write('full.json', { ...baseline, preset: 'full' })])
      assert.equal(full.code, 2, full.stderr)
      assert.match(full.stderr, /--baseline: the baseline is a card of the full run, this run is --quick/)
      const empty = await runCli([...url, '--baseline', write('no-figures.json', { ...baseline, measures: [] })])
      assert.equal(empty.code, 2, empty.stderr)
      assert.match(empty.stderr, /^grade: the baseline .*no-figures\.json has no figure to hold a run to/)
      const alone = await runCli([...url, '--tolerance', '10%'])
      assert.equal(alone.code, 2)
      assert.match(alone.stderr, /--tolerance goes with --baseline/)
    })
  })
})
