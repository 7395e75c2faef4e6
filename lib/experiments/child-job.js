// The child's side of runChildJob and startChildService (load.js): a job or a service in a process of its own,
// which exits when its parent goes away. The messages: README.md.
import { Worker } from 'node:worker_threads'
import { withRunKey } from '../limits/run-keys.js'

/** How often the watchdog looks at the parent: a child outlives it by about this much. */
export const PARENT_POLL_MS = 20

/** A thread kills this process once its parent is gone: a signal interrupts a synchronous pass. Unref'ed. */
const WATCHDOG = `
const { workerData } = require('node:worker_threads')
setInterval(function parentGone () {
  if (process.ppid !== workerData.ppid) process.kill(process.pid, 'SIGKILL')
}, workerData.pollMs)
`

function exitWithParent () {
  const workerData = { ppid: process.ppid, pollMs: PARENT_POLL_MS }
  const watchdog = new Worker(WATCHDOG, { eval: true, workerData, stdout: false, stderr: false })
  watchdog.unref()
}

/** Serve one job in this process: `work` resolves to the members of the result message. */
export function serveChildJob (scriptName, work) {
  if (!forkedByTheLab(scriptName)) return
  exitWithParent()
  let started = false
  function onJob (job) {
    // one job per process: a second message is a parent's bug, not more work
    if (started) return
    started = true
    process.off('message', onJob)
    const { task, runKey } = splitJob(job)
    withRunKey(runKey, async function runTask () {
      return work(task, function sendProgress (done, total, extra) {
        process.send({ ...extra, type: 'progress', done, total })
      })
    }).then(function sendResult (value) {
      finish({ ...value, type: 'result' }, 0)
    }, function sendError (err) {
      finish({ type: 'error', message: err.message }, 1)
    })
  }
  process.on('message', onJob)
  // also fired by our own disconnect in finish(): exit() keeps the exitCode set there
  process.once('disconnect', function parentGone () {
    process.exit()
  })
}

/** Serve until the parent closes the IPC channel: `start` resolves to the ready message's members. */
export function serveChildService (scriptName, start) {
  if (!forkedByTheLab(scriptName)) return
  exitWithParent()
  process.once('disconnect', function parentGone () {
    process.exit()
  })
  start().then(function sendReady (details) {
    process.send({ ...details, type: 'ready' })
  }, function failed (err) {
    // the parent reads stderr into its error: it exited before saying it was ready
    process.stderr.write(`${scriptName}: ${err.message}\n`)
    process.exit(1)
  })
}

/** Whether this process has the IPC channel a fork gives it; if not, say so and set exit code 2. */
function forkedByTheLab (scriptName) {
  if (typeof process.send === 'function') return true
  process.stderr.write(`${scriptName} is started by the lab (child_process.fork), not by hand\n`)
  process.exitCode = 2
  return false
}

/** The job as its script expects it, and the run's key beside it (null outside a run). */
function splitJob (job) {
  if (job === null || typeof job !== 'object' || !Object.hasOwn(job, 'runKey')) return { task: job, runKey: null }
  const { runKey, ...task } = job
  return { task, runKey: typeof runKey === 'string' ? runKey : null }
}

function finish (message, code) {
  process.exitCode = code
  // disconnect only once the message is out, or the parent never sees it
  process.send(message, function sent () {
    process.disconnect()
  })
}
