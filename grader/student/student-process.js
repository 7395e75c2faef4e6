/**
 * The grader's side of the student's process (grader/student-child.js):
 * started apart, in the isolation the machine offers (grader/isolation.js),
 * and judged from outside only.
 *
 * - **The grader owns the port.** It opens the listening socket itself and
 *   hands it to the process as descriptor 3 (where the platform cannot, it
 *   names a free port on the command line), so it knows where the handler
 *   is without being told.
 * - **It knows the pid because it spawned it**, in a process group of its
 *   own (and, where it can, as a user of its own).
 * - **Ready is an answer over HTTP** on that socket, never a message.
 * - **Memory is the kernel's**: VmRSS and VmHWM of the process and its
 *   descendants from /proc, the peak reset through clear_refs; RSS watched
 *   every 25 ms, the whole tree killed past the grader's budget. Where /proc
 *   is missing, the figures are null and say so: the process is not asked.
 * - **What is left pending** is what the kernel shows: the connections on the
 *   port the process still holds, beside what the grader's own clients
 *   sent and had answered (grader/client.js countRequests).
 * - **Stopping kills the whole tree** (SIGKILL to the process group, then to
 *   every member /proc still shows, by group, parent or user) and waits
 *   until nothing of it runs; its temporary folder goes too.
 *
 * StudentProcesses is the set of a grading's student processes: paused
 * together while the reference routes are timed (SIGSTOP, SIGCONT), so that
 * no student code runs beside them, and killed together at the end.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { PROJECT_ROOT } from '../lib/config/options.js'
import { PORTABLE_ENV } from '../lib/util/platform.js'
import { countRequests } from './client.js'
import { chooseIsolation, isolatedCommand } from './isolation.js'
import { cpuMs, heldConnections, signalTree, treeAlive, treePids, treeStopped } from './process-tree.js'
import { measureTree, watchWithinBudget } from './tree-memory.js'
import { EXIT_LOAD_FAILED, LOAD_FAILED_MARK } from './student-route.js'

const GRADER_DIR = path.dirname(fileURLToPath(import.meta.url))
const CHILD = path.join(GRADER_DIR, 'student-child.js')
/**
 * Preloaded for a handler outside the project: it resolves the packages the
 * exercises allow from the lab's node_modules (Node would look for them
 * beside the handler, and find none).
 */
const ALLOW_PACKAGES = path.join(GRADER_DIR, 'allow-packages.js')
const START_TIMEOUT_MS = 20_000
const PROBE_TIMEOUT_MS = 2000
const PROBE_PAUSE_MS = 50
/** After SIGUSR2: time for two full collections of a small heap. */
const GC_PAUSE_MS = 100
const GONE_TIMEOUT_MS = 5000
/** A stopped process shows as stopped in /proc within a scheduler tick or two. */
const PAUSE_TIMEOUT_MS = 1000
const MiB = 1024 * 1024
/** A path no route answers: any HTTP answer to it (a 404 is usual) means the server serves. */
const PROBE_PATH = '/.grader/alive'

/** A grading's student processes. */
export class StudentProcesses {
  #members = new Set()

  add (student) {
    this.#members.add(student)
  }

  delete (student) {
    this.#members.delete(student)
  }

