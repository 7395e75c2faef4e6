/**
 * What a submission's process reports is data: the allocation sites it forges name a named pipe,
 * a socket, a link to a teacher's 0600 file in a 0700 folder, a 50 MB file, /etc/shadow and
 * another student's handler (test/slow/hostile-submissions.js makes them at test time). The class
 * run ends with a row for every submission, the honest one graded beside them; the site is named
 * on the card as it was given, with no code read at it; the secret is in no output. The single-file
 * form, whose scope is the handler's folder, ends the same way. Graded on the command line as a
 * teacher would (--quick --only memory), as root where the spec runs as root. The lookups alone:
 * test/units/site-sources.test.js.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { cardJson, formatCard, grade } from '../../grader/index.js'
import { junitXml } from '../../grader/card/junit.js'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { parseCsv } from '../csv.js'
import { hostileClass, SECRET } from './hostile-submissions.js'

/** Long enough for six gradings on a busy 2-core machine; a hang is what fails it. */
const CLASS_TIMEOUT_MS = 900_000

function runCli (args) {
  return new Promise(function run (resolve) {
    const options = { cwd: PROJECT_ROOT, timeout: CLASS_TIMEOUT_MS, killSignal: 'SIGKILL' }
    execFile(process.execPath, ['scripts/grade.js', ...args], options, function done (err, stdout, stderr) {
      resolve({ code: err ? err.code : 0, killed: err?.killed === true, stdout, stderr })
    })
  })
}

/** Every file under `dir`, as text. */
function allText (dir) {
  if (!fs.existsSync(dir)) return ''
  return fs.readdirSync(dir, { recursive: true }).map(function read (name) {
    const file = path.join(dir, name)
    return fs.lstatSync(file).isFile() ? fs.readFileSync(file, 'latin1') : ''
  }).join('\n')
}

describe('npm run grade: a submission\'s forged sites are names, never paths the grader opens', function () {
  this.timeout(CLASS_TIMEOUT_MS + 60_000)
  let made
  let out
  let run
  let rows
  let single

  before(async function gradeTheHostileClass () {
    made = await hostileClass({ single: true })
    out = path.join(PROJECT_ROOT, 'test-data', 'grade-hostile-sites')
    fs.rmSync(out, { recursive: true, force: true })
    const csv = path.join(out, 'class.csv')
    const [cli, card] = await Promise.all([
      runCli([made.classDir, '--csv', csv, '--out', out, '--quick', '--only', 'memory']),
      grade(made.single, { preset: 'quick', areas: ['memory'] })
    ])
    run = cli
    single = card
    rows = fs.existsSync(csv) ? parseCsv(fs.readFileSync(csv, 'utf8')) : []
  })

  after(async function removeTheClass () {
    await made?.close()
  })

  function rowOf (name) {
    const header = rows[0]
    const row = rows.find(function named (r) { return r[header.indexOf('name')] === name })
    assert.ok(row, `no row for ${name}: ${run.stdout.slice(-2000)}\n${run.stderr.slice(-2000)}`)
    return Object.fromEntries(header.map(function field (key, k) { return [key, row[k]] }))
  }

  it('ends, and writes a row for every submission, the honest one passed beside them', function () {
    assert.equal(run.killed, false, 'the class run was killed at its timeout: it hung')
    for (const name of ['fifo', 'socket', 'leak', 'names', 'huge']) assert.ok(['fail', 'refused'].includes(rowOf(name).verdict), name)
    assert.equal(rowOf('honest').verdict, 'pass', JSON.stringify(rowOf('honest')))
  })

  it('grades a submission whose site names a named pipe, and shows the site without its code', function () {
    assert.equal(rowOf('fifo').verdict, 'fail')
    const lines = cardJson(single).memorySites.lines
    const pipe = lines.find(function named (l) { return l.file.endsWith('/single/pipe.js') })
    assert.ok(pipe, JSON.stringify(lines))
    assert.equal(pipe.code, null)
  })

  it('grades a submission whose site names a unix socket, and shows the site without its code', function () {
    assert.equal(rowOf('socket').verdict, 'fail')
    const socket = cardJson(single).memorySites.lines.find(function named (l) { return l.file.endsWith('/single/socket.js') })
    assert.equal(socket?.code, null)
  })

  it('prints no byte of a teacher\'s 0600 file a link names: not in the card\'s text, JSON, JUnit, table or reports', function () {
    assert.equal(rowOf('leak').verdict, 'fail')
    const leak = cardJson(single).memorySites.lines.find(function named (l) { return l.file.endsWith('/single/leak.js') })
    assert.ok(leak, JSON.stringify(cardJson(single).memorySites))
    assert.equal(leak.code, null)
    for (const [what, text] of [['text', formatCard(single)], ['JSON', JSON.stringify(cardJson(single))], ['JUnit', junitXml(single)],
      ['the terminal', run.stdout + run.stderr], ['the table and the reports', allText(out)]]) {
      assert.ok(!text.includes(SECRET), `the secret is in ${what}`)
    }
  })

  it('refuses a submission holding a 50 MB file, in a row of its own', function () {
    const huge = rowOf('huge')
    assert.equal(huge.verdict, 'refused')
    assert.match(huge.error, /big\.js is more than 16 MiB/)
  })

  it('names no code for /etc/shadow or another student\'s handler, and shows its own line\'s code from its digest', function () {
    assert.equal(rowOf('names').verdict, 'fail')
    const report = allText(path.join(out, 'names'))
    assert.doesNotMatch(report, /root:[^\n]*:\d+:\d+:/, 'a line of /etc/shadow')
    assert.doesNotMatch(report, /etc\/shadow|honest\/index\.mjs/, 'a site outside the submission is not its own')
    assert.match(report, /import fs from 'node:fs'/, 'its own line 1, from the bytes its digest kept')
  })
})
