/**
 * Who a submission runs as (grader/student/isolation.js): as root, never as
 * root. A submission its user cannot read runs from a readable copy of its
 * regular files; one that would have to run as root is not graded, with
 * the reason. The process reads its own submission alone, and the
 * project's code, not what a teacher writes beside it.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { chooseIsolation, isolatedCommand } from '../grader/student/isolation.js'
import { copySubmission } from '../grader/student/readable-copy.js'
import { PROJECT_ROOT } from '../lib/config/options.js'

const asRootOnLinux = process.platform === 'linux' && process.getuid?.() === 0

describe('who a submission runs as, and what it may read', function () {
  let dir
  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-choice-'))
    fs.chmodSync(dir, 0o755)
  })
  afterEach(function () {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('runs a world-readable submission as it is, and a mode-0600 one from a copy, never as root', function () {
    if (!asRootOnLinux) this.skip()
    const open = path.join(dir, 'open.js')
    const closed = path.join(dir, 'closed.js')
    fs.writeFileSync(open, 'export default function h () {}\n')
    fs.writeFileSync(closed, 'export default function h () {}\n')
    // whatever the umask
    fs.chmodSync(open, 0o644)
    fs.chmodSync(closed, 0o600)
    const plain = chooseIsolation({ handler: open, submission: open })
    assert.equal(plain.copy, false)
    assert.ok(plain.uid >= 1_500_000_000, 'a user of its own')
    const copied = chooseIsolation({ handler: closed, submission: closed })
    assert.equal(copied.copy, true)
    assert.ok(copied.uid >= 1_500_000_000, 'still a user of its own: never root')
    assert.equal(copied.notGraded, null)
  })

  it('copies a folder for a file inside it its user cannot read', function () {
    if (!asRootOnLinux) this.skip()
    const folder = path.join(dir, 'alice')
    fs.mkdirSync(folder, { mode: 0o755 })
    fs.writeFileSync(path.join(folder, 'index.js'), 'import "./helper.js"\n', { mode: 0o644 })
    fs.writeFileSync(path.join(folder, 'helper.js'), '', { mode: 0o600 })
    assert.equal(chooseIsolation({ handler: path.join(folder, 'index.js'), submission: folder }).copy, true)
  })

  it('does not grade at all, saying why, when as root the user layer is off', function () {
    if (!asRootOnLinux) this.skip()
    const file = path.join(dir, 'any.js')
    fs.writeFileSync(file, '', { mode: 0o644 })
    const choice = chooseIsolation({ handler: file, submission: file, user: false })
    assert.equal(choice.uid, null)
    assert.match(choice.notGraded, /never runs as root/)
  })

  it('copies regular files and folders only, every one readable, and never follows a link', function () {
    const folder = path.join(dir, 'bob')
    fs.mkdirSync(path.join(folder, 'lib'), { recursive: true })
    fs.writeFileSync(path.join(folder, 'index.js'), 'export default 1\n', { mode: 0o600 })
    fs.writeFileSync(path.join(folder, 'lib', 'a.js'), 'a', { mode: 0o600 })
    fs.symlinkSync('/etc/hostname', path.join(folder, 'link.js'))
    execFileSync('mkfifo', [path.join(folder, 'pipe.js')])
    fs.mkdirSync(path.join(folder, 'node_modules'))
    const into = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-copy-'))
    try {
      const copy = copySubmission(folder, path.join(folder, 'index.js'), into)
      assert.equal(copy.handler, path.join(into, 'bob', 'index.js'))
      assert.deepEqual(fs.readdirSync(copy.scope).sort(), ['index.js', 'lib'], 'no link, pipe or node_modules')
      assert.equal(fs.statSync(copy.handler).mode & 0o777, 0o644)
      assert.equal(fs.statSync(path.join(copy.scope, 'lib')).mode & 0o777, 0o755)
      assert.equal(fs.readFileSync(path.join(copy.scope, 'lib', 'a.js'), 'utf8'), 'a')
    } finally {
      fs.rmSync(into, { recursive: true, force: true })
    }
  })

  it('lets the process read its own submission and the project\'s code, not a table written at the top', function () {
    const file = path.join(dir, 'carol.js')
    fs.writeFileSync(file, '', { mode: 0o644 })
    const choice = chooseIsolation({ handler: file, submission: file, user: false, network: false })
    if (choice.facts.permission === null) this.skip()
    const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-tmp-'))
    const { args } = isolatedCommand({ ...choice, uid: null }, { script: 'child.js', args: [], scope: choice.scope, tmpDir, nodeFlags: [] })
    fs.rmSync(tmpDir, { recursive: true, force: true })
    const reads = args.filter(function read (a) { return a.startsWith('--allow-fs-read=') }).map(function pathOf (a) { return a.slice('--allow-fs-read='.length) })
    assert.ok(reads.includes(fs.realpathSync(file)), 'the file alone')
    assert.ok(!reads.includes(fs.realpathSync(dir)), 'not its folder, where the other submissions of a class are')
    assert.ok(reads.includes(path.join(fs.realpathSync(PROJECT_ROOT), 'lib')))
    assert.ok(!reads.includes(fs.realpathSync(PROJECT_ROOT)), 'not the project\'s top level: a class table written there stays unread')
    assert.ok(!reads.some(function underData (r) { return r.includes(`${path.sep}test-data`) || r.endsWith(`${path.sep}.git`) }))
  })
})
