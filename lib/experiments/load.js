/**
 * The parent's side of `lib/experiments/load-process.js`: fork it, hand it a job,
 * relay its progress, and make sure it is gone before answering. The load
 * runs in its own process so that its memory is never counted as the
 * server's.
 */
import { fork } from 'node:child_process'
import path from 'node:path'
import { PROJECT_ROOT } from '../config/options.js'
import { currentRunKey } from '../limits/run-keys.js'

/** The script forked for each load: the child's side of this conversation. */
export const LOAD_PROCESS = path.join(PROJECT_ROOT, 'lib', 'experiments', 'load-process.js')

/** A child that sent its result but lingers is killed after this long. */
const EXIT_GRACE_MS = 2000
const STDERR_KEPT = 4096

/**
 * Run uploads in a forked load process.
 * Settles only after the process has exited (killed, on abort), so no
 * caller ever leaves one behind.
 * @param {{ url: string, file: string, concurrency: number, requests: number, headers?: object, fields?: string[] }} job
 *   `fields`: members of each 200 answer to bring back (default ['summary'])
 * @param {{ signal?: AbortSignal, onSpawn?: (child: import('node:child_process').ChildProcess) => void,
 *   onProgress?: (progress: { done: number, total: number }) => void }} [hooks]
 * @returns {Promise<{ results: Array<{ status: number, ms: number, summary?: object, errorType?: string }>, wallMs: number }>}
 */
export function runLoad (job, hooks) {
  return runChildJob(LOAD_PROCESS, job, hooks)
}

/**
 * Run one job in a forked script that speaks the protocol of
 * `lib/experiments/child-job.js`: the job in, `progress` messages, then one `result`
 * (everything but its `type` is what this resolves to) or `error`.
 * Settles only after the process has exited (killed, on abort). Called within a
 * run, the job carries the run's key (`runKey`), over IPC, never in the environment
 * or the arguments another user's `ps` shows.
 * @param {string} script a file of the project, never one a client named
 * @param {object} job sent as JSON over IPC
 * @param {{ signal?: AbortSignal, onSpawn?: (child: import('node:child_process').ChildProcess) => void,
 *   onProgress?: (progress: { done: number, total: number }) => void }} [hooks]
 * @returns {Promise<object>}
 */
export function runChildJob (script, job, { signal, onSpawn, onProgress } = {}) {
  if (signal?.aborted) return Promise.reject(signal.reason)
  return new Promise(function jobInChild (resolve, reject) {
    const child = fork(script, [], {
      // not the server's flags: an --inspect port or heap size is not the load's
      execArgv: [],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'json'
    })
    let stderr = ''
    let outcome = null
    let lingerTimer = null
    let settled = false

    function onMessage (message) {
      if (message?.type === 'progress') {
        if (!onProgress) return
        try {
          onProgress({ done: message.done, total: message.total })
        } catch (err) {
          // thrown from an event listener it would take the whole server down
          outcome = { error: err }
          child.kill('SIGKILL')
        }
      } else if (message?.type === 'result' && outcome === null) {
        const value = { ...message }
        delete value.type
        outcome = { value }
        lingerTimer = setTimeout(function killLingering () { child.kill('SIGKILL') }, EXIT_GRACE_MS)
      } else if (message?.type === 'error' && outcome === null) {
        outcome = { error: new Error(`${path.basename(script)}: ${message.message}`) }
      }
    }
    function onStderr (chunk) {
      stderr = (stderr + chunk).slice(-STDERR_KEPT)
    }
    function onAbort () {
      child.kill('SIGKILL')
    }
    function onError (err) {
      // a fork that never started emits no 'close' to wait for
      outcome ??= { error: err }
      if (child.pid === undefined) settle()
    }
    function onClose (code, killedBy) {
      settle(code, killedBy)
    }
    function cleanup () {
      clearTimeout(lingerTimer)
      signal?.removeEventListener('abort', onAbort)
      child.off('message', onMessage)
      child.off('error', onError)
      child.off('close', onClose)
      child.stderr.off('data', onStderr)
    }
    function settle (code, killedBy) {
      if (settled) return
      settled = true
      cleanup()
      if (signal?.aborted) reject(signal.reason)
      else if (outcome?.value) resolve(outcome.value)
      else if (outcome?.error) reject(outcome.error)
      else reject(new Error(`${path.basename(script)} exited (${killedBy ?? code}) before its result${stderr ? `: ${stderr.trim()}` : ''}`))
    }

    child.on('message', onMessage)
    child.on('error', onError)
    child.on('close', onClose)
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', onStderr)
    signal?.addEventListener('abort', onAbort, { once: true })
    if (child.pid !== undefined && onSpawn) onSpawn(child)
    const runKey = currentRunKey()
    child.send(runKey === null ? job : { ...job, runKey })
  })
}
