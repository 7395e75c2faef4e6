/**
 * A fresh lab server in its own process, so that garbage left by one
 * measurement cannot inflate the next, and the load generator's memory is
 * never counted as the server's.
 */
import { spawn } from 'node:child_process'
import path from 'node:path'
import { PROJECT_ROOT } from '../config/options.js'

const SERVER = path.join(PROJECT_ROOT, 'server.js')
const LISTENING = /streamlab listening on (http:\/\/\S+)/
const WORKER_PID = /worker pid (\d+)/g

/**
 * Start `server.js --port 0` with extra flags and wait until it listens.
 * server.js is a supervisor that runs the lab in a worker process: `pid` is the worker's (the
 * process whose memory is the lab's), the latest one if the supervisor restarted it.
 * Benches measure memory rather than enforce a budget, so unless `flags` name one
 * (`--memory-limit ...`), the lab runs without (`--memory-limit=0`): a buffered load that
 * passes 1 GiB on purpose must be measured, not killed.
 * @param {string[]} [flags] server.js flags
 * @param {{ env?: NodeJS.ProcessEnv }} [settings] the lab's environment (default: this process's)
 * @returns {Promise<{ pid: number, supervisorPid: number, url: string, stop: () => Promise<void>,
 *   output: () => string, exited: Promise<{ code: number|null, signal: string|null }> }>}
 */
export async function startLabProcess (flags = [], { env = process.env } = {}) {
  const budgetGiven = flags.some(function namesBudget (flag) { return /^--(no-)?memory-limit(=|$)/.test(flag) })
  const lab = await startListeningProcess([SERVER, '--port', '0', ...(budgetGiven ? [] : ['--memory-limit=0']), ...flags], { env })
  return {
    get pid () {
      const pids = [...lab.output().matchAll(WORKER_PID)]
      return pids.length > 0 ? Number(pids[pids.length - 1][1]) : lab.child.pid
    },
    supervisorPid: lab.child.pid,
    url: lab.url,
    exited: lab.exited,
    output: lab.output,
    stop: async function stopLab () { await lab.stop() }
  }
}

/**
 * Run `node ...args` and wait for its "streamlab listening on http://..." line: server.js,
 * or a single-process lab such as scripts/profile/server.js.
 * @param {string[]} args what follows `node`: Node's own flags, the script, its flags
 * @param {{ ipc?: boolean, stopSignal?: NodeJS.Signals, graceMs?: number, timeoutMs?: number, env?: NodeJS.ProcessEnv }} [settings] `ipc`:
 *   an IPC channel to the child; `stopSignal` (SIGTERM): what stop() sends first, SIGKILL after `graceMs`
 *   (3000); `timeoutMs`: a process not listening by then is killed and the promise rejects (0: no limit)
 * @returns {Promise<{ child: import('node:child_process').ChildProcess, url: string, output: () => string,
 *   exited: Promise<{ code: number|null, signal: string|null }>,
 *   stop: () => Promise<{ code: number|null, signal: string|null, killed: boolean }> }>}
 */
export function startListeningProcess (args, { ipc = false, stopSignal = 'SIGTERM', graceMs = 3000, timeoutMs = 0, env = process.env } = {}) {
  const child = spawn(process.execPath, args, {
    cwd: PROJECT_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe', ...(ipc ? ['ipc'] : [])]
  })
  let output = ''
  const exited = new Promise(function waitForExit (resolve) {
    child.once('exit', function onExit (code, signal) { resolve({ code, signal }) })
  })
  // kept for as long as the process runs: restarts are reported on stdout too
  function keepOutput (chunk) { output += chunk }
  child.stdout.setEncoding('utf8')
  child.stderr.setEncoding('utf8')
  child.stdout.on('data', keepOutput)
  child.stderr.on('data', keepOutput)
  const script = path.basename(args.find(function script (a) { return !a.startsWith('-') }) ?? 'node')
  return new Promise(function waitForListening (resolve, reject) {
    const timer = timeoutMs > 0
      ? setTimeout(function neverListened () {
        cleanup()
        child.kill('SIGKILL')
        reject(new Error(`${script} did not listen within ${timeoutMs / 1000} s:\n${output.slice(-2000)}`))
      }, timeoutMs)
      : null
    function onOutput () {
      const match = LISTENING.exec(output)
      if (!match) return
      cleanup()
      resolve({
        child,
        url: match[1],
        exited,
        output: function readOutput () { return output },
        stop: function stop () { return stopChild(child, exited, stopSignal, graceMs) }
      })
    }
    function onExit (code, signal) {
      cleanup()
      reject(new Error(`${script} exited (${signal ?? code}) before listening:\n${output}`))
    }
    function cleanup () {
      if (timer) clearTimeout(timer)
      child.stdout.removeListener('data', onOutput)
      child.removeListener('exit', onExit)
    }
    child.stdout.on('data', onOutput)
    child.on('exit', onExit)
  })
}

/** `signal` first (profilers write their files on SIGINT), SIGKILL only if the process hangs. */
async function stopChild (child, exited, signal, graceMs) {
  let killed = false
  if (child.exitCode === null && child.signalCode === null) {
    const timer = setTimeout(function forceKill () {
      killed = true
      child.kill('SIGKILL')
    }, graceMs)
    child.kill(signal)
    await exited
    clearTimeout(timer)
  }
  const { code, signal: endSignal } = await exited
  return { code, signal: endSignal, killed }
}
