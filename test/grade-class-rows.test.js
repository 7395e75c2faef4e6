/**
 * A class run's rows and files (grader/card/class.js), with a stand-in for
 * grade() so that nothing is graded: every submission gets its own row
 * (refused before it is read, refused by the grader, the grader's failure,
 * graded; an entry that is no submission a `skipped` row), names are data
 * (distinct report folders, never the table's files, never inside the
 * class's folder), what the grader cannot write is its own
 * failure, and the table and the reports are the grader's alone (0600, 0700).
 * The slow part, a class graded for real with each attack in it, is
 * test/slow/grade-cheats.test.js.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { classPlaceProblem, gradeClass } from '../grader/card/class.js'
import { COLUMNS } from '../grader/card/class-rows.js'
import { PRIVATE_FILE_MODE, PRIVATE_FOLDER_MODE } from '../grader/card/class-table.js'
import { MAX_FILE_BYTES, MAX_FILES, MAX_SUBMISSION_BYTES, READ_DEADLINE_MS } from '../grader/student/digest.js'
import { PROJECT_ROOT } from '../lib/config/options.js'
import { parseCsv } from './csv.js'

const HANDLER = 'export default function handler (req, res) { res.end() }\n'
const REFUSAL = 'not graded: the grader runs as root and its user layer was turned off, and a submission never runs as root'

/** A card as grade() returns it, as much of it as a row reads. */
function cardOf (handler, seed, passed) {
  return {
    handler,
    seed,
    passed,
    ms: 1500,
    loadError: null,
    checks: [
      { area: 'correctness', name: 'exact count', pass: true, figure: 'equal', limit: 'equal', details: {} },
      { area: 'memory', name: 'growth against body size', pass: passed, figure: '1 MiB', limit: '8 MiB', details: { slope: passed ? 0.4 : 300 } }
    ]
  }
}

/**
 * grade() as the class run calls it, by the file's name: `refused-by-grader` throws NOT_GRADED,
 * `grader-crash` another error, `fails` a failing card, anything else a passing one.
 */
function standInGrade (calls) {
  return async function gradeStandIn (handler, options) {
    calls.push({ handler, options })
    if (handler.includes('refused-by-grader')) throw Object.assign(new Error(REFUSAL), { code: 'NOT_GRADED', reason: REFUSAL })
    if (handler.includes('grader-crash')) throw new Error('EEXIST: the grader tripped')
    return cardOf(handler, options.seed, !handler.includes('fails'))
  }
}

async function keepCard (dir, card) {
  const file = path.join(dir, 'results.json')
  await fs.promises.writeFile(file, JSON.stringify({ handler: card.handler }))
  return [file]
}

function table (csv) {
  const [header, ...body] = parseCsv(fs.readFileSync(csv, 'utf8'))
  return body.map(function asRow (cells) { return Object.fromEntries(header.map(function pair (column, k) { return [column, cells[k]] })) })
}

function modeOf (file) {
  return fs.statSync(file).mode & 0o777
}

