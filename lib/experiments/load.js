// The parent's side of the lab's child processes: fork a project script, hand it a job, relay its progress,
// and make sure it is gone before answering (a load's memory is never the server's). README.md.
import { fork } from 'node:child_process'
import path from 'node:path'
import { PROJECT_ROOT } from '../config/options.js'
import { currentRunKey } from '../limits/run-keys.js'

/** The script forked for each load: the child's side of this conversation. */
const LOAD_PROCESS = path.join(PROJECT_ROOT, 'lib', 'experiments', 'load-process.js')

/** A child that sent its result, or was asked to stop, but lingers is killed after this long. */
const EXIT_GRACE_MS = 2000
const STDERR_KEPT = 4096

/** Run uploads in a forked load process (`fields`: members of each 200 answer to bring back); settles once it exited. */
export function runLoad (job, hooks) {
  return runChildJob(LOAD_PROCESS, job, hooks)
}

/**
 * Run one job in a forked project script that speaks child-job.js's protocol; settles once it exited. Within a
 * run the job carries the run's key over IPC, never in the environment or arguments `ps` shows. `onSpawn` may
 * keep the child to send it messages of its own.
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
 * Fork a long-lived helper and wait for its `{ type: 'ready', ...details }`; aborting `signal` kills it.
 * `stop` resolves once it has exited.
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
 * Fork a project script with IPC and watch it until it exits. Its stderr is read to the end (the last KiB kept
 * for an early exit's message), so a full pipe never stalls it. `exited` never rejects; `stop` closes the IPC
 * channel, kills it after a grace period, and resolves once it has exited.
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
