/**
 * What a submission is (grader/student/submission.js): the entries of a class's
 * folder, a .js, .mjs or .cjs file or a folder (its package.json's module, else its
 * index.*) each refused with its reason when it is not a regular file (a symbolic
 * link, a named pipe, a folder whose module is one, or a folder with none), anything
 * else skipped with the reason; and digests that read regular files only, bounded
 * in size and in time. A temporary folder of each kind, nothing graded.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { exportsEntry, findSubmissions } from '../../grader/student/submission.js'
import { MAX_FILE_BYTES, fileDigest, submissionDigest } from '../../grader/student/digest.js'

const HANDLER = 'export default function handler (req, res) { res.end() }\n'
const CAN_FIFO = process.platform !== 'win32'

function sha256 (text) {
  return createHash('sha256').update(text).digest('hex')
}

function mkfifo (file) {
  execFileSync('mkfifo', [file])
}

describe('grader/student/submission.js', function () {
  let dir

  beforeEach(function makeDir () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-submission-'))
  })

  afterEach(function removeDir () {
    fs.rmSync(dir, { recursive: true, force: true })
  })

  describe('findSubmissions', function () {
    it('lists .js files and folders with an index.js, in name order, graded when they are regular files', async function () {
      fs.writeFileSync(path.join(dir, 'bob.js'), HANDLER)
      fs.mkdirSync(path.join(dir, 'alice'))
      fs.writeFileSync(path.join(dir, 'alice', 'index.js'), HANDLER)
      fs.writeFileSync(path.join(dir, '.hidden.js'), HANDLER)
      const found = await findSubmissions(dir)
      assert.deepEqual(found, [
        { name: 'alice', path: path.join(dir, 'alice'), handler: path.join(dir, 'alice', 'index.js'), refused: null, skipped: null },
        { name: 'bob', path: path.join(dir, 'bob.js'), handler: path.join(dir, 'bob.js'), refused: null, skipped: null }
      ])
    })

    it('lists .mjs and .cjs files, named without their extension', async function () {
      fs.writeFileSync(path.join(dir, 'carol.mjs'), HANDLER)
      fs.writeFileSync(path.join(dir, 'dave.cjs'), 'module.exports = function handler (req, res) { res.end() }\n')
      const found = await findSubmissions(dir)
      assert.deepEqual(found.map(function named (s) { return [s.name, path.basename(s.handler), s.refused, s.skipped] }),
        [['carol', 'carol.mjs', null, null], ['dave', 'dave.cjs', null, null]])
    })

    it('grades a folder\'s package.json module: exports ".", else main (with Node\'s extensions), else index.mjs or index.cjs', async function () {
      const write = function write (file, text = HANDLER) {
        fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
        fs.writeFileSync(path.join(dir, file), text)
      }
      write('exp/package.json', JSON.stringify({ main: 'old.js', exports: { '.': { types: './x.d.ts', import: './src/handler.mjs', require: './src/handler.cjs' } } }))
      write('exp/src/handler.mjs')
      write('main/package.json', JSON.stringify({ name: 'main', main: 'lib/handler' }))
      write('main/lib/handler.js')
      write('plain/package.json', JSON.stringify({ name: 'plain' }))
      write('plain/index.cjs', 'module.exports = function handler (req, res) { res.end() }\n')
      write('idx/index.mjs')
      const found = await findSubmissions(dir)
      assert.deepEqual(found.map(function named (s) { return [s.name, path.relative(dir, s.handler), s.refused] }), [
        ['exp', path.join('exp', 'src', 'handler.mjs'), null],
        ['idx', path.join('idx', 'index.mjs'), null],
        ['main', path.join('main', 'lib', 'handler.js'), null],
        ['plain', path.join('plain', 'index.cjs'), null]
      ])
    })

    it('reads a package\'s exports as Node does for its "." entry', function () {
      assert.equal(exportsEntry('./a.js'), './a.js')
      assert.equal(exportsEntry({ '.': './a.js', './sub': './b.js' }), './a.js')
      assert.equal(exportsEntry({ import: './a.mjs', require: './a.cjs' }), './a.mjs')
      assert.equal(exportsEntry({ '.': { types: './a.d.ts', node: { import: './n.mjs' }, default: './d.js' } }), './n.mjs')
      assert.equal(exportsEntry({ '.': [{ browser: './b.js' }, './a.js'] }), './a.js')
      assert.equal(exportsEntry({ './sub': './b.js' }), null)
    })

    it('refuses a package whose module leaves the folder, passes through a link, is missing, or whose package.json is not JSON', async function () {
      const write = function write (file, text = HANDLER) {
        fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
        fs.writeFileSync(path.join(dir, file), text)
      }
      write('out/package.json', JSON.stringify({ main: '../secret.js' }))
      write('linked/package.json', JSON.stringify({ main: 'lib/handler.js' }))
      fs.mkdirSync(path.join(dir, 'elsewhere'))
      write('elsewhere/index.js')
      write('elsewhere/handler.js')
      fs.symlinkSync(path.join(dir, 'elsewhere'), path.join(dir, 'linked', 'lib'))
      write('gone/package.json', JSON.stringify({ exports: './dist/handler.js' }))
      write('broken/package.json', '{ "main": ')
      write('subpaths/package.json', JSON.stringify({ exports: { './x': './x.js' } }))
      const found = await findSubmissions(dir)
      assert.deepEqual(found.map(function named (s) { return [s.name, s.refused] }), [
        ['broken', 'not graded: package.json is not JSON (Unexpected end of JSON input)'],
        ['elsewhere', null],
        ['gone', 'not graded: package.json\'s "exports" "." names "./dist/handler.js", which is not in the folder'],
        ['linked', 'not graded: package.json\'s "main" is reached through lib, a symbolic link'],
        ['out', 'not graded: package.json\'s "main" ("../secret.js") leads outside the folder'],
        ['subpaths', 'not graded: its package.json\'s "exports" names no "." entry to import']
      ])
    })

    it('lists anything else as skipped, with the reason: another kind of file, a link to no folder, a dangling link', async function () {
      fs.writeFileSync(path.join(dir, 'notes.txt'), 'not a submission')
      fs.writeFileSync(path.join(dir, 'handler.ts'), HANDLER)
      fs.writeFileSync(path.join(dir, 'real.js'), HANDLER)
      fs.symlinkSync(path.join(dir, 'real.js'), path.join(dir, 'alias'))
      fs.symlinkSync(path.join(dir, 'nowhere'), path.join(dir, 'dangling'))
      fs.mkdirSync(path.join(dir, 'node_modules'))
      const found = await findSubmissions(dir)
      assert.deepEqual(found.map(function named (s) { return [s.name, s.refused, s.skipped] }), [
        ['alias', null, 'not a submission: a symbolic link to a file (a submission is a .js, .mjs or .cjs file, or a folder with a package.json or an index.js, never a link)'],
        ['dangling', null, 'not a submission: a symbolic link to nothing (a submission is a .js, .mjs or .cjs file, or a folder with a package.json or an index.js)'],
        ['handler.ts', null, 'not a submission: a .ts file (a submission is a .js, .mjs or .cjs file, or a folder with a package.json or an index.js)'],
        ['notes.txt', null, 'not a submission: a .txt file (a submission is a .js, .mjs or .cjs file, or a folder with a package.json or an index.js)'],
        ['real', null, null]
      ])
    })

    it('grades a file of mode 0600 like any other: the grader reads it, its user gets a copy', async function () {
      const file = path.join(dir, 'private.js')
      fs.writeFileSync(file, HANDLER, { mode: 0o600 })
      fs.chmodSync(file, 0o600)
      const [found] = await findSubmissions(dir)
      assert.equal(found.name, 'private')
      assert.equal(found.refused, null)
    })

    it('refuses a .js name that is a symbolic link, before reading it', async function () {
      fs.writeFileSync(path.join(dir, 'real.txt'), HANDLER)
      fs.symlinkSync(path.join(dir, 'real.txt'), path.join(dir, 'linked.js'))
      fs.symlinkSync('/dev/stdin', path.join(dir, 'stdin.js'))
      // real.txt itself is skipped: not a submission's name
      const found = (await findSubmissions(dir)).filter(function submission (s) { return s.skipped === null })
      assert.deepEqual(found.map(function named (s) { return [s.name, s.refused] }), [
        ['linked', 'not graded: a symbolic link, not a regular file'],
        ['stdin', 'not graded: a symbolic link, not a regular file']
      ])
    })

    it('refuses a folder whose index.js is a symbolic link, and a link to a folder', async function () {
      fs.mkdirSync(path.join(dir, 'mallory'))
      fs.symlinkSync('/dev/stdin', path.join(dir, 'mallory', 'index.js'))
      fs.mkdirSync(path.join(dir, 'real'))
      fs.writeFileSync(path.join(dir, 'real', 'index.js'), HANDLER)
      fs.symlinkSync(path.join(dir, 'real'), path.join(dir, 'trudy'))
      const found = await findSubmissions(dir)
      assert.deepEqual(found.map(function named (s) { return [s.name, s.refused] }), [
        ['mallory', 'not graded: index.js is a symbolic link, not a regular file'],
        ['real', null],
        ['trudy', 'not graded: a symbolic link to a folder (a submission is a folder or a regular file)']
      ])
    })

    it('refuses a folder with no index.js, and one whose index.js is a folder', async function () {
      fs.mkdirSync(path.join(dir, 'drafts'))
      fs.writeFileSync(path.join(dir, 'drafts', 'main.js'), HANDLER)
      fs.mkdirSync(path.join(dir, 'nested', 'index.js'), { recursive: true })
      const found = await findSubmissions(dir)
      assert.deepEqual(found.map(function named (s) { return [s.name, s.refused] }), [
        ['drafts', 'not graded: a folder with no module to grade: no package.json naming one ("main", or "exports" ".") and no index.js, index.mjs or index.cjs'],
        ['nested', 'not graded: index.js is a folder, not a regular file']
      ])
    })

    it('refuses a named pipe, as an entry and as a folder\'s index.js, without waiting on it', async function () {
      if (!CAN_FIFO) this.skip()
      mkfifo(path.join(dir, 'pipe.js'))
      fs.mkdirSync(path.join(dir, 'piped'))
      mkfifo(path.join(dir, 'piped', 'index.js'))
      const started = Date.now()
      const found = await findSubmissions(dir)
      assert.deepEqual(found.map(function named (s) { return [s.name, s.refused] }), [
        ['pipe', 'not graded: a named pipe, not a regular file'],
        ['piped', 'not graded: index.js is a named pipe, not a regular file']
      ])
      assert.ok(Date.now() - started < 5000, 'no wait on a pipe without a writer')
    })

    it('refuses a socket named like a submission', async function () {
      if (!CAN_FIFO) this.skip()
      const server = net.createServer()
      await new Promise(function listening (resolve) { server.listen(path.join(dir, 'socket.js'), resolve) })
      try {
        const [found] = await findSubmissions(dir)
        assert.deepEqual([found.name, found.refused], ['socket', 'not graded: a socket, not a regular file'])
      } finally {
        server.close()
      }
    })

    it('refuses a file past the size a file may be, from its size alone', async function () {
      const file = path.join(dir, 'huge.js')
      fs.writeFileSync(file, HANDLER)
      fs.truncateSync(file, MAX_FILE_BYTES + 1) // sparse: nothing written
      const [found] = await findSubmissions(dir)
      assert.equal(found.refused, 'not graded: huge.js is more than 16 MiB, the most a file may be')
    })
  })

  describe('fileDigest and submissionDigest', function () {
    it('digests a file as sha256sum does, and a folder as the sha256 of its sha256sum list', async function () {
      fs.writeFileSync(path.join(dir, 'a.js'), HANDLER)
      assert.equal(await fileDigest(path.join(dir, 'a.js')), sha256(HANDLER))
      assert.deepEqual(await submissionDigest(path.join(dir, 'a.js')), { sha256: sha256(HANDLER), skipped: [], sources: new Map([[path.join(dir, 'a.js'), Buffer.from(HANDLER)]]) })
      const folder = path.join(dir, 'carol')
      fs.mkdirSync(path.join(folder, 'lib'), { recursive: true })
      fs.mkdirSync(path.join(folder, 'node_modules', 'x'), { recursive: true })
      fs.writeFileSync(path.join(folder, 'index.js'), HANDLER)
      fs.writeFileSync(path.join(folder, 'lib', 'scan.js'), 'export const n = 1\n')
      fs.writeFileSync(path.join(folder, 'node_modules', 'x', 'index.js'), 'left out')
      const list = `${sha256(HANDLER)}  index.js\n${sha256('export const n = 1\n')}  lib/scan.js\n`
      const { sha256: digest, skipped } = await submissionDigest(folder)
      assert.deepEqual({ sha256: digest, skipped }, { sha256: sha256(list), skipped: [] })
    })

    it('refuses to read a symbolic link or a named pipe, without waiting on the pipe', async function () {
      fs.symlinkSync('/dev/stdin', path.join(dir, 'stdin.js'))
      await assert.rejects(fileDigest(path.join(dir, 'stdin.js')), { code: 'NOT_GRADED', reason: 'not graded: stdin.js is a symbolic link, not a regular file' })
      if (!CAN_FIFO) return
      mkfifo(path.join(dir, 'pipe.js'))
      await assert.rejects(fileDigest(path.join(dir, 'pipe.js')), { code: 'NOT_GRADED', reason: 'not graded: pipe.js is a named pipe, not a regular file' })
      await assert.rejects(submissionDigest(path.join(dir, 'pipe.js')), { code: 'NOT_GRADED' })
    })

    it('leaves a folder\'s links and pipes out of its digest, and names them', async function () {
      const folder = path.join(dir, 'dave')
      fs.mkdirSync(folder)
      fs.writeFileSync(path.join(folder, 'index.js'), HANDLER)
      const alone = await submissionDigest(folder)
      fs.symlinkSync('/etc/passwd', path.join(folder, 'secrets.js'))
      if (CAN_FIFO) mkfifo(path.join(folder, 'wait.js'))
      const withOthers = await submissionDigest(folder)
      assert.equal(withOthers.sha256, alone.sha256)
      assert.deepEqual(withOthers.skipped, ['secrets.js (a symbolic link)', ...(CAN_FIFO ? ['wait.js (a named pipe)'] : [])])
    })

    it('refuses a file that reads past the size a file may be', async function () {
      const file = path.join(dir, 'huge.js')
      fs.writeFileSync(file, '')
      fs.truncateSync(file, MAX_FILE_BYTES + 1)
      await assert.rejects(fileDigest(file), { code: 'NOT_GRADED', reason: 'not graded: huge.js is more than 16 MiB, the most a file may be' })
    })

    it('refuses a read that outlives its deadline rather than wait', async function () {
      fs.writeFileSync(path.join(dir, 'a.js'), HANDLER)
      await assert.rejects(submissionDigest(dir, { deadlineMs: 0 }), { code: 'NOT_GRADED', reason: /^not graded: (reading it|reading .*) took longer than 0 s$/ })
    })
  })
})
