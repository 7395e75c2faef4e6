/**
 * A class in one table (grader/card/class.js, `npm run grade -- FOLDER --csv
 * class.csv`): every submission in a folder graded in turn, one row each in
 * the CSV and in the HTML table beside it, every row with the same seed,
 * and a submission anywhere on disk may import the packages the exercises
 * allow (grader/student/allow-packages.js).
 *
 * The folder, made in the system's temporary folder, outside the lab:
 * exercise 3's solution as a folder (index.js and the starter.js it
 * imports), exercise 1's starter (it imports raw-body) under a name a
 * spreadsheet would run as a formula, and a module that is not a handler.
 * Graded with settings smaller than --quick (bodies of 2 to 24 MB, 300 MB
 * bombs, no reference curves).
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { AREAS, gradeClass } from '../../grader/index.js'
import { COLUMNS } from '../../grader/card/class-rows.js'
import { findSubmissions } from '../../grader/student/submission.js'
import { ALLOW_PACKAGES_IMPORT, ALLOWED_PACKAGES } from '../../grader/student/packages.js'
import { parseCsv } from '../csv.js'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { smallSettings } from '../grade-settings.js'

// bodies big enough that a buffering route's rise clears the noise floor (LIMITS.noiseMiB) on
// both curves even where its peak is sampled with ps, in portable mode on a busy machine
const SMALL = smallSettings({ sizes: [2e6, 8e6, 24e6], concurrency: [1, 4], concurrencyBytes: 8e6 })

const FORMULA_NAME = '=bob, "the" <starter>'

describe('npm run grade -- FOLDER --csv class.csv', function () {
  let dir
  let folder

  before(function makeClass () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-class-'))
    folder = path.join(dir, 'class')
    fs.mkdirSync(path.join(folder, 'alice'), { recursive: true })
    fs.copyFileSync(path.join(PROJECT_ROOT, 'exercises/03-bomb-safe/solution.js'), path.join(folder, 'alice', 'index.js'))
    fs.copyFileSync(path.join(PROJECT_ROOT, 'exercises/03-bomb-safe/starter.js'), path.join(folder, 'alice', 'starter.js'))
    fs.copyFileSync(path.join(PROJECT_ROOT, 'exercises/01-stream/starter.js'), path.join(folder, `${FORMULA_NAME}.js`))
    fs.copyFileSync(path.join(PROJECT_ROOT, 'test/fixtures/grade/not-a-handler.js'), path.join(folder, 'carol.js'))
    // notes: a row skipped; a hidden file: not looked at (a folder without index.js is a refused row: test/grade-class-rows.test.js)
    fs.writeFileSync(path.join(folder, 'README.txt'), 'notes')
    fs.writeFileSync(path.join(folder, '.hidden.js'), 'export default 1')
  })

  after(function removeClass () {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('finds the .js files and the folders with an index.js, in name order, and lists the notes as skipped', async function () {
    const found = await findSubmissions(folder)
    assert.deepEqual(found.map(function name (s) { return [s.name, s.skipped === null] }), [[FORMULA_NAME, true], ['README.txt', false], ['alice', true], ['carol', true]])
    assert.equal(found[2].handler, path.join(folder, 'alice', 'index.js'))
  })

  describe('a class graded', function () {
    let result
    const events = []

    before(async function gradeTheClass () {
      this.timeout(240_000)
      const reports = []
      result = await gradeClass(folder, {
        csv: path.join(dir, 'out', 'class.csv'),
        preset: 'quick',
        settings: SMALL,
        reportDir: path.join(dir, 'out'),
        writeReport: async function keepCard (reportDir, card) {
          await fs.promises.mkdir(reportDir, { recursive: true })
          await fs.promises.writeFile(path.join(reportDir, 'results.json'), JSON.stringify({ card }))
          reports.push(reportDir)
          return [path.join(reportDir, 'results.json')]
        },
        onProgress: function keep (event) { if (event.type === 'submission' || event.type === 'graded') events.push(event) }
      })
    })

    function rows () {
      return parseCsv(fs.readFileSync(result.csv, 'utf8'))
    }

    function row (name) {
      const [header, ...body] = rows()
      const cells = body.find(function named (r) { return r[0] === name })
      return Object.fromEntries(header.map(function pair (column, k) { return [column, cells[k]] }))
    }

    it('writes a header and one row per submission, in name order, the notes a row skipped', function () {
      const [header, ...body] = rows()
      assert.deepEqual(header, COLUMNS)
      // a name that begins with = is kept from running as a formula in a spreadsheet
      assert.deepEqual(body.map(function name (r) { return r[0] }), [`'${FORMULA_NAME}`, 'README.txt', 'alice', 'carol'])
      assert.equal(row('README.txt').verdict, 'skipped')
      for (const r of body) assert.equal(r.length, COLUMNS.length)
    })

    it('gives each row its verdict and a result per area', function () {
      const alice = row('alice')
      assert.equal(alice.verdict, 'pass', JSON.stringify(alice))
      for (const area of AREAS) assert.equal(alice[area], 'pass', area)
      assert.equal(alice.checks_passed, alice.checks_total)
      // exercise 1's starter, from outside the lab: raw-body resolved, its answers right, its buffering not
      const bob = row(`'${FORMULA_NAME}`)
      assert.equal(bob.verdict, 'fail')
      assert.equal(bob.correctness, 'pass', JSON.stringify(bob))
      assert.equal(bob.memory, 'fail', JSON.stringify(bob))
      assert.equal(bob.safety, 'fail', JSON.stringify(bob))
      assert.match(bob.failed_checks, /memory: growth against body size; memory: growth against concurrency/)
      const carol = row('carol')
      assert.equal(carol.verdict, 'fail')
      assert.equal(carol.checks_passed, '0')
      assert.match(carol.error, /no default export that is a function/)
    })

    it('gives the key figures of memory and speed', function () {
      const alice = row('alice')
      for (const column of ['memory_size_slope_MiB_per_100MB', 'memory_concurrency_slope_MiB_per_upload', 'speed_MBps', 'speed_ratio']) {
        assert.ok(Number.isFinite(Number(alice[column])) && alice[column] !== '', `${column}: ${alice[column]}`)
      }
      assert.equal(row('carol').speed_MBps, '')
    })

    it('grades every submission with one seed, and names it on every row', function () {
      for (const name of [`'${FORMULA_NAME}`, 'alice', 'carol']) assert.equal(row(name).seed, String(result.seed))
    })

    it('gives each row its duration and the digest of what was graded', function () {
      const carol = row('carol')
      const bytes = fs.readFileSync(path.join(folder, 'carol.js'))
      assert.equal(carol.sha256, createHash('sha256').update(bytes).digest('hex'))
      assert.match(row('alice').sha256, /^[0-9a-f]{64}$/)
      for (const name of [`'${FORMULA_NAME}`, 'alice', 'carol']) assert.ok(Number(row(name).duration_s) > 0, name)
      assert.equal(fs.existsSync(path.join(row('alice').report, 'results.json')), true)
    })

    it('writes the same table as HTML beside the CSV, escaped', function () {
      assert.equal(result.html, path.join(dir, 'out', 'class.html'))
      const html = fs.readFileSync(result.html, 'utf8')
      assert.match(html, /^<!doctype html>/)
      assert.match(html, new RegExp(`seed ${result.seed}`))
      const bodyRows = html.split('<tbody>')[1].split('</tbody>')[0].match(/<tr>/g)
      assert.equal(bodyRows.length, 4)
      assert.match(html, /<th scope="row">alice<\/th><td class="pass">pass<\/td>/)
      assert.match(html, /<th scope="row">carol<\/th><td class="fail">fail<\/td>/)
      assert.ok(html.includes('<th scope="row">=bob, &quot;the&quot; &lt;starter&gt;</th>'), 'the name, escaped')
      assert.ok(!html.includes('<starter>'))
    })

    it('says which submission is being graded, and the time left once one is graded', function () {
      const starts = events.filter(function start (e) { return e.type === 'submission' })
      assert.deepEqual(starts.map(function name (e) { return `${e.index + 1}/${e.total} ${e.name}` }), [`1/3 ${FORMULA_NAME}`, '2/3 alice', '3/3 carol'])
      assert.equal(starts[0].etaMs, null)
      assert.ok(starts[1].etaMs > 0 && starts[2].etaMs > 0, JSON.stringify(starts))
      assert.equal(events.filter(function graded (e) { return e.type === 'graded' }).length, 4)
    })
  })

  it('runs from the command line, printing progress and writing the two tables', async function () {
    this.timeout(120_000)
    const out = path.join(dir, 'cli')
    const run = await runCli([folder, '--quick', '--only', 'correctness', '--csv', path.join(out, 'class.csv'), '--out', out, '--seed', '7'])
    assert.equal(run.code, 1, run.stderr)
    assert.match(run.stderr, /^\[submission 1\/3\] =bob, "the" <starter>: grading \(the time left is estimated after the first\)$/m)
    assert.match(run.stderr, /^\[submission 3\/3\] carol: grading, about \d+ (s|min \d+ s) left$/m)
    assert.match(run.stdout, /3 submissions graded with seed 7: 2 passed/)
    const [header, ...body] = parseCsv(fs.readFileSync(path.join(out, 'class.csv'), 'utf8'))
    assert.deepEqual(header, COLUMNS)
    assert.deepEqual(body.map(function verdict (r) { return r[1] }), ['pass', 'skipped', 'pass', 'fail'])
    assert.ok(fs.existsSync(path.join(out, 'class.html')))
    assert.ok(fs.existsSync(path.join(out, 'alice', 'results.json')))
  })

  it('refuses --json and --port with a folder, and --csv with one file', async function () {
    for (const args of [[folder, '--json', 'x.json'], [folder, '--port', '3001'], ['exercises/02-exact/solution.js', '--csv', 'x.csv']]) {
      const run = await runCli(args)
      assert.equal(run.code, 2, args.join(' '))
    }
  })

  describe('packages for a submission anywhere on disk', function () {
    it('resolves the packages the exercises allow for a module outside the lab, and no other', async function () {
      const file = path.join(dir, 'outside.js')
      fs.writeFileSync(file, `${ALLOWED_PACKAGES.map(function importLine (name, k) { return `import * as p${k} from '${name}'` }).join('\n')}
console.log([${ALLOWED_PACKAGES.map(function used (name, k) { return `Object.keys(p${k}).length > 0` }).join(', ')}].join(' '))
`)
      const allowed = await runNode(['--import', ALLOW_PACKAGES_IMPORT, file])
      assert.equal(allowed.code, 0, allowed.stderr)
      assert.equal(allowed.stdout.trim(), ALLOWED_PACKAGES.map(function yes () { return 'true' }).join(' '))
      const without = await runNode([file])
      assert.notEqual(without.code, 0)
      assert.match(without.stderr, /ERR_MODULE_NOT_FOUND/)
      const other = path.join(dir, 'other.js')
      fs.writeFileSync(other, "import 'pg'\n")
      const notAllowed = await runNode(['--import', ALLOW_PACKAGES_IMPORT, other])
      assert.notEqual(notAllowed.code, 0)
      assert.match(notAllowed.stderr, /Cannot find package 'pg'/)
    })

    it('resolves them for a CommonJS module\'s require() too, and no other', async function () {
      const file = path.join(dir, 'outside.cjs')
      fs.writeFileSync(file, `console.log([${ALLOWED_PACKAGES.map(function used (name) { return `typeof require('${name}') !== 'undefined'` }).join(', ')}].join(' '))
`)
      const allowed = await runNode(['--import', ALLOW_PACKAGES_IMPORT, file])
      assert.equal(allowed.code, 0, allowed.stderr)
      assert.equal(allowed.stdout.trim(), ALLOWED_PACKAGES.map(function yes () { return 'true' }).join(' '))
      const without = await runNode([file])
      assert.notEqual(without.code, 0)
      assert.match(without.stderr, /Cannot find module 'raw-body'/)
      const other = path.join(dir, 'other.cjs')
      fs.writeFileSync(other, "require('pg')\n")
      const notAllowed = await runNode(['--import', ALLOW_PACKAGES_IMPORT, other])
      assert.notEqual(notAllowed.code, 0)
      assert.match(notAllowed.stderr, /Cannot find module 'pg'/)
    })
  })
})

function runCli (args) {
  return runNode(['scripts/grade.js', ...args])
}

function runNode (args) {
  return new Promise(function run (resolve) {
    execFile(process.execPath, args, { cwd: PROJECT_ROOT, timeout: 110_000 }, function done (err, stdout, stderr) {
      resolve({ code: err ? err.code : 0, stdout, stderr })
    })
  })
}
