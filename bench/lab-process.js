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

/**
 * Start `server.js --port 0` with extra flags and wait until it listens.
 * @param {string[]} [flags]
 * @returns {Promise<{ pid: number, url: string, stop: () => Promise<void>, output: () => string }>}
 */
export function startLabProcess (flags = []) {
  const child = spawn(process.execPath, [SERVER, '--port', '0', ...flags], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  return new Promise(function waitForListening (resolve, reject) {
    function onOutput (chunk) {
      output += chunk
      const match = LISTENING.exec(output)
      if (match) {
        cleanup()
        resolve({
          pid: child.pid,
          url: match[1],
          output: function readOutput () { return output },
          stop: function stopLab () { return stopChild(child) }
        })
      }
    }
    function onExit (code, signal) {
      cleanup()
      reject(new Error(`lab server exited (${signal ?? code}) before listening:\n${output}`))
    }
    function cleanup () {
      child.stdout.removeListener('data', onOutput)
      child.removeListener('exit', onExit)
    }
    child.stdout.setEncoding('utf8')
    child.stderr.setEncoding('utf8')
    child.stdout.on('data', onOutput)
    child.stderr.on('data', function keepErrors (chunk) { output += chunk })
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
