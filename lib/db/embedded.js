/**
 * The parent's side of `lib/db/pglite-process.js`: fork it, wait until it
 * listens, and stop it. Whoever calls `startEmbedded` owns the process and
 * calls `stop()`; the process also ends by itself when its parent does.
 */
import { fork } from 'node:child_process'
import path from 'node:path'
import fs from 'node:fs'
import { fileURLToPath } from 'node:url'
import { DEFAULTS } from '../options.js'

const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'pglite-process.js')
const PGLITE_VERSION = readPgliteVersion()
/**
 * A fresh in-memory cluster, saved once and loaded on later starts (see
 * pglite-process.js). Under the project's data directory, not the app's: tests
 * give every app a temporary one, and the cache is for all of them.
 */
const TEMPLATE = path.join(DEFAULTS.dataDir, `pglite-${PGLITE_VERSION}-initdb.tar.gz`)
const STDERR_KEPT = 4096
const STOP_GRACE_MS = 10_000

/**
 * Start PGlite in a child process.
 * @param {{ dir: string, timeoutMs: number }} settings `dir`: a directory or 'memory://'
 * @returns {Promise<{ pid: number, port: number, child: import('node:child_process').ChildProcess,
 *   stderr: () => string, stop: () => Promise<void> }>}
 */
export function startEmbedded ({ dir, timeoutMs }) {
  return new Promise(function waitForReady (resolve, reject) {
    const child = fork(SCRIPT, [], {
      // not the server's flags: an --inspect port or a heap limit is not the database's
      execArgv: [],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'json'
    })
    let stderr = ''
    const timer = setTimeout(function tooSlow () {
      fail(new Error(`PGlite did not start within ${timeoutMs} ms`))
      child.kill('SIGKILL')
    }, timeoutMs)

    function onStderr (chunk) {
      stderr = (stderr + chunk).slice(-STDERR_KEPT)
    }
    function onMessage (message) {
      if (message?.type === 'ready' && Number.isInteger(message.port)) {
        cleanup()
        // the lab's server, not this child, decides when the lab may exit
        child.unref()
        child.channel?.unref()
        child.stderr.unref()
        resolve({
          pid: child.pid,
          port: message.port,
          child,
          stderr: function readStderr () { return stderr },
          stop: function stopEmbedded () { return stopChild(child) }
        })
      } else if (message?.type === 'error') {
        fail(new Error(`PGlite could not start: ${message.message}`))
      }
    }
    function onError (err) {
      fail(err)
    }
    function onExit (code, signal) {
      fail(new Error(`PGlite exited (${signal ?? code}) before it listened${stderr ? `: ${stderr.trim()}` : ''}`))
    }
    function fail (err) {
      cleanup()
      reject(err)
    }
    function cleanup () {
      clearTimeout(timer)
      child.off('message', onMessage)
      child.off('error', onError)
      child.off('exit', onExit)
    }
    child.stderr.setEncoding('utf8')
    // kept for the lifetime of the child: its last words explain a crash
    child.stderr.on('data', onStderr)
    child.on('message', onMessage)
    child.on('error', onError)
    child.on('exit', onExit)
    child.send({ dir, template: TEMPLATE })
  })
}

function readPgliteVersion () {
  const entry = fileURLToPath(import.meta.resolve('@electric-sql/pglite'))
  let dir = path.dirname(entry)
  // up from dist/ to the package's own package.json
  while (!fs.existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir)
  return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version
}

function stopChild (child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise(function waitForExit (resolve) {
    // PGlite closes its files on SIGTERM; one that hangs is killed rather than waited on forever
    const timer = setTimeout(function forceKill () { child.kill('SIGKILL') }, STOP_GRACE_MS)
    child.once('exit', function exited () {
      clearTimeout(timer)
      resolve()
    })
    child.kill('SIGTERM')
  })
}
