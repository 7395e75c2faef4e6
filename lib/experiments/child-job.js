/**
 * The child's side of `runChildJob` (lib/experiments/load.js): a script
 * forked to do one job (a load, a sender) in a process of its own, so that
 * its memory and CPU are never counted as the server's. Over IPC:
 *
 *   in:  the job (one JSON message); within a run, with the run's key as `runKey`,
 *        which the job never sees: the job runs in the key's scope (lib/limits/run-keys.js),
 *        so the lab's HTTP clients send it on every request
 *   out: { type: 'progress', done, total } (as the job reports it),
 *        then { type: 'result', ...what the job resolved to } or { type: 'error', message }
 *
 * and exits. It also exits the moment its parent goes away (the IPC channel
 * closes), so a crashed server never leaves it working for nobody.
 */

import { withRunKey } from '../limits/run-keys.js'

/**
 * Serve one job in this process.
 * @param {string} scriptName for the message printed when started by hand
 * @param {(job: object, progress: (done: number, total: number) => void) => Promise<object>} work
 *   resolves to the members of the result message
 */
export function serveChildJob (scriptName, work) {
  if (typeof process.send !== 'function') {
    process.stderr.write(`${scriptName} is started by the lab (child_process.fork), not by hand\n`)
    process.exitCode = 2
    return
  }
  let started = false
  function onJob (job) {
    // one job per process: a second message is a parent's bug, not more work
    if (started) return
    started = true
    process.off('message', onJob)
    const { task, runKey } = splitJob(job)
    withRunKey(runKey, async function runTask () {
      return work(task, function sendProgress (done, total) {
        process.send({ type: 'progress', done, total })
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
