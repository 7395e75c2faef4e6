// The embedded database in a process of its own: PGlite behind pglite-socket's wire-protocol server, with a
// SCRAM password in front; the lab talks to it with pg. Why a process, the door, its messages: README.md.
import fs from 'node:fs'
import path from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
import { processAlive } from '../util/process-alive.js'
import { authenticate, createScramVerifier } from './scram-gate.js'

const IN_MEMORY = 'memory://'
/** One session is all PGlite has; the second slot lets a replacement connect while the old one closes. */
const MAX_CONNECTIONS = 2
/** The lab's own client answers in milliseconds; anyone slower is holding a connection slot. */
const AUTH_TIMEOUT_MS = 5000

if (typeof PGLiteSocketServer.prototype.handleConnection !== 'function') {
  // fail closed: without this hook the password would not be asked for
  throw new Error('@electric-sql/pglite-socket has no handleConnection to put the password check in front of: see lib/db/pglite-process.js')
}

/**
 * pglite-socket's server with the password check in front of its private `handleConnection` (it has no hook):
 * the version is pinned exactly, and test/slow/db-door.test.js fails if a wrong password gets through.
 */
class GatedSocketServer extends PGLiteSocketServer {
  #verifier

  constructor (options, verifier) {
    super(options)
    this.#verifier = verifier
  }

  async handleConnection (socket) {
    let replay
    try {
      ({ replay } = await authenticate(socket, this.#verifier, { timeoutMs: AUTH_TIMEOUT_MS }))
    } catch {
      // refused (wrong password, stalled, left): the gate has answered and closed the socket
      return
    }
    try {
      // PGlite answers the client's own startup message (AuthenticationOk ...), as if it came now
      socket.unshift(replay)
      await super.handleConnection(socket)
      socket.resume()
    } catch (err) {
      process.stderr.write(`pglite-socket: ${err.message}\n`)
      socket.destroy()
    }
  }
}

let db = null
let server = null
let lockFile = null
let socketDir = null
let stopping = null

/** Take `<dir>/owner.json`, or throw naming the live process that holds it. */
function takeLock (dir) {
  fs.mkdirSync(dir, { recursive: true })
  const file = path.join(dir, 'owner.json')
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, JSON.stringify({ pid: process.pid, startedAt: new Date().toISOString() }) + '\n', { flag: 'wx' })
      lockFile = file
      return
    } catch (err) {
      if (err.code !== 'EEXIST') throw err
    }
    let owner = null
    try {
      owner = JSON.parse(fs.readFileSync(file, 'utf8'))
    } catch {
      // half-written or unreadable: treated as stale below
    }
    if (owner && Number.isInteger(owner.pid) && processAlive(owner.pid)) {
      throw new Error(`the embedded database in ${dir} is in use by process ${owner.pid} (a running lab server?): stop it first`)
    }
    // the owner died without cleaning up (killed, power loss): its lock means nothing now
    fs.rmSync(file, { force: true })
  }
  throw new Error(`could not take the lock ${file}`)
}

async function start (job) {
  const dir = job?.dir
  if (typeof dir !== 'string' || dir === '') throw new TypeError('job.dir must be a directory or memory://')
  const verifier = createScramVerifier(job.password)
  const socketPath = job.socketPath ?? null
  if (socketPath !== null && (typeof socketPath !== 'string' || !path.isAbsolute(socketPath))) {
    throw new TypeError('job.socketPath must be an absolute path')
  }
  socketDir = socketPath === null ? null : path.dirname(socketPath)
  if (dir !== IN_MEMORY) takeLock(dir)
  db = dir === IN_MEMORY ? await createInMemory(job.template) : await PGlite.create(path.join(dir, 'pgdata'))
  const listen = socketPath === null ? { host: '127.0.0.1', port: 0 } : { path: socketPath }
  server = new GatedSocketServer({ db, ...listen, maxConnections: MAX_CONNECTIONS }, verifier)
  server.addEventListener('error', function logServerError (event) {
    process.stderr.write(`pglite-socket: ${event.detail?.message ?? event.detail}\n`)
  })
  await server.start()
  if (socketPath !== null) {
    // the private directory is the door; the socket's own mode is a second lock on it
    fs.chmodSync(socketPath, 0o600)
    process.send({ type: 'ready', port: null })
  } else {
    process.send({ type: 'ready', port: Number(server.getServerConn().split(':').pop()) })
  }
}

async function createInMemory (template) {
  if (typeof template !== 'string') return PGlite.create(IN_MEMORY)
  if (fs.existsSync(template)) {
    try {
      return await PGlite.create({ loadDataDir: new Blob([fs.readFileSync(template)]) })
    } catch {
      // a template from a crash or another PGlite build: make a new one
      fs.rmSync(template, { force: true })
    }
  }
  const fresh = await PGlite.create(IN_MEMORY)
  try {
    const dump = Buffer.from(await (await fresh.dumpDataDir('gzip')).arrayBuffer())
    fs.mkdirSync(path.dirname(template), { recursive: true })
    // written whole, then renamed: a reader never sees half a template
    const partial = `${template}.${process.pid}.partial`
    fs.writeFileSync(partial, dump)
    fs.renameSync(partial, template)
  } catch (err) {
    process.stderr.write(`pglite: could not save the template ${template}: ${err.message}\n`)
  }
  return fresh
}

function stop (code) {
  stopping ??= (async function closeEverything () {
    try {
      await server?.stop()
    } finally {
      try {
        await db?.close()
      } finally {
        if (lockFile) fs.rmSync(lockFile, { force: true })
        // made by the parent for this socket alone; it removes it too, but may be gone (killed) by now
        if (socketDir) fs.rmSync(socketDir, { recursive: true, force: true })
      }
    }
  })().then(function exitNow () {
    process.exit(code)
  }, function exitFailed (err) {
    process.stderr.write(`pglite: ${err.message}\n`)
    process.exit(1)
  })
}

if (typeof process.send !== 'function') {
  process.stderr.write('lib/db/pglite-process.js is started by the lab (child_process.fork), not by hand\n')
  process.exitCode = 2
} else {
  process.once('message', function onJob (job) {
    start(job).catch(function failed (err) {
      process.send({ type: 'error', message: err.message }, function sent () { stop(1) })
    })
  })
  process.once('disconnect', function parentGone () { stop(0) })
  process.once('SIGTERM', function terminated () { stop(0) })
  // Ctrl+C in the terminal reaches the whole process group: close PGlite cleanly rather than die mid-write
  process.once('SIGINT', function interrupted () { stop(0) })
}
