/**
 * The parent's side of the lab's child processes: fork one of the project's
 * scripts, hand it a job, relay its progress, and make sure it is gone before
 * answering. `forkChild` is the plumbing every such process shares (the fork,
 * its stderr, the kill on abort, the wait for its exit); `runChildJob` speaks
 * the job protocol of `lib/experiments/child-job.js` over it, and `runLoad`
 * runs `lib/experiments/load-process.js`, the upload load. A load runs in its
 * own process so that its memory is never counted as the server's.
 */
import { fork } from 'node:child_process'
import path from 'node:path'
import { PROJECT_ROOT } from '../config/options.js'
import { currentRunKey } from '../limits/run-keys.js'

/** The script forked for each load: the child's side of this conversation. */
const LOAD_PROCESS = path.join(PROJECT_ROOT, 'lib', 'experiments', 'load-process.js')

/** A child that sent its result, or was asked to stop, but lingers is killed after this long. */
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
 */
export function runLoad (job, hooks) {
  return runChildJob(LOAD_PROCESS, job, hooks)
}

/**
 * Run one job in a forked script that speaks the protocol of
 * `lib/experiments/child-job.js`: the job in, `progress` messages (relayed with whatever
 * figures of its own the job sent beside `done` and `total`), then one `result`
 * (everything but its `type` is what this resolves to) or `error`.
 * Settles only after the process has exited (killed, on abort). Called within a
 * run, the job carries the run's key (`runKey`), over IPC, never in the environment
 * or the arguments another user's `ps` shows.
 * @param {string} script a file of the project, never one a client named
 * @param {object} job sent as JSON over IPC
 * @param {{ signal?: AbortSignal, onSpawn?: (child: import('node:child_process').ChildProcess) => void,
 *   onProgress?: (progress: { done: number, total: number }) => void }} [hooks] `onSpawn` may keep
 *   the child to send it messages of its own while it works (the job's script listens for them)
 */
export async function runChildJob (script, job, { signal, onSpawn, onProgress } = {}) {
  signal?.throwIfAborted()
  let outcome = null
  const worker = forkChild(script, { signal, onSpawn, onMessage: onJobMessage })
  function onJobMessage (message) {
    if (message?.type === 'progress') {
      if (!onProgress) return
      const progress = { ...message }
      delete progress.type
      try {
        onProgress(progress)
      } catch (err) {
        // thrown from an event listener it would take the whole server down
        outcome = { error: err }
        worker.child.kill('SIGKILL')
      }
    } else if (message?.type === 'result' && outcome === null) {
      const value = { ...message }
      delete value.type
      outcome = { value }
      worker.killAfter(EXIT_GRACE_MS)
    } else if (message?.type === 'error' && outcome === null) {
      outcome = { error: new Error(`${path.basename(script)}: ${message.message}`) }
    }
  }
  const runKey = currentRunKey()
  worker.child.send(runKey === null ? job : { ...job, runKey })
  const exit = await worker.exited
  if (signal?.aborted) throw signal.reason
  if (outcome?.value) return outcome.value
  throw outcome?.error ?? exit.error ?? exitedEarly(script, exit, 'its result')
}

/**
 * Fork a long-lived helper (a server the measured clients talk to) and wait
 * until it says it is ready with `{ type: 'ready', ...details }` over IPC.
 * Aborting `signal` kills it, whether it is ready yet or not.
 * @param {string} script a file of the project, never one a client named
 * @returns {Promise<{ details: object, pid: number, stop: () => Promise<void> }>}
 *   `details`: the ready message but its `type`; `stop` resolves once the helper has exited
 */
