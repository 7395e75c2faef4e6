// The supervisor, a container's OOM killer emulated: it owns the listening socket, runs the lab in a worker,
// kills it past the memory budget and starts another on the same socket. Connections, restarts, events: README.md.
import { fork } from 'node:child_process'
import { EventEmitter } from 'node:events'
import net from 'node:net'
import { normalizeSupervisorOptions } from './options.js'
import { planRestart, likelyCulprit } from './crash-record.js'
import { watchWorkerRss } from './worker-rss.js'
import { LatestResults } from '../metrics/outcomes.js'

/** A supervisor (options: lib/supervisor/options.js); `start()` listens and runs the first worker. */
export function createSupervisor (options) {
  return new Supervisor(normalizeSupervisorOptions(options))
}

/** Made by `createSupervisor`: README.md. */
class Supervisor extends EventEmitter {
  #options
  #server = null
  /** The current worker's state, or null between workers. */
  #worker = null
  /** Connections accepted here while no worker could take them. */
  #held = []
  /** Crashes with no request in flight in the current run (see planRestart). */
  #streak = 0
  /** Restarts since start(), all reasons. */
  #restarts = 0
  /** The pending restart while backing off, or null. */
  #restartTimer = null
  #nextConnectionId = 1
  #everReady = false
  #stopping = null
  #started = null
  /** start()'s promise, settled by the first worker's 'ready' (or its death). */
  #firstStart = null
  /** Each experiment's latest result, whichever worker ran it. */
  #results = new LatestResults()

  constructor (options) {
    super()
    this.#options = options
  }

  /** The current worker's pid, or null. */
  get workerPid () {
    return this.#worker?.child.pid ?? null
  }

  /** Listen, start the first worker, wait until it is ready; rejects if the port or the first worker fails. */
  start () {
    if (this.#started !== null) return this.#started
    const supervisor = this
    this.#started = new Promise(function listenThenFork (resolve, reject) {
      const server = net.createServer({ pauseOnConnect: true })
      supervisor.#server = server
      function onListenError (err) {
        supervisor.#server = null
        reject(err)
      }
      server.once('error', onListenError)
      server.on('connection', function onConnection (socket) { supervisor.#route(socket) })
      server.listen(supervisor.#options.port, supervisor.#options.host, function listening () {
        server.off('error', onListenError)
        server.on('error', function onServerError (err) {
          // accept() failing (EMFILE ...) must not take the supervisor down; the worker accepts too
          supervisor.emit('warning', err)
        })
        supervisor.#firstStart = { resolve, reject }
        supervisor.#spawn(null)
      })
    })
    return this.#started
  }

