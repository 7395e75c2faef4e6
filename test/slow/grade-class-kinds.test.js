/**
 * A class handed in as Node runs code (grader/student/submission.js): `.mjs`
 * and `.cjs` files, a package folder whose package.json names its module by
 * "exports" and one by "main", graded into one row each; and files it cannot
 * grade (notes.txt, handler.ts) listed as skipped with the reason, on the
 * terminal and in the table, without failing the run. The class sits in the
 * system's temporary folder, outside the lab; graded on the command line with
 * --quick --only correctness (a few seconds a submission). The class run's
 * other rows: test/slow/grade-class.test.js and test/grade-class-rows.test.js.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { parseCsv } from '../csv.js'

/** A handler in CommonJS: the whole body, inflated, parsed, counted (correct, and buffering). */
const COMMONJS_HANDLER = `'use strict'
const zlib = require('node:zlib')

module.exports = function handler (req, res) {
  const chunks = []
  req.on('data', function keep (chunk) { chunks.push(chunk) })
  req.on('end', function count () {
    let doc
    try {
      doc = JSON.parse(zlib.gunzipSync(Buffer.concat(chunks)).toString('utf8'))
    } catch (err) {
      res.status(400).json({ error: { type: 'body.invalid', message: err.message } })
      return
    }
    const items = Array.isArray(doc && doc.items) ? doc.items : []
    let idSum = 0n
    for (const record of items) if (record && Number.isSafeInteger(record.id)) idSum += BigInt(record.id)
    res.json({ items: items.length, idSum: String(idSum) })
  })
}
`

function runCli (args) {
  return new Promise(function run (resolve) {
    execFile(process.execPath, ['scripts/grade.js', ...args], { cwd: PROJECT_ROOT, timeout: 170_000 }, function done (err, stdout, stderr) {
      resolve({ code: err ? err.code : 0, stdout, stderr })
    })
  })
}

describe('npm run grade -- FOLDER: .mjs, .cjs and package submissions', function () {
  this.timeout(180_000)
  let dir
  let folder
  let run
  let rows

  before(async function gradeTheClass () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-kinds-'))
    fs.chmodSync(dir, 0o755)
    folder = path.join(dir, 'class')
    const write = function write (file, text) {
      fs.mkdirSync(path.dirname(path.join(folder, file)), { recursive: true })
      fs.writeFileSync(path.join(folder, file), text)
    }
    const exercise = function exercise (file) { return fs.readFileSync(path.join(PROJECT_ROOT, 'exercises', file), 'utf8') }
    write('alice.mjs', exercise('01-stream/solution-library.js'))
    write('bob.cjs', COMMONJS_HANDLER)
    write('carol/package.json', JSON.stringify({ name: 'carol', type: 'module', exports: { '.': { import: './src/handler.js' } } }))
    write('carol/src/handler.js', exercise('02-exact/solution.js'))
    write('dave/package.json', JSON.stringify({ name: 'dave', main: 'lib/handler' }))
    write('dave/lib/handler.js', COMMONJS_HANDLER)
    write('notes.txt', 'who handed in late')
    write('handler.ts', 'export default function handler (req: unknown) {}\n')
    const out = path.join(dir, 'out')
    run = await runCli([folder, '--quick', '--only', 'correctness', '--seed', '7', '--csv', path.join(out, 'class.csv'), '--out', out])
    const [header, ...body] = parseCsv(fs.readFileSync(path.join(out, 'class.csv'), 'utf8'))
    rows = body.map(function asRow (cells) { return Object.fromEntries(header.map(function pair (column, k) { return [column, cells[k]] })) })
  })

  after(function removeClass () {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('grades each .mjs, .cjs and package submission into a row of its own, and passes the run', function () {
    assert.equal(run.code, 0, run.stdout + run.stderr)
    const graded = rows.filter(function graded (r) { return r.verdict !== 'skipped' })
    assert.deepEqual(graded.map(function said (r) { return [r.name, r.verdict, r.correctness, r.error] }), [
      ['alice', 'pass', 'pass', ''],
      ['bob', 'pass', 'pass', ''],
      ['carol', 'pass', 'pass', ''],
      ['dave', 'pass', 'pass', '']
    ])
    for (const r of graded) assert.match(r.sha256, /^[0-9a-f]{64}$/, r.name)
    assert.equal(graded.find(function named (r) { return r.name === 'carol' }).submission, path.join(folder, 'carol'))
  })

  it('lists the files it cannot grade as skipped, with the reason, in the table and on the terminal', function () {
    const skipped = rows.filter(function skipped (r) { return r.verdict === 'skipped' })
    assert.deepEqual(skipped.map(function named (r) { return r.name }), ['handler.ts', 'notes.txt'])
    for (const r of skipped) assert.match(r.error, /^not a submission: a \.(ts|txt) file \(a submission is a \.js, \.mjs or \.cjs file/)
    assert.match(run.stdout, /^4 submissions graded with seed 7: 4 passed, 2 skipped \(not a submission\)$/m)
    assert.match(run.stdout, /^SKIPPED {2}notes\.txt {2}not a submission: a \.txt file/m)
    assert.match(run.stderr, /^ {2}handler\.ts: SKIPPED: not a submission: a \.ts file/m)
    assert.match(run.stderr, /^\[submission 4\/4\] dave: grading/m)
  })
})
