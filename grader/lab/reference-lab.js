/** The reference lab (lab-child.js) from the grader's side: forked, watched from outside, killed past the budget. */
import { fork } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import { readProcMemory } from '../../lib/metrics/proc-memory.js'
import { closePeakWindow, openPeakWindow } from '../../lib/measure/lab-memory.js'
import { crashLine, keepTail } from '../process/output.js'
import { MiB } from '../../lib/util/units.js'

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'lab-child.js')
const WATCH_MS = 25
const START_TIMEOUT_MS = 20_000
const REPLY_TIMEOUT_MS = 10_000
const STOP_GRACE_MS = 2000

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

  /** `port`: its dashboard's (0: any free); `budget`: RSS bytes past which it is killed; `onCancel(id)`: the page asked. */
  constructor (options) {
    this.#options = { port: 0, host: '127.0.0.1', ...options }
    /** Deaths (crashed, or killed past the budget) since the first start. */
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
      lab.#output = keepTail(lab.#output, chunk)
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

  /** A step of the run for the dashboard, remembered so a child started again hears the start and the latest progress. */
  runStep (step) {
    if (step.phase === 'start') this.#runStart = step
    else if (step.phase === 'progress') this.#runProgress = step.progress
    else {
      this.#runStart = null
      this.#runProgress = null
    }
    this.#tell({ type: 'run', step })
  }

  /** Collect garbage in the child twice (a window's idle figure); false when it did not answer or is gone. */
  async gc () {
    return (await this.#ask('gc')) !== null
  }

  urlOf (route) {
    return `${this.url}/${route}`
  }

  /** After a check: 'alive', 'dead' (its exit counted by then: a reset can beat the exit) or 'blocked'. */
  async settle (timeoutMs = 2000) {
    if (!this.alive) return 'dead'
    const reply = await this.#ask('ping', timeoutMs)
    if (reply !== null) return 'alive'
    if (!this.alive) return 'dead'
    // no reply and no exit yet: an exit may be on its way, or the event loop is stuck
    await new Promise(function brief (resolve) { setTimeout(resolve, 200) })
    return this.alive ? 'blocked' : 'dead'
  }

  /** The child's kernel peak (VmHWM) over `load`: collected, idle RSS read and peak reset first (Linux; else null). */
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
          message: `the lab was killed: its RSS reached ${(rss / MiB).toFixed(0)} MiB, ` +
            `past the grader's budget of ${(budget / MiB).toFixed(0)} MiB`
        }
        child.kill('SIGKILL')
      }
    }
    // without /proc (or in portable mode) the child reports its RSS itself (lab-child.js): the lab's own code
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
    const message = `the lab process died (${signal ?? `exit code ${code}`}): ${crashLine(this.#output)}`
    this.lastDeath = { reason: 'crash', pid: child.pid, code, signal, rss: null, message }
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
