/**
 * Resilience (grader/checks/resilience.js): "nothing left pending" reads
 * the student's process from outside (its CPU time, the connections it
 * holds, the grader's unanswered requests), waits for work still going on
 * for as long as the handler's own measured speed says the bytes it
 * received take (with a margin and a floor), and fails only for work still
 * going on after that.
 *
 * Two handlers that hang on to aborted uploads: one works on what arrived
 * at half a MB a second of CPU and then ends, seconds after the last
 * client hung up (test/fixtures/resilience/slow-but-ends.js); one polls for
 * a body's end that never comes (test/fixtures/resilience/polls-for-end.js).
 */
import assert from 'node:assert/strict'
import { formatCard, grade } from '../../grader/index.js'
import { PENDING_WAIT, pendingWait } from '../../grader/checks/settings.js'
import { procAvailable } from '../../lib/util/platform.js'

const SETTINGS = Object.freeze({ concurrencyBytes: 4e6, aborts: 5, requestMs: 15000 })

describe('resilience: nothing left pending', function () {
  describe('how long it waits', function () {
    it('waits the margin times what the handler\'s speed needs for the bytes it received', function () {
      // 40 MB at 2 MB/s is 20 s of work
      assert.equal(pendingWait({ MBps: 2, receivedBytes: 40e6 }).ms, PENDING_WAIT.MARGIN * 20_000)
    })

    it('waits at least the floor and at most the ceiling', function () {
      assert.equal(pendingWait({ MBps: 1000, receivedBytes: 1e6 }).ms, PENDING_WAIT.FLOOR_MS)
      assert.equal(pendingWait({ MBps: 0.01, receivedBytes: 100e6 }).ms, PENDING_WAIT.CEILING_MS)
    })

    it('waits the ceiling when the speed was not measured, and says so', function () {
      const wait = pendingWait({ MBps: null, receivedBytes: 1e6 })
      assert.equal(wait.ms, PENDING_WAIT.CEILING_MS)
      assert.match(wait.basis, /not measured/)
      assert.match(pendingWait(undefined).basis, /not measured/)
    })
  })

  describe('graded', function () {
    const cards = {}

    before(async function gradeBoth () {
      this.timeout(180_000)
      const [slow, never] = await Promise.all([
        grade('test/fixtures/resilience/slow-but-ends.js', { preset: 'quick', settings: SETTINGS, areas: ['resilience'] }),
        grade('test/fixtures/resilience/polls-for-end.js', { preset: 'quick', settings: SETTINGS, areas: ['resilience'] })
      ])
      Object.assign(cards, { slow, never })
    })

    function pending (card) {
      return card.checks.find(function named (c) { return c.name === 'nothing left pending' })
    }

    it('passes a slow handler whose work ends seconds after the last client hung up', function () {
      if (!procAvailable()) this.skip() // its CPU time is read from /proc/<pid>/stat
      const check = pending(cards.slow)
      assert.equal(cards.slow.passed, true, formatCard(cards.slow))
      // it was still working on what arrived when the check began, and the check waited for it
      assert.ok(check.details.cpuMsAfterHangUps > 0, JSON.stringify(check.details))
      assert.ok(check.details.waitedMs > 500 && check.details.waitedMs < check.details.waitMs, JSON.stringify(check.details))
      assert.match(check.figure, /^idle within [\d.]+ s \([\d.]+ s of CPU on what the aborted uploads delivered\), 0 connections held, 0 requests unanswered$/)
    })

    it('fails a handler whose work never ends, after the wait its speed allows, naming the cause', function () {
      const check = pending(cards.never)
      assert.equal(check.pass, false, formatCard(cards.never))
      assert.equal(check.details.busy, true, JSON.stringify(check.details))
      assert.ok(check.details.waitedMs >= check.details.waitMs, JSON.stringify(check.details))
      assert.match(check.figure, /^still working [\d.]+ s after the last hang-up/)
      assert.match(check.reason, /at the handler's measured [\d.]+ MB\/s/)
      assert.match(check.hint, /polls for the body's end/)
    })
  })
})
