/**
 * The processes of a grading, from the grader's side:
 *
 * - the **reference lab** (ReferenceLab, grader/lab-child.js): the lab's
 *   own app with its routes /good, /streamparser-json and /bad and the
 *   dashboard that follows the run. Only the lab's code runs in it: the
 *   student's module is never loaded there. The grader forks it, watches
 *   its memory from outside as the supervisor does (its RSS from /proc
 *   every 25 ms, SIGKILL past the grader's budget), measures windows of its
 *   kernel peak as the benches do (lib/measure/lab-memory.js), and tells it
 *   the run's steps for the dashboard;
 * - the **student's process** (grader/student-process.js): the handler on a
 *   small server of its own, started in isolation and judged from outside.
 *
 * GradeLab is the pair a grading runs on: each route's URL points at the
 * process that serves it (urlOf), and a death, a hang or a restart is the
 * student's process's. FreshLabs gives the memory checks a process that has
 * served nothing yet, of either kind.
 */
import { fork } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import { readProcMemory } from '../lib/metrics/proc-memory.js'
import { closePeakWindow, openPeakWindow } from '../lib/measure/lab-memory.js'
import { crashLine, StudentProcess, StudentProcesses } from './student-process.js'

export { crashLine }

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'lab-child.js')
const WATCH_MS = 25
const START_TIMEOUT_MS = 20_000
const REPLY_TIMEOUT_MS = 10_000
const STOP_GRACE_MS = 2000
const MiB = 1024 * 1024

/**
 * A grading's two processes: the reference lab (the dashboard's, on
 * `port`) and the student's process (on a port the grader opens).
 */
export class GradeLab {
  #options

