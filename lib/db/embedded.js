// The parent's side of pglite-process.js: fork it, wait until it listens, stop it. Its door (a random
// password and a private socket directory) is made here for each start: README.md.
import { fork } from 'node:child_process'
import crypto from 'node:crypto'
import path from 'node:path'
import fs from 'node:fs'
import os from 'node:os'
import { fileURLToPath } from 'node:url'
import { DEFAULTS } from '../config/options.js'

const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'pglite-process.js')
const PGLITE_VERSION = readPgliteVersion()
/** A fresh in-memory cluster, saved once and loaded later; under the project's data dir, shared by every app. */
const TEMPLATE = path.join(DEFAULTS.dataDir, `pglite-${PGLITE_VERSION}-initdb.tar.gz`)
const STDERR_KEPT = 4096
const STOP_GRACE_MS = 10_000
/** The embedded server's only user and database. */
const USER = 'postgres'
const DATABASE = 'postgres'
/** `pg` reaches a Unix socket as `<host>/.s.PGSQL.<port>`: the port only names the file. */
const SOCKET_PORT = 5432
/** The shortest limit on a Unix socket's path (macOS: 104 bytes with the terminating NUL). */
const MAX_SOCKET_PATH = 103

/** `unix` wherever `pg` can use a Unix socket, `tcp` (loopback) on Windows. */
const DEFAULT_TRANSPORT = process.platform === 'win32' ? 'tcp' : 'unix'

/**
 * Start PGlite in a child process (`dir`: a directory or 'memory://'). Its `connection` holds the `pg` options,
 * password included: never to be shown to a client.
 */
export function startEmbedded ({ dir, timeoutMs, transport = DEFAULT_TRANSPORT }) {
  if (transport !== 'unix' && transport !== 'tcp') throw new TypeError(`transport must be "unix" or "tcp", got ${transport}`)
  const password = crypto.randomBytes(32).toString('base64url')
  const socketDir = transport === 'unix' ? makeSocketDir() : null
  if (socketDir === null) transport = 'tcp'
  const socketPath = socketDir === null ? undefined : path.join(socketDir, `.s.PGSQL.${SOCKET_PORT}`)
  return new Promise(function waitForReady (resolve, reject) {
    let child
    try {
      child = fork(SCRIPT, [], {
        // not the server's flags: an --inspect port or a heap limit is not the database's
        execArgv: [],
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
        serialization: 'json'
      })
    } catch (err) {
      removeSocketDir()
      throw err
    }
    let stderr = ''
    const timer = setTimeout(function tooSlow () {
      fail(new Error(`PGlite did not start within ${timeoutMs} ms`))
      child.kill('SIGKILL')
    }, timeoutMs)

    function onStderr (chunk) {
      stderr = (stderr + chunk).slice(-STDERR_KEPT)
    }
    function onMessage (message) {
      if (message?.type === 'ready' && (socketDir !== null || Number.isInteger(message.port))) {
        cleanup()
        // the lab's server, not this child, decides when the lab may exit
        child.unref()
        child.channel?.unref()
        child.stderr.unref()
        resolve({
          pid: child.pid,
          transport,
          connection: Object.freeze(socketDir === null
            ? { host: '127.0.0.1', port: message.port, user: USER, password, database: DATABASE }
            : { host: socketDir, port: SOCKET_PORT, user: USER, password, database: DATABASE }),
          child,
          stderr: function readStderr () { return stderr },
          stop: function stopEmbedded () { return stopChild(child) }
        })
      } else if (message?.type === 'error') {
        fail(new Error(`PGlite could not start: ${message.message}`))
      }
    }
    function onError (err) {
      removeSocketDir()
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
    function removeSocketDir () {
      if (socketDir !== null) fs.rmSync(socketDir, { recursive: true, force: true })
    }
    child.stderr.setEncoding('utf8')
    // kept for the lifetime of the child: its last words explain a crash
    child.stderr.on('data', onStderr)
    child.on('message', onMessage)
    child.on('error', onError)
    child.on('exit', onExit)
    // however it ends (stopped, crashed, killed), the door goes with it
    child.once('exit', removeSocketDir)
    child.send({ dir, template: TEMPLATE, password, socketPath })
  })
}

/** A new directory only this OS user may enter, for one socket; null when its path is too long for one. */
function makeSocketDir () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-pglite-'))
  // mkdtemp makes it 0700 already; said again, whatever the platform's default
  fs.chmodSync(dir, 0o700)
  if (Buffer.byteLength(path.join(dir, `.s.PGSQL.${SOCKET_PORT}`)) > MAX_SOCKET_PATH) {
    fs.rmSync(dir, { recursive: true, force: true })
    return null
  }
  return dir
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
