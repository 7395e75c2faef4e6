/**
 * server.js's backoff for crashes no request caused: a worker that dies at
 * birth is started again after 0, 20, 40, 80, 80 ms while the port holds a
 * connection until one stays up; the backoff starts again once a worker has
 * stayed up for the restart window; the worker gets its budget; and a stop
 * while backing off closes the port. Crashes a request caused are
 * test/slow/supervisor.test.js's.
 */
import assert from 'node:assert/strict'
import { createSupervisor } from '../../lib/supervisor/supervisor.js'
import { getJson } from '../helpers.js'
import { QUICK_BACKOFF, createTestWorker, waitUntil } from '../supervisor-helpers.js'

const MiB = 1024 * 1024

describe('the supervisor (server.js)', function () {
  this.timeout(60000)

  describe('with a worker that dies at birth', function () {
    let worker

    before(function () {
      worker = createTestWorker()
    })
    after(function () {
      worker.remove()
    })

    it('backs off (0, 20, 40, 80, 80 ms) and holds a connection until a worker stays up, which answers it', async function () {
      // six workers boot one after another: seconds each on a busy machine
      this.timeout(120000)
      const supervisor = createSupervisor({ port: 0, memoryLimit: 0, workerScript: worker.script, ...QUICK_BACKOFF })
      const crashes = []
      const restarted = []
      supervisor.on('restarted', function keep (crash) { restarted.push(crash) })
      try {
        const { port, pid } = await supervisor.start()
        let held = null
        supervisor.on('crash', function keep (crash) {
          crashes.push(crash)
          // made while no worker can take it: it waits for the one that stays up
          if (crashes.length === 1) held = getJson(`http://127.0.0.1:${port}/metrics?format=json`)
          // before the restart is scheduled: the fifth crash's successor lives
          if (crashes.length === 5) worker.dieAtBirth(false)
        })
        worker.dieAtBirth(true)
        process.kill(pid, 'SIGKILL')
        await waitUntil(function back () { return restarted.length === 1 }, 90000, 'a worker that stays up')

        assert.deepEqual(crashes.map(function backoff (c) { return c.backoffMs }), [0, 20, 40, 80, 80])
        assert.deepEqual(crashes.map(function count (c) { return c.restarts }), [1, 2, 3, 4, 5])
        assert.deepEqual(crashes.map(function reason (c) { return c.reason }), ['signal', 'exit', 'exit', 'exit', 'exit'])
        assert.deepEqual(crashes.map(function caused (c) { return c.requestCaused }), Array(5).fill(false))
        assert.deepEqual(crashes.map(function route (c) { return c.route }), Array(5).fill(null))
        assert.equal(crashes[0].pid, pid)
        assert.equal(crashes[1].exitCode, 1)
        assert.equal(restarted[0].pid, crashes[4].pid, 'the restart replaces the last worker to die')
        assert.equal(restarted[0].backoffMs, 80)
        assert.ok(restarted[0].restartMs >= 80, `restartMs ${restarted[0].restartMs} includes the backoff`)
        assert.equal(restarted[0].newPid, supervisor.workerPid)
        assert.equal((await held).status, 200)
      } finally {
        worker.dieAtBirth(false)
        await supervisor.stop()
      }
    })

    it('starts the backoff again once a worker has stayed up for the restart window', async function () {
      // four workers boot one after another: seconds each on a busy machine
      this.timeout(120000)
      const supervisor = createSupervisor({ port: 0, memoryLimit: 0, workerScript: worker.script, ...QUICK_BACKOFF, restartWindowMs: 2000 })
      const crashes = []
      const restarted = []
      supervisor.on('crash', function keep (crash) { crashes.push(crash) })
      try {
        const { pid } = await supervisor.start()
        // killed the moment they are ready: far inside the window
        supervisor.on('restarted', function killAgain (crash) {
          restarted.push(crash)
          if (restarted.length === 1) process.kill(crash.newPid, 'SIGKILL')
        })
        process.kill(pid, 'SIGKILL')
        await waitUntil(function twice () { return restarted.length === 2 }, 45000, 'two restarts')
        // up for longer than the window: its death starts a new run
        await new Promise(function pause (resolve) { setTimeout(resolve, 2100) })
        process.kill(restarted[1].newPid, 'SIGKILL')
        await waitUntil(function thrice () { return restarted.length === 3 }, 45000, 'the third restart')
        assert.deepEqual(crashes.map(function backoff (c) { return c.backoffMs }), [0, 20, 0])
        assert.deepEqual(crashes.map(function count (c) { return c.restarts }), [1, 2, 3])
      } finally {
        await supervisor.stop()
      }
    })

    it('hands the worker its budget as app.memoryBudget, unless the app options name one', async function () {
      const cases = [
        [{ memoryLimit: 256 * MiB, app: { unsafeBad: true } }, { unsafeBad: true, memoryBudget: 256 * MiB }],
        [{ memoryLimit: 0 }, { memoryBudget: 0 }],
        [{ memoryLimit: 256 * MiB, app: { memoryBudget: 200 * MiB } }, { memoryBudget: 200 * MiB }]
      ]
      for (const [settings, expected] of cases) {
        const supervisor = createSupervisor({ port: 0, workerScript: worker.script, ...settings })
        try {
          const { pid } = await supervisor.start()
          assert.deepEqual(worker.listenOptions(pid), expected)
        } finally {
          await supervisor.stop()
        }
      }
    })

    it('closes the port when stopped while it backs off, and starts no worker', async function () {
      const supervisor = createSupervisor({ port: 0, memoryLimit: 0, workerScript: worker.script, restartBackoffMs: 60_000, maxRestartBackoffMs: 60_000 })
      const crashes = []
      supervisor.on('crash', function keep (crash) { crashes.push(crash) })
      const { port, pid } = await supervisor.start()
      worker.dieAtBirth(true)
      process.kill(pid, 'SIGKILL')
      await waitUntil(function backingOff () { return crashes.length === 2 }, 20000, 'the second crash')
      worker.dieAtBirth(false)
      assert.equal(crashes[1].backoffMs, 60_000)
      assert.equal(supervisor.workerPid, null)
      await supervisor.stop()
      assert.equal(supervisor.workerPid, null)
      await assert.rejects(getJson(`http://127.0.0.1:${port}/metrics?format=json`), /ECONNREFUSED/, 'stopped: the port is closed')
    })
  })
})
