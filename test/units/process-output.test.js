/**
 * What a process the grader started printed (grader/process/output.js): the
 * line that tells a crash, and the wait for the last of its output, which a
 * busy machine can deliver after the process's 'exit' event.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { crashLine, outputDrained } from '../../grader/process/output.js'

/** A Node child running `code`, its output kept as it arrives. */
function runNode (code) {
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'pipe'] })
  const seen = { output: '' }
  child.stdout.setEncoding('utf8').on('data', function keep (chunk) { seen.output += chunk })
  child.stderr.setEncoding('utf8').on('data', function keep (chunk) { seen.output += chunk })
  const exited = new Promise(function onExit (resolve) { child.once('exit', resolve) })
  return { child, seen, exited }
}

describe('grader/process/output.js', function () {
  describe('crashLine', function () {
    it('names the last error and the first frame of the handler\'s own, not Node\'s or a package\'s', function () {
      const output = [
        'student server: POST /student is /tmp/a.js (handler), pid 7',
        'Error: the handler crashed the process on purpose',
        '    at node:internal/streams/readable:1:1',
        '    at /srv/node_modules/x/index.js:2:2',
        '    at Socket.throwUncaught (file:///tmp/a.js:6:11)'
      ].join('\n')
      assert.equal(crashLine(output), 'Error: the handler crashed the process on purpose (/tmp/a.js:6:11)')
    })

    it('gives the last line written when no error is in it, and says when there was none', function () {
      assert.equal(crashLine('listening\nbye\n'), 'bye')
      assert.equal(crashLine(''), 'no output')
    })
  })

  describe('outputDrained', function () {
    it('resolves once everything the process printed before it exited is read', async function () {
      // 4 MB of log and then a crash: more than a pipe holds, so the exit can come before the end of it
      const { child, seen, exited } = runNode("process.stderr.write('x'.repeat(4e6) + '\\n', function crash () { throw new Error('last words') })")
      await exited
      await outputDrained(child)
      assert.equal(child.stdout.readableEnded && child.stderr.readableEnded, true, 'both pipes read to their end')
      assert.match(crashLine(seen.output), /^Error: last words/)
    })

    it('waits no longer than its bound for a pipe a grandchild still holds', async function () {
      // the grandchild inherits the pipes and outlives its parent, which prints its pid
      const { child, seen, exited } = runNode("const g = require('node:child_process').spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'inherit', detached: true }); g.unref(); console.log(g.pid)")
      await exited
      const started = Date.now()
      await outputDrained(child, 300)
      const waited = Date.now() - started
      const grandchild = Number(seen.output.trim())
      try {
        assert.ok(waited >= 250, `waited ${waited} ms`)
        assert.equal(child.stdout.readableEnded, false, 'the grandchild still holds the pipe')
      } finally {
        process.kill(grandchild, 'SIGKILL')
      }
    })
  })
})