export async function startChildService (script, { signal, onSpawn } = {}) {
  signal?.throwIfAborted()
  let ready
  const announced = new Promise(function waitForReady (resolve) { ready = resolve })
  const service = forkChild(script, {
    signal,
    onSpawn,
    onMessage: function onReady (message) {
      if (message?.type !== 'ready') return
      const details = { ...message }
      delete details.type
      ready(details)
    }
  })
  const first = await Promise.race([announced, service.exited.then(function exitedFirst (exit) { return { exit } })])
  if (first.exit !== undefined) {
    if (signal?.aborted) throw signal.reason
    throw first.exit.error ?? exitedEarly(script, first.exit, 'saying it was ready')
  }
  return { details: first, pid: service.child.pid, stop: service.stop }
}

/**
 * Fork one of the project's scripts with IPC and watch it until it exits: the
 * plumbing `runChildJob` and `startChildService` share. Its stderr is read to
 * the end (the last few KiB kept, for the message of an early exit), so a
 * full pipe never stalls it; every listener added here is removed when it exits.
 * @param {string} script a file of the project, never one a client named
 * @param {{ signal?: AbortSignal, onSpawn?: (child: import('node:child_process').ChildProcess) => void,
 *   onMessage?: (message: unknown) => void }} [hooks]
 * @returns {{ child: import('node:child_process').ChildProcess,
 *   exited: Promise<{ code: number|null, killedBy: string|null, stderr: string, error: Error|null }>,
 *   killAfter: (ms: number) => void, stop: () => Promise<void> }}
 *   `exited` never rejects: `error` is what the child process emitted ('error'), if anything;
 *   `stop` closes the IPC channel (every script of the lab exits when it closes), kills it
 *   if it is still there after a grace period, and resolves once it has exited
 */
function forkChild (script, { signal, onSpawn, onMessage } = {}) {
  const child = fork(script, [], {
    // not the server's flags: an --inspect port or heap size is not the child's
    execArgv: [],
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    serialization: 'json'
  })
  let stderr = ''
  let error = null
  let killTimer = null
  let exitedAlready = false
  let onExit
  const exited = new Promise(function waitForExit (resolve) { onExit = resolve })

  function onStderr (chunk) {
    stderr = (stderr + chunk).slice(-STDERR_KEPT)
  }
  function onAbort () {
    child.kill('SIGKILL')
  }
  function onError (err) {
    error ??= err
    // a fork that never started emits no 'close' to wait for
    if (child.pid === undefined) finish(null, null)
  }
  function onClose (code, killedBy) {
    finish(code, killedBy)
  }
  function cleanup () {
    clearTimeout(killTimer)
    signal?.removeEventListener('abort', onAbort)
    if (onMessage) child.off('message', onMessage)
    child.off('error', onError)
    child.off('close', onClose)
    child.off('exit', onClose)
    child.stderr.off('data', onStderr)
  }
  function finish (code, killedBy) {
    if (exitedAlready) return
    exitedAlready = true
    cleanup()
    onExit({ code, killedBy, stderr: stderr.trim(), error })
  }
  function killAfter (ms) {
    if (exitedAlready || killTimer !== null) return
    killTimer = setTimeout(function killLingering () { child.kill('SIGKILL') }, ms)
  }
  async function stop () {
    if (!exitedAlready && child.exitCode === null && child.signalCode === null) {
      killAfter(EXIT_GRACE_MS)
      // Node emits no 'close' for a child whose channel the parent closed: its 'exit' is the end
      child.once('exit', onClose)
      if (child.connected) child.disconnect()
      else child.kill('SIGTERM')
    }
    await exited
  }

  if (onMessage) child.on('message', onMessage)
  child.on('error', onError)
  child.on('close', onClose)
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', onStderr)
  signal?.addEventListener('abort', onAbort, { once: true })
  if (child.pid !== undefined && onSpawn) onSpawn(child)
  return { child, exited, killAfter, stop }
}

/** The error of a child that exited before it said what it was started to say. */
function exitedEarly (script, { code, killedBy, stderr }, what) {
  return new Error(`${path.basename(script)} exited (${killedBy ?? code}) before ${what}${stderr ? `: ${stderr}` : ''}`)
}
