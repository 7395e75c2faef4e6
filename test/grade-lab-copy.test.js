/**
 * The copy of the lab a grading run makes for the student's user as root
 * (grader/student/lab-copy.js): what it holds, that its user may read and
 * not write it, and where a submission inside the lab goes in it. That the
 * student's process runs from it, and that it is removed, are
 * test/slow/grade-lab-copy.test.js's (processes of their own, and copies of seconds on a busy machine).
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { LabCopy } from '../grader/student/lab-copy.js'
import { PROJECT_ROOT } from '../lib/config/options.js'

describe('the lab\'s copy for the student\'s user', function () {
  let copy
  let root
  let top
  before(function makeIt () {
    copy = new LabCopy()
    root = copy.root()
    top = fs.readdirSync(root).sort()
  })
  after(function removeIt () {
    copy.close()
  })

  it('holds the child, the lab\'s code and the packages it may import, with what they depend on', function () {
    for (const file of ['package.json', 'grader/student/student-child.js', 'grader/student/allow-packages.js', 'lib/config/options.js',
      'exercises/01-stream/starter.js', 'node_modules/express/package.json', 'node_modules/raw-body/index.js',
      'node_modules/@streamparser/json/package.json', 'node_modules/bytes/index.js']) {
      assert.ok(fs.existsSync(path.join(root, file)), file)
    }
    assert.equal(copy.root(), root, 'made once')
    assert.ok(copy.cost.files > 0 && copy.cost.bytes > 0 && copy.cost.ms >= 0, JSON.stringify(copy.cost))
  })

  it('holds nothing else of the checkout: no tests, no data, no history, no docs, no other package', function () {
    assert.deepEqual(top, ['exercises', 'generators', 'grader', 'lib', 'node_modules', 'package.json'])
    assert.deepEqual(fs.readdirSync(path.join(root, 'grader')), ['student'])
    assert.equal(fs.existsSync(path.join(root, 'node_modules', 'mocha')), false)
    assert.equal(fs.existsSync(path.join(root, 'node_modules', 'raw-body', 'README.md')), false)
  })

  it('lets every user read it and no one but its owner write it, whatever the umask', function () {
    const stack = [root]
    while (stack.length > 0) {
      const at = stack.pop()
      const stat = fs.lstatSync(at)
      assert.ok(stat.isDirectory() || stat.isFile(), `${at}: a file or a folder, never a link`)
      assert.equal(stat.mode & 0o777, stat.isDirectory() ? 0o755 : 0o644, at)
      if (stat.isDirectory()) for (const name of fs.readdirSync(at)) stack.push(path.join(at, name))
    }
  })

  it('lets the process read the lab\'s parts of it, not the submissions placed beside them', function () {
    const placed = copy.place(path.join(PROJECT_ROOT, 'test/fixtures/grade'), path.join(PROJECT_ROOT, 'test/fixtures/grade/router.js'))
    assert.ok(!copy.reads().some(function holds (read) { return placed.scope.startsWith(read) }))
    assert.ok(copy.reads().includes(path.join(root, 'node_modules')))
  })

  it('copies a submission inside the lab to its place in it, where its imports of the lab resolve', function () {
    const scope = path.join(PROJECT_ROOT, 'test/fixtures/cheats')
    const placed = copy.place(scope, path.join(scope, 'own-ready.js'))
    assert.deepEqual(placed, { scope: path.join(root, 'test/fixtures/cheats'), handler: path.join(root, 'test/fixtures/cheats/own-ready.js') })
    assert.equal(fs.readFileSync(placed.handler, 'utf8'), fs.readFileSync(path.join(scope, 'own-ready.js'), 'utf8'))
    // own-ready.js imports ../../../exercises/01-stream/solution-library.js
    assert.ok(fs.existsSync(path.resolve(path.dirname(placed.handler), '../../../exercises/01-stream/solution-library.js')))
  })

  it('finds a submission in the lab\'s own parts where it is, and leaves one outside the lab to its own copy', function () {
    const scope = path.join(PROJECT_ROOT, 'exercises/01-stream')
    assert.deepEqual(copy.place(scope, path.join(scope, 'starter.js')), { scope: path.join(root, 'exercises/01-stream'), handler: path.join(root, 'exercises/01-stream/starter.js') })
    assert.equal(copy.place('/tmp', '/tmp/handler.js'), null)
  })

  it('is refused, saying why, where other users cannot enter the temporary folder', function () {
    const before = process.env.TMPDIR
    const closed = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-closed-'))
    fs.chmodSync(closed, 0o700)
    process.env.TMPDIR = closed
    try {
      assert.throws(function make () { new LabCopy().root() }, { code: 'NOT_GRADED', message: /other users cannot enter .*streamlab-closed-.*TMPDIR/ })
      assert.deepEqual(fs.readdirSync(closed), [], 'nothing left there')
    } finally {
      if (before === undefined) delete process.env.TMPDIR
      else process.env.TMPDIR = before
      fs.rmSync(closed, { recursive: true, force: true })
    }
  })
})