describe('a class run\'s rows (grader/card/class.js)', function () {
  let dir
  let folder
  let out

  beforeEach(function makeClass () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-class-rows-'))
    folder = path.join(dir, 'class')
    out = path.join(dir, 'out')
    fs.mkdirSync(folder)
  })

  afterEach(function removeClass () {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  function write (name, text = HANDLER) {
    fs.mkdirSync(path.dirname(path.join(folder, name)), { recursive: true })
    fs.writeFileSync(path.join(folder, name), text)
  }

  describe('every submission gets its own row', function () {
    let calls
    let events
    let result

    beforeEach(async function gradeTheClass () {
      write('honest.js')
      write('fails.js')
      write('refused-by-grader.js')
      write('grader-crash.js')
      fs.symlinkSync('/dev/stdin', path.join(folder, 'stdin.js'))
      fs.mkdirSync(path.join(folder, 'piped'))
      fs.symlinkSync('/dev/stdin', path.join(folder, 'piped', 'index.js'))
      calls = []
      events = []
      result = await gradeClass(folder, {
        csv: path.join(out, 'class.csv'),
        reportDir: out,
        seed: 7,
        grade: standInGrade(calls),
        writeReport: keepCard,
        onProgress: function keep (event) { events.push(event) }
      })
    })

    it('writes a row for each, in name order, with its verdict', function () {
      const rows = table(result.csv)
      assert.deepEqual(rows.map(function said (r) { return [r.name, r.verdict] }), [
        ['fails', 'fail'],
        ['grader-crash', 'error'],
        ['honest', 'pass'],
        ['piped', 'refused'],
        ['refused-by-grader', 'refused'],
        ['stdin', 'refused']
      ])
      assert.deepEqual(result.problems, [])
    })

    it('refuses a link before grading it, and gives the reason', function () {
      const rows = table(result.csv)
      assert.equal(rows.find(function named (r) { return r.name === 'stdin' }).error, 'not graded: a symbolic link, not a regular file')
      assert.equal(rows.find(function named (r) { return r.name === 'piped' }).error, 'not graded: index.js is a symbolic link, not a regular file')
      assert.deepEqual(calls.map(function graded (c) { return path.basename(c.handler) }).sort(), ['fails.js', 'grader-crash.js', 'honest.js', 'refused-by-grader.js'])
    })

    it('makes NOT_GRADED from grade() a refused row with its reason, and any other throw an error row', function () {
      const rows = table(result.csv)
      const refused = rows.find(function named (r) { return r.name === 'refused-by-grader' })
      assert.equal(refused.error, REFUSAL)
      assert.equal(refused.report, '')
      assert.match(refused.sha256, /^[0-9a-f]{64}$/)
      assert.equal(rows.find(function named (r) { return r.name === 'grader-crash' }).error, 'the grader failed: EEXIST: the grader tripped')
    })

    it('lets each submission read only its own file or folder', function () {
      for (const call of calls) assert.equal(call.options.isolation.submission, path.join(folder, path.basename(call.handler)))
    })

    it('reports each submission before and after, refused ones too', function () {
      assert.equal(events.filter(function start (e) { return e.type === 'submission' }).length, 6)
      assert.deepEqual(events.filter(function graded (e) { return e.type === 'graded' }).map(function verdict (e) { return e.row.verdict }),
        ['fail', 'error', 'pass', 'refused', 'refused', 'refused'])
    })

    it('writes the table, the HTML and the reports for the grader\'s user only', function () {
      assert.equal(modeOf(result.csv), 0o600)
      assert.equal(modeOf(result.html), 0o600)
      assert.equal(modeOf(out), 0o700)
      const honest = table(result.csv).find(function named (r) { return r.name === 'honest' })
      assert.equal(honest.report, path.join(out, 'honest'))
      assert.equal(modeOf(honest.report), 0o700)
      assert.equal(modeOf(path.join(honest.report, 'results.json')), 0o600)
      assert.match(fs.readFileSync(result.html, 'utf8'), /<td class="refused">refused<\/td>/)
      assert.match(fs.readFileSync(result.html, 'utf8'), /6 submissions: 1 passed, 1 failed, 3 refused, 1 the grader failed on/)
    })
  })

  describe('an entry that is no submission', function () {
    it('is a row "skipped" with the reason, never graded and never dropped', async function () {
      write('honest.mjs')
      write('notes.txt', 'office hours on Friday')
      write('handler.ts')
      const calls = []
      const events = []
      const result = await gradeClass(folder, {
        csv: path.join(out, 'class.csv'),
        reportDir: out,
        seed: 7,
        grade: standInGrade(calls),
        writeReport: keepCard,
        onProgress: function keep (event) { events.push(event) }
      })
      const rows = table(result.csv)
      assert.deepEqual(rows.map(function said (r) { return [r.name, r.verdict, r.error] }), [
        ['handler.ts', 'skipped', 'not a submission: a .ts file (a submission is a .js, .mjs or .cjs file, or a folder with a package.json or an index.js)'],
        ['honest', 'pass', ''],
        ['notes.txt', 'skipped', 'not a submission: a .txt file (a submission is a .js, .mjs or .cjs file, or a folder with a package.json or an index.js)']
      ])
      assert.deepEqual(calls.map(function graded (c) { return path.basename(c.handler) }), ['honest.mjs'])
      assert.deepEqual(events.filter(function start (e) { return e.type === 'submission' }).map(function at (e) { return `${e.index + 1}/${e.total} ${e.name}` }), ['1/1 honest'])
      assert.equal(events.filter(function graded (e) { return e.type === 'graded' }).length, 3)
      assert.match(fs.readFileSync(result.html, 'utf8'), /1 submission: 1 passed, 2 skipped \(not a submission\)/)
    })

    it('makes a folder with nothing to grade a usage error that names what it skipped and why', async function () {
      write('notes.txt', 'x')
      await assert.rejects(gradeClass(folder, { csv: path.join(out, 'class.csv'), seed: 7, grade: standInGrade([]) }),
        { name: 'TypeError', message: /^no submissions in .*: a submission is a \.js, \.mjs or \.cjs file, .*; skipped: notes\.txt \(not a submission: a \.txt file/ })
    })
  })

  describe('names are data', function () {
    it('gives two names that map to one folder a folder each, and a folder named like the table its grade', async function () {
      write('x y.js')
      write('x_y.js')
      write('class.csv/index.js')
      write('CLASS.html/index.js')
      const result = await gradeClass(folder, { csv: path.join(out, 'class.csv'), reportDir: out, seed: 7, grade: standInGrade([]), writeReport: keepCard })
      const rows = table(result.csv)
      const reports = Object.fromEntries(rows.map(function pair (r) { return [r.name, r.report] }))
      assert.deepEqual(reports, {
        'CLASS.html': path.join(out, 'CLASS.html-2'),
        'class.csv': path.join(out, 'class.csv-2'),
        'x y': path.join(out, 'x_y'),
        x_y: path.join(out, 'x_y-2')
      })
      for (const r of rows) {
        assert.equal(r.verdict, 'pass', r.name)
        assert.equal(JSON.parse(fs.readFileSync(path.join(r.report, 'results.json'), 'utf8')).handler, path.join(r.submission, ...(r.name.includes('.') ? ['index.js'] : [])))
      }
      assert.ok(fs.statSync(result.csv).isFile())
      assert.deepEqual(result.problems, [])
    })

    it('keeps clear of a report folder left on disk', async function () {
      write('alice.js')
      fs.mkdirSync(path.join(out, 'alice'), { recursive: true })
      const result = await gradeClass(folder, { csv: path.join(out, 'class.csv'), reportDir: out, seed: 7, grade: standInGrade([]), writeReport: keepCard })
      assert.equal(result.rows[0].report, path.join(out, 'alice-2'))
    })

    it('refuses, before grading, a table or reports inside the class\'s folder', async function () {
      write('alice.js')
      const calls = []
      await assert.rejects(gradeClass(folder, { csv: path.join(folder, 'class.csv'), reportDir: out, grade: standInGrade(calls) }), TypeError)
      await assert.rejects(gradeClass(folder, { csv: path.join(out, 'class.csv'), reportDir: path.join(folder, 'reports'), grade: standInGrade(calls) }), /inside the class's folder/)
      assert.deepEqual(calls, [])
      assert.match(classPlaceProblem(folder, { csv: path.join(out, 'class.html') }), /would be one file/)
      assert.equal(classPlaceProblem(folder, { csv: path.join(out, 'class.csv'), reportDir: dir }), null)
    })

    it('sees through a link to the class\'s folder', function () {
      fs.symlinkSync(folder, path.join(dir, 'link'))
      assert.match(classPlaceProblem(folder, { csv: path.join(dir, 'link', 'new', 'class.csv') }), /^the table \(--csv\) would be written inside/)
    })
  })

  describe('what the grader cannot write is its own failure', function () {
    it('keeps a row\'s grade when its report cannot be written, and says so among the problems', async function () {
      write('alice.js')
      write('bob.js')
      const result = await gradeClass(folder, {
        csv: path.join(out, 'class.csv'),
        reportDir: out,
        seed: 7,
        grade: standInGrade([]),
        writeReport: async function failOnAlice (reportDir, card) {
          if (card.handler.endsWith('alice.js')) throw new Error('ENOSPC: no space left on device')
          return keepCard(reportDir, card)
        }
      })
      const [alice, bob] = table(result.csv)
      assert.deepEqual([alice.verdict, alice.report, alice.notes], ['pass', '', 'no report: ENOSPC: no space left on device'])
      assert.deepEqual([bob.verdict, bob.report], ['pass', path.join(out, 'bob')])
      assert.deepEqual(result.problems, ['the report of alice was not written: ENOSPC: no space left on device'])
    })

    it('goes on grading when the table cannot be written, and says so once', async function () {
      write('alice.js')
      write('bob.js')
      fs.mkdirSync(path.join(out, 'class.csv'), { recursive: true })
      const result = await gradeClass(folder, { csv: path.join(out, 'class.csv'), reportDir: out, seed: 7, grade: standInGrade([]), writeReport: keepCard })
      assert.deepEqual(result.rows.map(function verdict (r) { return r.verdict }), ['pass', 'pass'])
      assert.equal(result.problems.length, 1)
      assert.match(result.problems[0], /^the table was not written to .*class\.csv: /)
      assert.deepEqual(fs.readdirSync(out).filter(function left (f) { return f.endsWith('.tmp') }), [])
    })

    it('replaces a table left readable by an earlier run, and a link, with a file of mode 0600', async function () {
      write('alice.js')
      fs.mkdirSync(out, { recursive: true })
      fs.writeFileSync(path.join(out, 'class.csv'), 'old', { mode: 0o644 })
      fs.writeFileSync(path.join(dir, 'elsewhere.html'), 'not to be written through')
      fs.symlinkSync(path.join(dir, 'elsewhere.html'), path.join(out, 'class.html'))
      const result = await gradeClass(folder, { csv: path.join(out, 'class.csv'), reportDir: out, seed: 7, grade: standInGrade([]), writeReport: keepCard })
      assert.equal(modeOf(result.csv), 0o600)
      assert.equal(fs.lstatSync(result.html).isFile(), true)
      assert.equal(modeOf(result.html), 0o600)
      assert.equal(fs.readFileSync(path.join(dir, 'elsewhere.html'), 'utf8'), 'not to be written through')
      assert.deepEqual(table(result.csv).map(function named (r) { return r.name }), ['alice'])
    })

    it('writes a notes column, last, for what the grader says beside a grade', async function () {
      write('carol/index.js')
      fs.symlinkSync('/etc/passwd', path.join(folder, 'carol', 'secrets.js'))
      const result = await gradeClass(folder, { csv: path.join(out, 'class.csv'), reportDir: out, seed: 7, grade: standInGrade([]), writeReport: keepCard })
      assert.equal(COLUMNS.at(-1), 'notes')
      assert.equal(table(result.csv)[0].notes, 'not read, not in the digest: secrets.js (a symbolic link)')
    })
  })

  it('makes a table inside the class\'s folder a usage error on the command line', async function () {
    write('alice.js')
    const run = await new Promise(function runCli (resolve) {
      execFile(process.execPath, ['scripts/grade.js', folder, '--csv', path.join(folder, 'class.csv')], { cwd: PROJECT_ROOT, timeout: 20_000 }, function done (err, stdout, stderr) {
        resolve({ code: err ? err.code : 0, stderr })
      })
    })
    assert.equal(run.code, 2, run.stderr)
    assert.match(run.stderr, /inside the class's folder/)
  })

  it('makes a --memory-limit that is no size, or too small for the lab itself, a usage error', async function () {
    write('alice.js')
    for (const [limit, said] of [['lots', /--memory-limit takes a size/], ['64MiB', /--memory-limit: at least 256 MiB/]]) {
      const run = await new Promise(function runCli (resolve) {
        execFile(process.execPath, ['scripts/grade.js', folder, '--memory-limit', limit], { cwd: PROJECT_ROOT, timeout: 20_000 }, function done (err, stdout, stderr) {
          resolve({ code: err ? err.code : 0, stderr })
        })
      })
      assert.equal(run.code, 2, run.stderr)
      assert.match(run.stderr, said)
    }
  })

  it('is what docs/grading-a-class.md says: the read bounds, the modes, every column', function () {
    const page = fs.readFileSync(path.join(PROJECT_ROOT, 'docs', 'grading-a-class.md'), 'utf8').replace(/\s+/g, ' ')
    const quoted = `At most ${MAX_SUBMISSION_BYTES / 2 ** 20} MiB of a submission is read (${MAX_FILE_BYTES / 2 ** 20} MiB a file, ${MAX_FILES.toLocaleString('en-US')} files, ${READ_DEADLINE_MS / 1000} s)`
    assert.ok(page.includes(quoted), quoted)
    assert.ok(page.includes(`Every file is mode 0${PRIVATE_FILE_MODE.toString(8)}, in folders of 0${PRIVATE_FOLDER_MODE.toString(8)}`))
    for (const column of COLUMNS) assert.ok(page.includes(`\`${column}\``), column)
  })
})
