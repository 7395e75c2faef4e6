/**
 * A child job exits soon after its parent dies, even inside a synchronous pass
 * (lib/experiments/child-job.js): its parent is killed with SIGKILL while the child spins in a
 * pass of 30 s, and the child is gone within a bound far under the pass, generous for a busy
 * 2-core machine (the watchdog looks every PARENT_POLL_MS).
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { PARENT_POLL_MS } from '../../lib/experiments/child-job.js'

const PARENT = new URL('../fixtures/busy-child-parent.js', import.meta.url).pathname
const PASS_MS = 30_000
/** Far past PARENT_POLL_MS, far under the pass: a child left spinning would take PASS_MS. */
const GONE_WITHIN_MS = 2000

/** Whether `pid` still runs: a zombie waiting for its reaper has stopped. */
function running (pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch (err) {
    if (err.code !== 'ENOENT') throw err
    return false
  }
}

/** Start the parent; resolves to it and its child's pid once the child's pass has begun. */
function parentWithBusyChild () {
  const parent = spawn(process.execPath, [PARENT, String(PASS_MS)], { stdio: ['ignore', 'pipe', 'inherit'] })
  return new Promise(function childStarted (resolve, reject) {
    let out = ''
    parent.stdout.on('data', function read (chunk) {
      out += chunk
      if (out.includes('\n')) resolve({ parent, child: Number(out.trim()) })
    })
    parent.once('exit', function early (code) { reject(new Error(`the parent exited (${code}) before its child began`)) })
  })
}

describe('lib/experiments/child-job.js: a child job without its parent', function () {
  this.timeout(60_000)

  it(`is gone within ${GONE_WITHIN_MS} ms of its parent's SIGKILL, inside a synchronous pass of ${PASS_MS / 1000} s`, async function () {
    assert.ok(fs.existsSync('/proc/self/stat'), 'this spec reads /proc')
    for (let round = 0; round < 3; round++) {
      const { parent, child } = await parentWithBusyChild()
      // well inside the pass
      await sleep(200)
      assert.ok(running(child), 'the child is in its pass')
      const killed = Date.now()
      parent.kill('SIGKILL')
      while (running(child) && Date.now() - killed < PASS_MS) await sleep(5)
      const ms = Date.now() - killed
      if (running(child)) process.kill(child, 'SIGKILL')
      assert.ok(ms < GONE_WITHIN_MS, `the child outlived its parent by ${ms} ms (its watchdog looks every ${PARENT_POLL_MS} ms)`)
    }
  })
})
