/**
 * As root, the student's process reads the lab's code from the grading
 * run's copy (grader/student/lab-copy.js), never from the checkout: so it
 * is graded wherever the lab is cloned, a folder other users cannot enter
 * included, and no folder of the user's is opened to it. Whoever made the
 * copy removes it: the run, a process given none, and at the latest the
 * exit or the signal that ends the grader. What the copy holds is
 * test/grade-lab-copy.test.js's.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { send } from '../../grader/checks/client.js'
import { LabCopy } from '../../grader/student/lab-copy.js'
import { StudentProcess } from '../../grader/student/student-process.js'
import { PROJECT_ROOT } from '../../lib/config/options.js'

const asRootOnLinux = process.platform === 'linux' && process.getuid?.() === 0
const LAB_COPY = new URL('../../grader/student/lab-copy.js', import.meta.url).href
const CHILD = path.join('grader', 'student', 'student-child.js')
const PROBE = path.join(PROJECT_ROOT, 'test/fixtures/grade/isolation-probe.js')

/** Says where its process's code came from, and whether it could read the checkout. */
const WHERE = `import fs from 'node:fs'
import getRawBody from 'raw-body'
export default async function where (req, res) {
  await getRawBody(req)
  let checkout = 'ok'
  try { fs.readFileSync(${JSON.stringify(path.join(PROJECT_ROOT, 'package.json'))}) } catch (err) { checkout = err.code }
  res.json({ child: process.argv[1], rawBody: import.meta.resolve('raw-body'), checkout })
}
`

describe('the student\'s process as root, from the run\'s copy of the lab', function () {
  this.timeout(60_000)
  let dir
  let handler
  before(function writeHandler () {
    // as root only: elsewhere the process runs as the grader's user, from the checkout
    if (!asRootOnLinux) this.skip()
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-lab-copy-'))
    fs.chmodSync(dir, 0o755)
    handler = path.join(dir, 'where.js')
    fs.writeFileSync(handler, WHERE, { mode: 0o644 })
  })
  after(function removeHandler () {
    if (dir) fs.rmSync(dir, { recursive: true, force: true })
  })

  async function askWhere (student) {
    const res = await send(student.urlOf('student'), { buffer: Buffer.from('x'), timeoutMs: 10_000 })
    assert.equal(res.status, 200, res.text)
    return res.json
  }

  it('runs the child and the packages from the copy, and reads nothing of the checkout', async function () {
    const labCopy = new LabCopy()
    const student = new StudentProcess({ handler, budget: 2 ** 31, labCopy })
    try {
      await student.start()
      const where = await askWhere(student)
      const root = labCopy.root()
      assert.equal(where.child, path.join(root, CHILD))
      assert.ok(new URL(where.rawBody).pathname.startsWith(path.join(root, 'node_modules') + path.sep), where.rawBody)
      if (student.isolation.permission !== null) assert.equal(where.checkout, 'ERR_ACCESS_DENIED')
      assert.equal(student.isolation.labCopy, true)
      assert.ok(student.isolation.user >= 1_500_000_000)
      await student.stop()
      assert.ok(fs.existsSync(root), 'the run\'s copy outlives a process of the run')
    } finally {
      await student.stop()
      labCopy.close()
    }
  })

  it('runs a submission inside the lab from its place in the copy', async function () {
    const labCopy = new LabCopy()
    const student = new StudentProcess({ handler: PROBE, budget: 2 ** 31, labCopy })
    try {
      await student.start()
      const line = fs.readFileSync(`/proc/${student.pid}/cmdline`, 'utf8').split('\0')
      assert.ok(line.includes(path.join(labCopy.root(), 'test/fixtures/grade/isolation-probe.js')), line.join(' '))
      assert.ok(!line.some(function inCheckout (arg) { return arg.includes(PROJECT_ROOT) }), line.join(' '))
    } finally {
      await student.stop()
      labCopy.close()
    }
  })

  it('makes a copy of its own when the run gives none, and removes it when stopped', async function () {
    const student = new StudentProcess({ handler, budget: 2 ** 31 })
    let root
    try {
      await student.start()
      root = path.dirname(path.dirname(path.dirname((await askWhere(student)).child)))
      assert.ok(fs.existsSync(path.join(root, 'node_modules', 'express')))
    } finally {
      await student.stop()
    }
    assert.equal(fs.existsSync(root), false, root)
  })
})

describe('the lab\'s copy, removed by whoever made it', function () {
  this.timeout(60_000)

  it('is removed by close(), and made again if asked for after', function () {
    const copy = new LabCopy()
    const first = copy.root()
    copy.close()
    assert.equal(fs.existsSync(first), false)
    copy.close()
    const second = copy.root()
    copy.close()
    assert.equal(fs.existsSync(second), false)
  })

  it('is removed when the process that made it exits without closing it', async function () {
    const made = await makeCopyIn(`import { LabCopy } from ${JSON.stringify(LAB_COPY)}
console.log(new LabCopy().root())`)
    await made.exited
    assert.equal(made.child.exitCode, 0)
    assert.equal(fs.existsSync(made.root), false, made.root)
  })

  it('is removed when a signal ends the process that made it, which still ends by that signal', async function () {
    const made = await makeCopyIn(`import { LabCopy } from ${JSON.stringify(LAB_COPY)}
console.log(new LabCopy().root())
setInterval(function wait () {}, 1000)`)
    assert.ok(fs.existsSync(made.root))
    made.child.kill('SIGTERM')
    await made.exited
    assert.equal(made.child.signalCode, 'SIGTERM')
    assert.equal(fs.existsSync(made.root), false, made.root)
  })
})

/** A node process running `source`, and the copy's folder it printed once made. */
async function makeCopyIn (source) {
  const child = spawn(process.execPath, ['--input-type=module', '-e', source], { stdio: ['ignore', 'pipe', 'inherit'] })
  const exited = once(child, 'exit')
  let out = ''
  child.stdout.setEncoding('utf8')
  for await (const chunk of child.stdout) {
    out += chunk
    if (out.includes('\n')) break
  }
  return { child, exited, root: out.trim() }
}
