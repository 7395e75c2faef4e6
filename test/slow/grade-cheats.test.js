/**
 * A class folder no submission can break (docs/grading-a-class.md, "What no
 * submission can do"): one class run, from the command line as a teacher
 * runs it, over a folder holding each attack a hostile student tried
 * (test/fixtures/cheats/class/) and one honest submission graded last. The
 * run ends with a row for every submission, the honest one graded as it
 * would be alone, the grader's exit code and summary its own, no student
 * process as root, a load-time allocation killed at the budget, and no raw
 * control character from a submission on the terminal.
 *
 * The attacks: a mode-0600 file that kills its parent as it loads; a folder
 * whose index.js is a FIFO; five 1 GiB allocations as the module loads
 * (the class is graded with a budget of 1 GiB); a folder named like the table; two names
 * that map to one report folder; a file name and a load error carrying a
 * newline, a forged grade and terminal escapes.
 */
import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseCsv } from '../csv.js'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { shownText } from '../../lib/util/escape.js'

const CHEATS = path.join(PROJECT_ROOT, 'test/fixtures/cheats/class')
const HONEST = path.join(PROJECT_ROOT, 'exercises/01-stream/solution-stream.js')
const FORGED_NAME = 'evil\n\u001b[2K\rbob: PASS 18-18'
const asRootOnLinux = process.platform === 'linux' && process.getuid?.() === 0

/** Every control character a terminal acts on: C0 but newline, DEL, C1. */
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/

function runGrade (args) {
  return new Promise(function grade (resolve) {
    execFile(process.execPath, [path.join(PROJECT_ROOT, 'scripts/grade.js'), ...args], {
      cwd: PROJECT_ROOT,
      timeout: 15 * 60_000,
      maxBuffer: 16 * 1024 * 1024
    }, function done (err, stdout, stderr) {
      resolve({ code: err?.code ?? 0, signal: err?.signal ?? null, stdout, stderr })
    })
  })
}

describe('a class folder no submission can break', function () {
  this.timeout(20 * 60_000)
  let dir
  let folder
  let run
  let rows

  before(async function gradeTheClass () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-cheats-'))
    folder = path.join(dir, 'class')
    fs.mkdirSync(folder)
    const closed = path.join(folder, 'a-kills-grader.js')
    fs.copyFileSync(path.join(CHEATS, 'kills-grader.js'), closed)
    fs.chmodSync(closed, 0o600)
    fs.mkdirSync(path.join(folder, 'b-fifo'))
    execFileSync('mkfifo', [path.join(folder, 'b-fifo', 'index.js')])
    fs.copyFileSync(path.join(CHEATS, 'allocates-at-load.js'), path.join(folder, 'c-allocates.js'))
    fs.mkdirSync(path.join(folder, 'class.csv'))
    fs.copyFileSync(HONEST, path.join(folder, 'class.csv', 'index.js'))
    fs.copyFileSync(path.join(CHEATS, 'forges-terminal.js'), path.join(folder, 'x y.js'))
    fs.copyFileSync(path.join(CHEATS, 'forges-terminal.js'), path.join(folder, 'x_y.js'))
    fs.copyFileSync(path.join(CHEATS, 'forges-terminal.js'), path.join(folder, `${FORGED_NAME}.js`))
    fs.copyFileSync(HONEST, path.join(folder, 'zz-honest.js'))
    const out = path.join(dir, 'reports')
    // a budget of 1 GiB: touching 4 GiB of fresh memory beside two hogs can outlast the 20 s start timeout on a slow VM
    run = await runGrade([folder, '--quick', '--only', 'correctness', '--memory-limit', '1GiB', '--out', out, '--csv', path.join(out, 'class.csv')])
    const [header, ...records] = parseCsv(fs.readFileSync(path.join(out, 'class.csv'), 'utf8'))
    rows = records.map(function asObject (fields) { return Object.fromEntries(header.map(function pair (column, k) { return [column, fields[k]] })) })
  })

  after(function removeClass () {
    if (dir) fs.rmSync(dir, { recursive: true, force: true })
  })

  function rowOf (name) {
    const row = rows.find(function named (r) { return r.name === name })
    assert.ok(row, `a row for ${JSON.stringify(name)}; rows: ${rows.map(function n (r) { return JSON.stringify(r.name) }).join(', ')}`)
    return row
  }

  it('ends with its own exit code and a row for every submission, in one table', function () {
    assert.equal(run.signal, null, `the grader was not killed: ${run.stderr.slice(-500)}`)
    assert.equal(run.code, 1, `exit 1: fails and refusals, and no failure of the grader's own\n${run.stdout.slice(-1500)}\n${run.stderr.slice(-800)}`)
    assert.equal(rows.length, 8)
  })

  it('grades the honest submission after them all as it would be alone', function () {
    assert.equal(rowOf('zz-honest').verdict, 'pass', rowOf('zz-honest').failed_checks)
    assert.equal(rowOf('class.csv').verdict, 'pass', 'a folder named like the table is graded like any other')
  })

  it('runs the file that kills its parent as a user of its own, from a copy: the grader lives on', function () {
    if (!asRootOnLinux) this.skip()
    const row = rowOf('a-kills-grader')
    assert.equal(row.verdict, 'fail', 'graded: its answers are wrong')
    const card = JSON.parse(fs.readFileSync(path.join(row.report, 'results.json'), 'utf8'))
    const isolation = (card.card ?? card).isolation
    assert.ok(isolation.user >= 1_500_000_000, `not root: ${JSON.stringify(isolation)}`)
    assert.equal(isolation.copied, true)
  })

  it('refuses a FIFO entry point before anything reads it', function () {
    const row = rowOf('b-fifo')
    assert.equal(row.verdict, 'refused')
    assert.match(row.error, /FIFO|pipe/i)
  })

  it('kills a module at the budget while it loads, and says so', function () {
    const row = rowOf('c-allocates')
    assert.equal(row.verdict, 'fail')
    assert.match(row.error, /killed at \d+ MiB while loading, past the grader's budget of 1024 MiB/)
  })

  it('gives two names that map to one folder a report folder each', function () {
    assert.notEqual(rowOf('x y').report, rowOf('x_y').report)
    for (const name of ['x y', 'x_y']) assert.ok(fs.existsSync(rowOf(name).report), name)
  })

  it('shows nothing a submission controls raw on the terminal: no escape, no forged line', function () {
    // the table's CSV shows the name as every format does, escaped (lib/util/escape.js)
    const forged = rowOf(shownText(FORGED_NAME))
    assert.equal(forged.verdict, 'fail')
    for (const [stream, text] of [['stdout', run.stdout], ['stderr', run.stderr]]) {
      const raw = text.split('\n').find(function hasControl (line) { return RAW_CONTROL.test(line) })
      assert.equal(raw, undefined, `${stream} holds a raw control character: ${JSON.stringify(raw)}`)
      assert.doesNotMatch(text, /^PASS mallory/m, stream)
      assert.doesNotMatch(text, /^bob: PASS/m, stream)
    }
    assert.match(run.stdout, /\\x1b/, 'the escapes are shown, escaped')
  })
})
