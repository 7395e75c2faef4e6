/**
 * A fresh lab server in its own process, so that garbage left by one
 * measurement cannot inflate the next, and the load generator's memory is
 * never counted as the server's.
 */
import { spawn } from 'node:child_process'
import path from 'node:path'
import { PROJECT_ROOT } from '../lib/options.js'

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
 * @returns {Promise<{ pid: number, supervisorPid: number, url: string, stop: () => Promise<void>,
 *   output: () => string, exited: Promise<{ code: number|null, signal: string|null }> }>}
 */
export function startLabProcess (flags = []) {
  const budgetGiven = flags.some(function namesBudget (flag) { return /^--(no-)?memory-limit(=|$)/.test(flag) })
  const args = [SERVER, '--port', '0', ...(budgetGiven ? [] : ['--memory-limit=0']), ...flags]
  const child = spawn(process.execPath, args, {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe']
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
  return new Promise(function waitForListening (resolve, reject) {
    function onOutput () {
      const match = LISTENING.exec(output)
      if (!match) return
      cleanup()
      resolve({
        get pid () {
          const pids = [...output.matchAll(WORKER_PID)]
          return pids.length > 0 ? Number(pids[pids.length - 1][1]) : child.pid
        },
        supervisorPid: child.pid,
        url: match[1],
        exited,
        output: function readOutput () { return output },
        stop: function stopLab () { return stopChild(child) }
      })
    }
    function onExit (code, signal) {
      cleanup()
      reject(new Error(`lab server exited (${signal ?? code}) before listening:\n${output}`))
    }
    function cleanup () {
      child.stdout.removeListener('data', onOutput)
      child.removeListener('exit', onExit)
    }
    child.stdout.on('data', onOutput)
    child.on('exit', onExit)
  })
}

function stopChild (child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise(function waitForExit (resolve) {
    const timer = setTimeout(function forceKill () { child.kill('SIGKILL') }, 3000)
    child.once('exit', function exited () {
      clearTimeout(timer)
      resolve()
    })
    child.kill('SIGTERM')
  })
}
