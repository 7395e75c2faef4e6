/**
 * What the grader reads of a line a graded process names (grader/process/regular-file.js,
 * allocation-sites.js, grader/student/digest.js `sources`): a site's file is a name looked up in
 * the bytes the digest kept, never a path opened; a file the process writes for the grader is
 * read as a regular file alone, so a named pipe, a socket, a link or a huge file put in its
 * place is refused at once. The class runs these attacks end to end: test/slow/grade-hostile-sites.test.js.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { placeInSubmission, readSiteTables, sourceInSnapshot } from '../../grader/process/allocation-sites.js'
import { readRegularSync } from '../../grader/process/regular-file.js'
import { submissionDigest } from '../../grader/student/digest.js'

describe('a site\'s file is a name, not a path to open', function () {
  let dir
  let server

  before(async function hostileFolder () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-sources-'))
    fs.mkdirSync(path.join(dir, 'sub', 'lib'), { recursive: true })
    fs.writeFileSync(path.join(dir, 'sub', 'index.mjs'), 'export default function h () {}\nconst whole = Buffer.concat(chunks)\n')
    fs.writeFileSync(path.join(dir, 'sub', 'lib', 'helper.js'), 'body += chunk\n')
    fs.writeFileSync(path.join(dir, 'sub', 'notes.txt'), 'not a module\n')
    execFileSync('mkfifo', [path.join(dir, 'sub', 'pipe.js')])
    server = net.createServer()
    await new Promise(function listening (resolve) { server.listen(path.join(dir, 'sub', 'socket.js'), resolve) })
    fs.mkdirSync(path.join(dir, 'vault'), { mode: 0o700 })
    fs.writeFileSync(path.join(dir, 'vault', 'secret.js'), 'TEACHER-SECRET\n', { mode: 0o600 })
    fs.symlinkSync(path.join(dir, 'vault', 'secret.js'), path.join(dir, 'sub', 'leak.js'))
    fs.writeFileSync(path.join(dir, 'sub', 'big.js'), Buffer.alloc(2 * 1024 * 1024, 0x2f))
  })

  after(async function removeFolder () {
    await new Promise(function closed (resolve) { server.close(resolve) })
    fs.rmSync(dir, { recursive: true, force: true })
  })

  describe('submissionDigest', function () {
    it('keeps the bytes of its regular modules of at most 1 MiB, under their absolute paths, and no others', async function () {
      const { sources, skipped } = await submissionDigest(path.join(dir, 'sub'))
      const kept = [...sources.keys()].map(function rel (file) { return path.relative(path.join(dir, 'sub'), file) }).sort()
      assert.deepEqual(kept, ['index.mjs', 'lib/helper.js'])
      assert.equal(sources.get(path.join(dir, 'sub', 'lib', 'helper.js')).toString(), 'body += chunk\n')
      assert.deepEqual(skipped, ['leak.js (a symbolic link)', 'pipe.js (a named pipe)', 'socket.js (a socket)'])
    })

    it('keeps a single file\'s bytes under its resolved path', async function () {
      const file = path.join(dir, 'sub', 'index.mjs')
      const { sources } = await submissionDigest(path.relative(process.cwd(), file))
      assert.deepEqual([...sources.keys()], [file])
    })
  })

  describe('sourceInSnapshot', function () {
    it('answers a name the snapshot holds, and null for a pipe, a socket, a link, a huge file or a file outside', async function () {
      const { sources } = await submissionDigest(path.join(dir, 'sub'))
      const source = sourceInSnapshot(sources)
      assert.match(source(path.join(dir, 'sub', 'index.mjs')).toString(), /Buffer\.concat/)
      for (const name of ['pipe.js', 'socket.js', 'leak.js', 'big.js', '../vault/secret.js', '/etc/shadow']) {
        assert.equal(source(path.resolve(dir, 'sub', name)), null, name)
      }
    })
  })

  describe('placeInSubmission', function () {
    it('maps a name inside the submission as the process saw it to the grader\'s, any other to null, asking no disk', function () {
      const place = placeInSubmission({ root: '/lab', seen: '/tmp/copy/sub', given: path.join(dir, 'sub') })
      assert.equal(place('/tmp/copy/sub/lib/helper.js'), path.join(dir, 'sub', 'lib', 'helper.js'))
      assert.equal(place('/tmp/copy/sub/../other-student/handler.js'), null)
      assert.equal(place('/etc/shadow'), null)
      assert.equal(place('node:internal/streams/readable'), null)
    })
  })

  describe('readRegularSync', function () {
    it('reads a regular file of at most the bound, and refuses at once a pipe, a socket, a link, a folder, a larger file', function () {
      assert.equal(readRegularSync(path.join(dir, 'sub', 'lib', 'helper.js'), 1024).toString(), 'body += chunk\n')
      const started = Date.now()
      for (const name of ['pipe.js', 'socket.js', 'leak.js', 'lib', 'big.js', 'missing.js']) {
        assert.equal(readRegularSync(path.join(dir, 'sub', name), 1024 * 1024), null, name)
      }
      assert.ok(Date.now() - started < 5000, 'nothing waited on the pipe')
    })
  })

  describe('readSiteTables', function () {
    it('refuses a pipe or a link put where the process writes its table, at once', async function () {
      const started = Date.now()
      const planted = [path.join(dir, 'sub', 'pipe.js'), path.join(dir, 'sub', 'leak.js')]
      const tables = await readSiteTables(function files () { return planted }, 0, 0)
      assert.deepEqual(tables, [])
      assert.ok(Date.now() - started < 5000, 'nothing waited on the pipe')
    })
  })
})
