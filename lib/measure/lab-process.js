// A fresh lab server in its own process: one measurement's garbage cannot inflate the next, and the load's
// memory is never the server's.
import { spawn } from 'node:child_process'
import path from 'node:path'
import { PROJECT_ROOT } from '../config/options.js'

const SERVER = path.join(PROJECT_ROOT, 'server.js')
const LISTENING = /streamlab listening on (http:\/\/\S+)/
const WORKER_PID = /worker pid (\d+)/g

/**
 * Start `server.js --port 0` with `flags` and wait until it listens; `pid` is the (latest) worker's. Without a
 * `--memory-limit` flag it runs with none: a bench measures a buffered load past 1 GiB rather than kill it.
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
 * Run `node ...args` and wait for its "streamlab listening on http://..." line. `stopSignal` is what stop() sends
 * first, SIGKILL after `graceMs`; a process not listening by `timeoutMs` (0: no limit) is killed and it rejects.
 */
export function startListeningProcess (args, settings = {}) {
  const { ipc = false, stopSignal = 'SIGTERM', graceMs = 3000, timeoutMs = 0, env = process.env } = settings
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
