/**
 * The child's side of `runChildJob` and `startChildService` (lib/experiments/load.js):
 * a script forked to do one job (a load, a sender) or to serve for a while (a sink the
 * senders write to) in a process of its own, so that its memory and CPU are never
 * counted as the server's. Over IPC, a job (`serveChildJob`):
 *
 *   in:  the job (one JSON message); within a run, with the run's key as `runKey`,
 *        which the job never sees: the job runs in the key's scope (lib/limits/run-keys.js),
 *        so the lab's HTTP clients send it on every request
 *   out: { type: 'progress', done, total, ...extra } (as the job reports it: `extra`, an object
 *        of its own figures, rides along),
 *        then { type: 'result', ...what the job resolved to } or { type: 'error', message }
 *
 * and exits; a service (`serveChildService`) sends { type: 'ready', ...what it started }
 * once, and serves until its parent closes the channel. Either exits when its parent goes
 * away, so a crashed server never leaves it working for nobody: on 'disconnect' when its
 * event loop is free, and within PARENT_POLL_MS inside a synchronous pass (a bound's stage),
 * where a watchdog thread sees its parent gone (it was adopted: its ppid changed) and kills it.
 */
import { Worker } from 'node:worker_threads'
import { withRunKey } from '../limits/run-keys.js'

/** How often the watchdog looks at the parent: a child outlives it by about this much. */
export const PARENT_POLL_MS = 20

/**
 * A thread that kills this process once its parent is gone: the main thread may be inside a
 * synchronous pass that no event can interrupt, and a signal from a thread can. Unref'ed, so
 * that it never keeps the process alive.
 */
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

/**
 * Serve one job in this process.
 * @param {string} scriptName for the message printed when started by hand
 * @param {(job: object, progress: (done: number, total: number, extra?: object) => void) => Promise<object>} work
 *   resolves to the members of the result message
 */
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

/**
 * Serve in this process until the parent closes the IPC channel.
 * @param {string} scriptName for the messages printed when started by hand or when `start` fails
 * @param {() => Promise<object>} start sets the service up; resolves to the members of the
 *   ready message (a port, say)
 */
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