  /**
   * @param {{ handler: string, port?: number, host?: string, dataDir?: string, budget: number,
   *   onCancel?: (id: string) => void, isolation?: { user?: boolean, network?: boolean } }} options
   *   `budget`: RSS in bytes past which either process is killed; `isolation`: layers to turn off
   */
  constructor (options) {
    this.#options = { port: 0, host: '127.0.0.1', ...options }
    /** Every student process of the grading, this one's and the fresh ones' (FreshLabs). */
    this.students = new StudentProcesses()
    this.reference = new ReferenceLab({ port: this.#options.port, host: this.#options.host, dataDir: this.#options.dataDir, budget: this.#options.budget, onCancel: this.#options.onCancel })
    this.student = new StudentProcess({ handler: this.#options.handler, host: this.#options.host, budget: this.#options.budget, students: this.students, isolation: this.#options.isolation })
  }

  /** How many times the student's process died since the first start. */
  get deaths () { return this.student.deaths }
  get lastDeath () { return this.student.lastDeath }
  get alive () { return this.student.alive && this.reference.alive }
  /** The reference lab's URL: its dashboard follows the run. */
  get url () { return this.reference.url }
  get kind () { return this.student.kind }
  get pid () { return this.student.pid }
  /** How the student's process is isolated (grader/isolation.js). */
  get isolation () { return this.student.isolation }

  /** The student's process's output: where a handler's errors are. */
  output () {
    return this.student.output()
  }

  /**
   * Where a route is served: /student by the student's process, the others by the reference lab.
   * @param {string} route
   */
  urlOf (route) {
    return route === 'student' ? this.student.urlOf(route) : `${this.reference.url}/${route}`
  }

  /**
   * Start both; when either fails, stop the other.
   * @throws {Error} `code` 'LOAD_FAILED' when the module did not load (the message says why)
   */
  async start () {
    const [reference, student] = await Promise.allSettled([this.reference.start(), this.student.start()])
    if (reference.status === 'fulfilled' && student.status === 'fulfilled') return
    await this.stop()
    throw student.status === 'rejected' ? student.reason : reference.reason
  }

  /** Start the student's process again (it died or hung), and the reference lab if it died. */
  async restart () {
    await this.student.restart()
    if (!this.reference.alive) await this.reference.restart()
  }

  /** Stop both, and every student process of the grading: resolves once none of them runs. */
  async stop () {
    await Promise.all([this.student.stop(), this.reference.stop()])
    await this.students.stopAll()
  }

  settle (timeoutMs) {
    return this.student.settle(timeoutMs)
  }

  stats () {
    return this.student.stats()
  }

  cpuMs () {
    return this.student.cpuMs()
  }

  measure (load) {
    return this.student.measure(load)
  }

  runStep (step) {
    this.reference.runStep(step)
  }

  /**
   * Run `work` (timing a reference route) with every student process of the grading stopped.
   * @template T
   * @param {() => Promise<T>} work
   * @returns {Promise<T>}
   */
  whileStudentsPaused (work) {
    return this.students.pausedWhile(work)
  }
}

/**
 * The reference lab: grader/lab-child.js, the lab's own app, with no
 * student code in it. It says where it listens over IPC ('ready'): it runs
 * only the lab's code, so its word is the lab's.
 */
export class ReferenceLab {
  #options
  #child = null
  #output = ''
  #watch = null
  #seq = 0
  #pending = new Map()
  #runStart = null
  #runProgress = null
  #stopping = false
  #listening = null

  constructor (options) {
    this.#options = { port: 0, host: '127.0.0.1', ...options }
    /** How many times the child died (crashed, or was killed past the budget) since the first start. */
    this.deaths = 0
    /** The last death: { reason, message, code, signal, rss } */
    this.lastDeath = null
    this.url = null
    this.pid = null
    this.port = this.#options.port
    /** Peak RSS the watch saw in the child's whole life, in bytes. */
    this.maxRss = 0
  }

  get alive () {
    return this.#child !== null && this.#child.exitCode === null && this.#child.signalCode === null
  }

  /** The child's stdout and stderr so far (its lifetime, across restarts). */
  output () {
    return this.#output
  }

  async start () {
    const args = ['--port', String(this.port), '--host', this.#options.host]
    if (this.#options.dataDir) args.push('--data-dir', this.#options.dataDir)
    const child = fork(CHILD, args, {
      execArgv: ['--expose-gc'],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc']
    })
    this.#child = child
    const lab = this
    function keep (chunk) {
      lab.#output += chunk
      // a handler that logs without end must not make the grader's memory its own
      if (lab.#output.length > 1_000_000) lab.#output = lab.#output.slice(-500_000)
    }
    child.stdout.setEncoding('utf8')
    child.stderr.setEncoding('utf8')
    child.stdout.on('data', keep)
    child.stderr.on('data', keep)
    const ready = new Promise(function waitUntilListening (resolve, reject) {
      const timer = setTimeout(function neverReady () {
        child.kill('SIGKILL')
        reject(new Error(`the lab did not start within ${START_TIMEOUT_MS / 1000} s`))
      }, START_TIMEOUT_MS)
      child.on('message', function fromChild (message) {
        if (message?.type === 'ready') {
          clearTimeout(timer)
          resolve(message)
        } else if (message?.type === 'reply') {
          const waiter = lab.#pending.get(message.seq)
          if (waiter) waiter(message)
        } else if (message?.type === 'cancel') {
          lab.#options.onCancel?.(message.id)
        }
      })
      // after 'ready' too: a death mid-run is counted here (the reject is then a no-op)
      child.once('exit', function onExit (code, signal) {
        clearTimeout(timer)
        lab.#onExit(child, code, signal)
        reject(new Error(`the lab exited (${signal ?? code}) before it listened:\n${lab.#output.slice(-2000)}`))
      })
    })
    const message = await ready
    this.#listening = child
    this.url = message.url
    // the grader forked it: it knows the pid without being told
    this.pid = child.pid
    this.port = Number(new URL(message.url).port)
    this.#startWatch(child)
    if (this.#runStart) {
      // the dashboard of the new lab hears where the run is
      this.#tell({ type: 'run', step: { ...this.#runStart, progress: this.#runProgress } })
    }
  }

  /** Start the child again after it died or hung: the same port, so an open dashboard reconnects. */
  async restart () {
    await this.stop()
    this.#stopping = false
    try {
      await this.start()
    } catch (err) {
      if (!/EADDRINUSE/.test(this.#output.slice(-500))) throw err
      this.port = 0
      await this.start()
    }
  }

  /** Stop the child (SIGTERM, then SIGKILL): not counted as a death. */
  async stop () {
    this.#stopping = true
    this.#stopWatch()
    const child = this.#child
    if (child === null || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise(function waitForExit (resolve) { child.once('exit', resolve) })
    const timer = setTimeout(function forceKill () { child.kill('SIGKILL') }, STOP_GRACE_MS)
    child.kill('SIGTERM')
    await exited
    clearTimeout(timer)
  }

  /**
   * A step of the grading run for the dashboard: remembered, so a new
   * child after a restart hears the start and the latest progress.
   */
  runStep (step) {
    if (step.phase === 'start') this.#runStart = step
    else if (step.phase === 'progress') this.#runProgress = step.progress
    else {
      this.#runStart = null
      this.#runProgress = null
    }
    this.#tell({ type: 'run', step })
  }

  /**
   * Collect garbage in the child (twice): the idle figure of a window.
   * @returns {Promise<boolean>} false when the child did not answer (its event loop is blocked) or is gone
   */
  async gc () {
    return (await this.#ask('gc')) !== null
  }

  /** @param {string} route @returns {string} the route's URL on this lab */
  urlOf (route) {
    return `${this.url}/${route}`
  }

  /**
   * After a check: is the child still there and answering? A child that died
   * has its exit counted by the time this resolves (a reset connection can
   * reach the grader before the exit does).
   * @returns {Promise<'alive'|'dead'|'blocked'>}
   */
  async settle (timeoutMs = 2000) {
    if (!this.alive) return 'dead'
    const reply = await this.#ask('ping', timeoutMs)
    if (reply !== null) return 'alive'
    if (!this.alive) return 'dead'
    // no reply and no exit yet: an exit may be on its way, or the event loop is stuck
    await new Promise(function brief (resolve) { setTimeout(resolve, 200) })
    return this.alive ? 'blocked' : 'dead'
  }

  /**
   * Measure the child's kernel peak (VmHWM) over `load`: garbage
   * collected, idle RSS read and the peak reset first, the peak read as soon
   * as `load` resolves (Linux; elsewhere the figures are null).
   * @template T
   * @param {() => Promise<T>} load
   * @returns {Promise<{ outcome: T, ms: number, idleRss: number|null, peakRss: number|null, growth: number|null }>}
   */
  async measure (load) {
    await this.gc()
    const pid = this.pid
    const lab = { pid, url: this.url }
    const window = await openPeakWindow(lab)
    const started = performance.now()
    const outcome = await load()
    const ms = performance.now() - started
    const after = this.alive ? await closePeakWindow(window, lab) : null
    // killed past the budget: the peak is at least the budget
    const peak = after?.peakRss ?? (this.lastDeath?.reason === 'memory' && this.lastDeath.pid === pid ? this.lastDeath.rss : null)
    const measured = window.reset && window.idleRss !== null && peak !== null
    return {
      outcome,
      ms,
      idleRss: window.idleRss,
      peakRss: measured ? peak : null,
      growth: measured ? Math.max(0, peak - window.idleRss) : null,
      peakSource: measured ? (after?.peakSource ?? (window.kernel ? 'kernel peak' : 'sampled peak')) : null
    }
  }

  #startWatch (child) {
    const lab = this
    const budget = this.#options.budget
    const pid = child.pid
    function judgeRss (rss) {
      if (rss > lab.maxRss) lab.maxRss = rss
      if (budget > 0 && rss > budget && child.exitCode === null) {
        lab.lastDeath = {
          reason: 'memory',
          pid,
          rss,
          message: `the lab was killed: its RSS reached ${(rss / MiB).toFixed(0)} MiB, past the grader's budget of ${(budget / MiB).toFixed(0)} MiB`
        }
        child.kill('SIGKILL')
      }
    }
    // without /proc (or in portable mode) the child reports its RSS itself (grader/lab-child.js): the lab's own code
    child.on('message', function rssReport (message) {
      if (message?.type === 'rss') judgeRss(message.rss)
    })
    this.#watch = setInterval(function watchMemory () {
      const memory = readProcMemory(pid)
      if (memory !== null) judgeRss(memory.rss)
    }, WATCH_MS)
    this.#watch.unref()
  }

  #stopWatch () {
    clearInterval(this.#watch)
    this.#watch = null
  }

  #onExit (child, code, signal) {
    if (child !== this.#child) return
    this.#stopWatch()
    for (const waiter of this.#pending.values()) waiter(null)
    this.#pending.clear()
    // stopped on purpose, or it never listened (start() says why): not a death during a check
    if (this.#stopping || this.#listening !== child) return
    this.deaths++
    if (this.lastDeath?.reason === 'memory' && this.lastDeath.pid === child.pid) return
    this.lastDeath = { reason: 'crash', pid: child.pid, code, signal, rss: null, message: `the lab process died (${signal ?? `exit code ${code}`}): ${crashLine(this.#output)}` }
  }

  #tell (message) {
    if (this.alive && this.#child.connected) this.#child.send(message, function sent () {})
  }

  #ask (type, timeoutMs = REPLY_TIMEOUT_MS) {
    if (!this.alive || !this.#child.connected) return Promise.resolve(null)
    const lab = this
    const seq = ++this.#seq
    return new Promise(function askChild (resolve) {
      const timer = setTimeout(function noReply () {
        lab.#pending.delete(seq)
        resolve(null)
      }, timeoutMs)
      lab.#pending.set(seq, function replied (message) {
        clearTimeout(timer)
        lab.#pending.delete(seq)
        resolve(message)
      })
      lab.#child.send({ type, seq }, function sent () {})
    })
  }
}

/**
 * Fresh processes for memory figures: each measurement gets a process that
 * has served nothing but its warm-up, as the benches measure
 * (lib/measure/fresh-server.js): a student's process for /student, a
 * reference lab for the lab's routes. The next one starts while the current
 * one is measured, so a fresh process per point costs no wait. The
 * grading's own pair (GradeLab) stays up.
 */
export class FreshLabs {
  #options
  /** kind ('student' or 'reference') -> a process starting or started, not taken yet */
  #spares = new Map()
  #started = []

  /**
   * @param {{ handler: string, host?: string, dataDir?: string, budget: number, students?: StudentProcesses,
   *   isolation?: object }} options as for GradeLab; `students`: the grading's set (GradeLab.students),
   *   which the fresh student processes join; the port is always a free one
   */
  constructor (options) {
    this.#options = { ...options, port: 0, onCancel: null }
  }

  /**
   * A process that has served nothing yet, for `route`.
   * @param {boolean|string} [next] start the next one now, for the next measurement: true for
   *   another of the same kind, a route's name for one that serves it, false for none
   * @param {string} [route] the route to be measured: 'student' (the default) or a reference route
   * @returns {Promise<StudentProcess|ReferenceLab>}
   */
  async take (next = true, route = 'student') {
    const kind = kindOf(route)
    const taken = this.#spares.get(kind) ?? this.#start(kind)
    this.#spares.delete(kind)
    const nextKind = next === true ? kind : next === false ? null : kindOf(next)
    if (nextKind !== null && !this.#spares.has(nextKind)) this.#spares.set(nextKind, this.#start(nextKind))
    return taken
  }

  /** Stop the processes taken so far; spares wait for the next take(). */
  async releaseTaken () {
    const spares = new Set(this.#spares.values())
    const taken = this.#started.filter(function notSpare (starting) { return !spares.has(starting) })
    this.#started = [...spares]
    await stopAll(taken)
  }

  /** Stop every process taken or started, spares nobody took included. */
  async close () {
    const all = this.#started
    this.#started = []
    this.#spares.clear()
    await stopAll(all)
  }

  #start (kind) {
    const options = this.#options
    const fresh = kind === 'student'
      ? new StudentProcess({ handler: options.handler, host: options.host, budget: options.budget, students: options.students, isolation: options.isolation })
      : new ReferenceLab({ port: 0, host: options.host, dataDir: options.dataDir, budget: options.budget })
    const starting = fresh.start().then(function started () { return fresh })
    // a spare that failed to start is reported by take(), not as an unhandled rejection
    starting.catch(function reportedByTake () {})
    this.#started.push(starting)
    return starting
  }
}

function kindOf (route) {
  return route === 'student' ? 'student' : 'reference'
}

function stopAll (starting) {
  return Promise.all(starting.map(async function stopWhenStarted (one) {
    const started = await one.catch(function failedToStart () { return null })
    await started?.stop()
  }))
}