  /** Stop the worker (SIGTERM, then SIGKILL after `stopGraceMs`) and close the socket. */
  stop (reason = 'stop') {
    if (this.#stopping !== null) return this.#stopping
    this.emit('stopping', { reason })
    clearTimeout(this.#restartTimer)
    this.#restartTimer = null
    const supervisor = this
    const worker = this.#worker
    this.#stopping = new Promise(function stopAll (resolve) {
      supervisor.#closeSocket()
      if (worker === null || worker.exited) {
        resolve()
        return
      }
      worker.ready = false
      const timer = setTimeout(function forceKill () { worker.child.kill('SIGKILL') }, supervisor.#options.stopGraceMs)
      worker.child.once('exit', function workerStopped () {
        clearTimeout(timer)
        resolve()
      })
      worker.child.kill('SIGTERM')
    })
    return this.#stopping
  }

  #closeSocket () {
    for (const socket of this.#held.splice(0)) socket.destroy()
    if (this.#server !== null) {
      this.#server.close()
      this.#server = null
    }
  }

  /** Start a worker; `crash` is the record of the one it replaces (null for the first). */
  #spawn (crash) {
    const options = this.#options
    const child = fork(options.workerScript, [], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'json',
      env: workerEnvironment(options),
      ...(options.execArgv === null ? {} : { execArgv: options.execArgv })
    })
    const worker = {
      child,
      ready: false,
      exited: false,
      startedAt: Date.now(),
      /** When it said it was ready; null until then. */
      readyAt: null,
      crash,
      /** Ingest and upload requests in flight, id -> route, as the worker reports them. */
      inFlight: new Map(),
      experiment: null,
      rss: null,
      killedFor: null,
      stopRequested: null,
      /** Connections sent and not yet confirmed: id -> socket (our copy). */
      unconfirmed: new Map(),
      watch: null
    }
    this.#worker = worker
    const supervisor = this
    child.on('message', function onWorkerMessage (message) { supervisor.#onMessage(worker, message) })
    child.on('error', function onWorkerError (err) {
      // a fork that failed to start emits no 'exit'
      if (child.pid === undefined) supervisor.#onExit(worker, null, null, err)
    })
    child.on('exit', function onWorkerExit (code, signal) { supervisor.#onExit(worker, code, signal, null) })
    if (child.pid === undefined) return
    worker.watch = watchWorkerRss(child.pid, options, function onWorkerRss (rss) { supervisor.#checkRss(worker, rss) })
    child.send({
      type: 'listen',
      // the budget it runs under, so that it can admit requests within it
      options: options.app.memoryBudget === undefined ? { ...options.app, memoryBudget: options.memoryLimit } : options.app,
      // without /proc the worker measures itself and says so over IPC
      reportRssMs: worker.watch.source === 'ipc' ? options.pollMs : 0,
      results: this.#results.list()
    }, this.#server, function sentListen (err) {
      if (err) child.kill('SIGKILL')
    })
  }

  #checkRss (worker, rss) {
    worker.rss = rss
    const limit = this.#options.memoryLimit
    if (limit === 0 || rss <= limit || worker.killedFor !== null || worker.exited) return
    worker.killedFor = { rss }
    // nothing more goes to it: it is about to vanish
    worker.ready = false
    worker.watch.stop()
    worker.child.kill('SIGKILL')
  }

  #onMessage (worker, message) {
    switch (message?.type) {
      case 'ready':
        this.#onReady(worker)
        break
      case 'request':
        if (message.phase === 'start') worker.inFlight.set(message.id, message.route)
        else if (message.phase === 'end') worker.inFlight.delete(message.id)
        break
      case 'experiment':
        this.#results.note(message)
        worker.experiment = message.phase === 'start'
          ? { id: message.id, name: message.name, params: message.params ?? null, startedAt: message.time ?? null }
          : null
        break
      case 'connection-taken': {
        // the worker has its own copy now: closing ours leaves the connection open
        const socket = worker.unconfirmed.get(message.id)
        worker.unconfirmed.delete(message.id)
        socket?.destroy()
        break
      }
      case 'rss':
        if (Number.isFinite(message.rss)) this.#checkRss(worker, message.rss)
        break
      case 'stopping':
        worker.stopRequested = message.reason ?? 'signal'
        break
    }
  }

  #onReady (worker) {
    if (worker !== this.#worker || worker.exited) return
    worker.ready = true
    const now = Date.now()
    worker.readyAt = now
    const { address, port } = this.#server?.address() ?? {}
    if (worker.crash !== null) {
      const crash = { ...worker.crash, restartMs: now - worker.crash.time }
      worker.child.send({ type: 'crash', crash }, function sentCrash () {
        // a worker that died meanwhile is handled by its 'exit'
      })
      this.emit('restarted', { ...crash, newPid: worker.child.pid })
    }
    if (!this.#everReady) {
      this.#everReady = true
      this.#firstStart?.resolve({ address, port, pid: worker.child.pid })
      this.#firstStart = null
      const { memoryLimit } = this.#options
      this.emit('listening', { address, port, pid: worker.child.pid, memoryLimit, rssSource: worker.watch.source })
    }
    for (const socket of this.#held.splice(0)) this.#route(socket)
  }

  /** A connection this process accepted: to the worker, or held until there is one. */
  #route (socket) {
    const worker = this.#worker
    if (worker === null || !worker.ready || !worker.child.connected) {
      this.#hold(socket)
      return
    }
    const id = this.#nextConnectionId++
    worker.unconfirmed.set(id, socket)
    const supervisor = this
    // keepOpen: our copy stays until the worker says it has its own (see 'connection-taken')
    worker.child.send({ type: 'connection', id }, socket, { keepOpen: true }, function sentConnection (err) {
      if (!err) return
      worker.unconfirmed.delete(id)
      supervisor.#hold(socket)
    })
  }

  #hold (socket) {
    if (this.#stopping !== null || this.#held.length >= this.#options.maxHeldConnections) {
      socket.destroy()
      return
    }
    if (socket.listenerCount('error') === 0) socket.on('error', function heldSocketError () { socket.destroy() })
    this.#held.push(socket)
  }

  #onExit (worker, code, signal, spawnError) {
    if (worker.exited) return
    worker.exited = true
    worker.ready = false
    worker.watch?.stop()
    if (this.#worker === worker) this.#worker = null
    const now = Date.now()
    // connections it never confirmed were never read: the next worker takes them
    const orphans = [...worker.unconfirmed.values()]
    worker.unconfirmed.clear()
    for (const socket of orphans) this.#hold(socket)

    if (this.#stopping !== null) return
    if (worker.stopRequested !== null && worker.killedFor === null) {
      // stopped by a signal meant for us all (Ctrl-C reaches the whole process group)
      this.stop(`worker stopped (${worker.stopRequested})`)
      return
    }
    if (!this.#everReady) {
      // a lab that never started is a configuration to fix, not a crash to ride out
      const reason = spawnError?.message ?? (signal ? `killed by ${signal}` : `exit code ${code}`)
      this.#closeSocket()
      this.#firstStart?.reject(new Error(`the worker stopped before it was ready (${reason})`))
      this.#firstStart = null
      return
    }
    const crash = this.#crashRecord(worker, code, signal, now)
    this.emit('crash', crash)
    if (crash.backoffMs === 0) {
      this.#spawn(crash)
      return
    }
    const supervisor = this
    this.#restartTimer = setTimeout(function restartAfterBackoff () {
      supervisor.#restartTimer = null
      if (supervisor.#stopping === null) supervisor.#spawn(crash)
    }, crash.backoffMs)
  }

  /** The record of a dead worker, with the restart it gets (counted here: one call per crash). */
  #crashRecord (worker, code, signal, time) {
    const routes = [...worker.inFlight.values()]
    const inFlight = {}
    for (const route of routes) inFlight[route] = (inFlight[route] ?? 0) + 1
    let reason = 'exit'
    if (worker.killedFor !== null) reason = 'memory-limit'
    else if (signal !== null) reason = 'signal'
    const route = likelyCulprit(inFlight, routes)
    // a run started by POST /experiments is a client's doing too, even between its requests
    const requestCaused = route !== null || worker.experiment !== null
    const upMs = worker.readyAt === null ? 0 : time - worker.readyAt
    const { streak, backoffMs } = planRestart(this.#streak, { requestCaused, upMs }, this.#options)
    this.#streak = streak
    this.#restarts += 1
    return {
      reason,
      pid: worker.child.pid ?? null,
      exitCode: code,
      signal,
      rss: worker.killedFor?.rss ?? worker.rss,
      budget: this.#options.memoryLimit === 0 ? null : this.#options.memoryLimit,
      route,
      inFlight,
      experiment: worker.experiment,
      requestCaused,
      restarts: this.#restarts,
      backoffMs,
      time,
      restartMs: null
    }
  }
}

/** The worker's environment: the supervisor's, with glibc's mmap threshold fixed unless it is set already. */
function workerEnvironment ({ mallocMmapThreshold }) {
  if (mallocMmapThreshold === 0 || process.env.MALLOC_MMAP_THRESHOLD_ !== undefined) return process.env
  return { ...process.env, MALLOC_MMAP_THRESHOLD_: String(mallocMmapThreshold) }
}