  /**
   * Run `work` with every student process of the grading stopped
   * (SIGSTOP to each whole tree, and /proc showing each stopped), and let
   * them go on after.
   * @template T
   * @param {() => Promise<T>} work
   * @returns {Promise<T>}
   */
  async pausedWhile (work) {
    const paused = [...this.#members].filter(function running (s) { return s.alive })
    try {
      await Promise.all(paused.map(function pauseOne (student) { return student.pause() }))
      return await work()
    } finally {
      for (const student of paused) student.signal('SIGCONT')
    }
  }

  /** Stop every one still there; resolves once nothing of any of them runs. */
  async stopAll () {
    await Promise.all([...this.#members].map(function stopOne (s) { return s.stop() }))
  }
}

export class StudentProcess {
  #options
  #child = null
  #output = ''
  #watch = null
  #root = null
  #tally = null
  #tmpDir = null
  #stopping = false
  #listening = null
  #exited = null
  #exitedPromise = null

  /**
   * @param {{ handler: string, host?: string, budget: number, students?: StudentProcesses,
   *   isolation?: { user?: boolean, network?: boolean } }} options `budget`: RSS in bytes past which
   *   the tree is killed; `students`: the grading's set, which this one joins while it runs
   */
  constructor (options) {
    this.#options = { host: '127.0.0.1', ...options }
    /** How many times the process died (crashed, or was killed past the budget) since the first start. */
    this.deaths = 0
    /** The last death: { reason: 'memory'|'crash', message, pid, rss, code, signal } */
    this.lastDeath = null
    this.url = null
    this.pid = null
    this.port = null
    /** What the process printed it is ('handler' or 'router'): a label, never a figure. */
    this.kind = null
    /** Peak RSS of the tree the watch saw, in bytes. */
    this.maxRss = 0
    /** How it is isolated (grader/isolation.js IsolationFacts), once started. */
    this.isolation = null
  }

  get alive () {
    return this.#child !== null && this.#exited === null
  }

  /** The process's stdout and stderr so far (its lifetime, across restarts): where a handler's errors are. */
  output () {
    return this.#output
  }

  /**
   * The URL of a route: this process serves /student alone.
   * @param {string} route
   */
  urlOf (route) {
    if (route !== 'student') throw new Error(`the student's process serves POST /student only, not /${route}`)
    return `${this.url}/student`
  }

  /**
   * Start the process and wait until it answers over HTTP.
   * @throws {Error} `code` 'LOAD_FAILED' when the module did not load or never served (the message says why)
   */
  async start () {
    const options = this.#options
    const isolation = chooseIsolation({ handler: options.handler, ...options.isolation })
    this.#tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-student-'))
    if (isolation.uid !== null) fs.chownSync(this.#tmpDir, isolation.uid, isolation.uid)
    const listener = await openListener(options.host)
    const fd = listener._handle?.fd
    const handOver = Number.isInteger(fd) && fd > 2
    const port = listener.address().port
    if (!handOver) {
      // no descriptor to hand over (Windows): name the port, and run in the grader's network
      await new Promise(function closed (resolve) { listener.close(resolve) })
      isolation.facts.network = 'shared'
    }
    this.isolation = isolation.facts
    const { command, args } = isolatedCommand(isolation, {
      script: CHILD,
      args: [path.resolve(options.handler), ...(handOver ? ['--listen-fd', '3'] : ['--port', String(port), '--host', options.host])],
      handler: path.resolve(options.handler),
      tmpDir: this.#tmpDir,
      nodeFlags: ['--expose-gc'],
      preload: outsideProject(options.handler) && fs.existsSync(ALLOW_PACKAGES) ? [ALLOW_PACKAGES] : []
    })
    const child = spawn(command, args, {
      // a process group of its own, so that the whole tree can be signalled at once
      detached: true,
      cwd: this.#tmpDir,
      env: childEnv(this.#tmpDir),
      stdio: ['pipe', 'pipe', 'pipe', ...(handOver ? [fd] : [])]
    })
    // the child holds its own copy of the socket now: the grader accepts nothing on it
    if (handOver) listener.close()
    this.#child = child
    this.#exited = null
    this.pid = child.pid
    this.port = port
    this.url = `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`
    this.#root = { pid: child.pid, pgid: child.pid, uid: isolation.uid }
    this.#options.students?.add(this)
    const student = this
    child.stdin.on('error', function ignore () {})
    child.stdout.setEncoding('utf8')
    child.stderr.setEncoding('utf8')
    child.stdout.on('data', function keep (chunk) { student.#keep(chunk) })
    child.stderr.on('data', function keep (chunk) { student.#keep(chunk) })
    const exited = new Promise(function waitForExit (resolve) {
      child.once('exit', function onExit (code, signal) {
        if (student.#exited !== null && student.#child === child) return
        student.#exited = { code, signal }
        student.#onExit(child, code, signal)
        resolve()
      })
      // the command could not be started at all (no 'exit' follows)
      child.once('error', function spawnFailed (err) {
        student.#keep(`student-process: could not start ${command}: ${err.message}\n`)
        if (child.pid !== undefined || student.#exited !== null) return
        student.#exited = { code: null, signal: null }
        resolve()
      })
    })
    this.#exitedPromise = exited
    const ready = await this.#waitUntilServing(exited)
    if (!ready.ok) {
      await this.stop()
      const err = new Error(ready.message)
      err.code = 'LOAD_FAILED'
      throw err
    }
    this.#listening = child
    const kind = /\((handler|router)\), pid \d+/.exec(this.#output)
    this.kind = kind ? kind[1] : null
    this.#tally?.stop()
    this.#tally = countRequests(new URL(this.url).origin)
    this.#startWatch()
  }

  /** Start again after it died or hung, on a port of its own. */
  async restart () {
    await this.stop()
    this.#stopping = false
    await this.start()
  }

  /**
   * Kill the whole tree and wait until nothing of it runs; not counted as a death.
   * @returns {Promise<void>}
   */
  async stop () {
    this.#stopping = true
    this.#stopWatch()
    this.#tally?.stop()
    this.#tally = null
    this.#options.students?.delete(this)
    const child = this.#child
    if (child !== null && this.#root.pid !== undefined) {
      const root = this.#root
      // SIGKILL takes a stopped process too (one paused while a reference route was timed)
      signalTree(root, 'SIGKILL')
      await this.#exitedPromise
      const until = Date.now() + GONE_TIMEOUT_MS
      while (treeAlive(root) && Date.now() < until) {
        signalTree(root, 'SIGKILL')
        await sleep(20)
      }
      child.stdin.destroy()
    }
    if (this.#tmpDir !== null) {
      fs.rmSync(this.#tmpDir, { recursive: true, force: true })
      this.#tmpDir = null
    }
  }

  /**
   * Send a signal to the whole tree (SIGSTOP and SIGCONT while the reference routes are timed).
   * @param {NodeJS.Signals} signal
   */
  signal (signal) {
    if (this.alive && this.#root.pid !== undefined) signalTree(this.#root, signal)
  }

  /**
   * Stop the whole tree (SIGSTOP) and wait until /proc shows every process
   * of it stopped: signals are delivered when the kernel next runs them.
   */
  async pause () {
    this.signal('SIGSTOP')
    const until = Date.now() + PAUSE_TIMEOUT_MS
    while (this.alive && treeStopped(this.#root) === false && Date.now() < until) await sleep(1)
  }

  /**
   * Ask for a garbage collection (SIGUSR2, twice, grader/student-child.js),
   * and give it a moment: the idle figure of a window. A process that
   * ignores it only makes its own idle figure larger.
   * @returns {Promise<boolean>} false when it is gone
   */
  async gc () {
    if (!this.alive) return false
    try {
      process.kill(this.pid, 'SIGUSR2')
    } catch {
      return false
    }
    await sleep(GC_PAUSE_MS)
    return this.alive
  }

  /**
   * After a check: is the process still there and serving? One request to a
   * path no route answers; a process that died has its exit counted by the
   * time this resolves.
   * @returns {Promise<'alive'|'dead'|'blocked'>}
   */
  async settle (timeoutMs = PROBE_TIMEOUT_MS) {
    if (!this.alive) return 'dead'
    if (await probe(this.url, timeoutMs)) return 'alive'
    if (!this.alive) return 'dead'
    // no answer and no exit yet: an exit may be on its way, or the event loop is stuck
    await sleep(200)
    return this.alive ? 'blocked' : 'dead'
  }

  /**
   * What is left after the requests, from outside: `open` and `pending`, the
   * connections on the student's port its process still holds (the kernel's
   * socket table, grader/process-tree.js; null where /proc is missing);
   * `calls` and `answered`, what the grader's own clients sent it and had
   * answered; `unanswered`, those still waiting. Null when the process is gone.
   * @returns {Promise<{ calls: number, answered: number, unanswered: number, pending: number|null,
   *   open: number|null, source: 'kernel'|null } | null>}
   */
  async stats () {
    if (!this.alive) return null
    const held = heldConnections(treePids(this.#root), this.port)
    const tally = this.#tally ?? { sent: 0, answered: 0, open: 0 }
    return { calls: tally.sent, answered: tally.answered, unanswered: tally.open, pending: held, open: held, source: held === null ? null : 'kernel' }
  }

  /**
   * The CPU time the process has used, read from outside (/proc/<pid>/stat).
   * @returns {number|null} milliseconds; null where /proc is missing or it is gone
   */
  cpuMs () {
    return cpuMs(this.pid)
  }

  /**
   * Measure the tree's kernel peak (VmHWM) over `load`: garbage collected,
   * idle RSS read and the peaks reset first, the peaks read as soon as
   * `load` resolves (grader/tree-memory.js). Where /proc is missing, `ps`
   * samples the peak; where neither is, the figures are null
   * (`unreadable`): the process is never asked for them.
   * @template T
   * @param {() => Promise<T>} load
   * @returns {Promise<{ outcome: T, ms: number, idleRss: number|null, peakRss: number|null, growth: number|null,
   *   peakSource: 'kernel peak'|'sampled peak'|null, unreadable: boolean }>}
   */
  async measure (load) {
    await this.gc()
    const pid = this.pid
    const student = this
    return measureTree({
      root: this.#root,
      alive: function stillAlive () { return student.alive },
      killedPeak: function killedAt () { return student.lastDeath?.reason === 'memory' && student.lastDeath.pid === pid ? student.lastDeath.rss : null }
    }, load)
  }

  async #waitUntilServing (exited) {
    const until = Date.now() + START_TIMEOUT_MS
    let gone = false
    exited.then(function noted () { gone = true })
    while (!gone && Date.now() < until) {
      const answered = await Promise.race([probe(this.url, Math.min(PROBE_TIMEOUT_MS, until - Date.now())), exited.then(function no () { return false })])
      if (answered && this.alive) return { ok: true }
      if (!gone) await sleep(PROBE_PAUSE_MS)
    }
    if (!gone) return { ok: false, message: `${path.basename(this.#options.handler)} did not start serving within ${START_TIMEOUT_MS / 1000} s (its module may never finish loading)` }
    const { code, signal } = this.#exited
    const marked = this.#output.split('\n').find(function reason (line) { return line.startsWith(LOAD_FAILED_MARK) })
    if (code === EXIT_LOAD_FAILED && marked) return { ok: false, message: marked.slice(LOAD_FAILED_MARK.length) }
    return { ok: false, message: `the student's process exited (${signal ?? `exit code ${code}`}) before it served: ${this.#output.trim().split('\n').slice(-3).join(' | ').slice(0, 600)}` }
  }

  #keep (chunk) {
    this.#output += chunk
    // a handler that logs without end must not make the grader's memory its own
    if (this.#output.length > 1_000_000) this.#output = this.#output.slice(-500_000)
  }

  #startWatch () {
    this.#watch = watchWithinBudget(this, this.#root, this.#options.budget, function killed (rss, budget) {
      return `the student's process was killed: its RSS reached ${(rss / MiB).toFixed(0)} MiB, past the grader's budget of ${(budget / MiB).toFixed(0)} MiB`
    })
  }


  #stopWatch () {
    this.#watch?.stop()
    this.#watch = null
  }

  #onExit (child, code, signal) {
    if (child !== this.#child) return
    this.#stopWatch()
    // whatever it left behind goes with it
    if (this.#root.pid !== undefined) signalTree(this.#root, 'SIGKILL')
    // stopped on purpose, or it never served (start() says why): not a death during a check
    if (this.#stopping || this.#listening !== child) return
    this.deaths++
    if (this.lastDeath?.reason === 'memory' && this.lastDeath.pid === child.pid) return
    this.lastDeath = { reason: 'crash', pid: child.pid, code, signal, rss: null, message: `the student's process died (${signal ?? `exit code ${code}`}): ${crashLine(this.#output)}` }
  }
}

/** Whether the handler's file lies outside the project, where the project's packages cannot be found from it. */
function outsideProject (handler) {
  let file
  try {
    file = fs.realpathSync(path.resolve(handler))
  } catch {
    return false
  }
  const relative = path.relative(fs.realpathSync(PROJECT_ROOT), file)
  return relative.startsWith('..') || path.isAbsolute(relative)
}

/** A listening socket on a free port, opened by the grader. */
function openListener (host) {
  return new Promise(function listen (resolve, reject) {
    const listener = net.createServer()
    // nothing connects before the handover; if something did, it is not the grader
    listener.on('connection', function notOurs (socket) { socket.destroy() })
    listener.once('error', reject)
    listener.listen({ port: 0, host, exclusive: true }, function listening () { resolve(listener) })
  })
}

/** Only what a Node program needs: the grader's environment (tokens, NODE_OPTIONS) stays with the grader. */
function childEnv (tmpDir) {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpDir, TMPDIR: tmpDir, LANG: 'C.UTF-8' }
  if (process.env[PORTABLE_ENV] !== undefined) env[PORTABLE_ENV] = process.env[PORTABLE_ENV]
  return env
}

/** Whether anything answers over HTTP at `url` (an origin) within `timeoutMs`: any status, to a path no route answers. */
export function probe (url, timeoutMs) {
  return new Promise(function ask (resolve) {
    const req = http.get(`${url}${PROBE_PATH}`, { agent: false, timeout: Math.max(1, timeoutMs) }, function answered (res) {
      res.resume()
      resolve(true)
      req.destroy()
    })
    req.on('timeout', function noAnswer () {
      req.destroy()
      resolve(false)
    })
    req.on('error', function failed () { resolve(false) })
  })
}

/**
 * The line of a crash or a logged error that says what happened: the last
 * "TypeError: …" line, with the first frame of its stack that is not Node's
 * or a package's (the handler's own file and line), else the last line written.
 * @param {string} output
 * @returns {string}
 */
export function crashLine (output) {
  const lines = output.slice(-20_000).split('\n').map(function trim (line) { return line.trim() }).filter(Boolean)
  for (let k = lines.length - 1; k >= 0; k--) {
    if (!/^(Uncaught )?([A-Z]\w*)?(Error|Exception)\b/.test(lines[k])) continue
    const frame = lines.slice(k + 1).find(function ownFrame (line) {
      return line.startsWith('at ') && !/node_modules|node:|\(internal\//.test(line)
    })
    const where = frame ? ` (${frame.replace(/^at /, '').replace(/^.*\((.*)\)$/, '$1').replace(/^file:\/\//, '').slice(-120)})` : ''
    return (lines[k] + where).slice(0, 300)
  }
  return lines.length > 0 ? lines[lines.length - 1].slice(0, 300) : 'no output'
}
