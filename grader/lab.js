/**
 * The grader's side of the lab child (grader/lab-child.js): start it, watch
 * its memory from outside as the supervisor does (its RSS from /proc every
 * 25 ms, SIGKILL past the grader's budget), measure windows of its kernel
 * peak as the benches do (lib/measure/proc-memory.js), tell it the run's steps for
 * the dashboard, and start it again, on the same port, when a handler takes
 * it down.
 */
import { fork } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import { readProcMemory } from '../lib/measure/proc-memory.js'
import { closePeakWindow, openPeakWindow } from '../lib/measure/lab-memory.js'

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'lab-child.js')
const WATCH_MS = 25
const START_TIMEOUT_MS = 20_000
const REPLY_TIMEOUT_MS = 10_000
const STOP_GRACE_MS = 2000
const MiB = 1024 * 1024

/**
 * Start the lab with the handler mounted.
 * @param {{ handler: string, port?: number, host?: string, dataDir?: string, budget: number,
 *   onCancel?: (id: string) => void }} options `budget`: RSS in bytes past which the child is killed
 * @returns {Promise<GradeLab>}
 * @throws {Error} `code` 'LOAD_FAILED' when the module did not load (the message says why)
 */
export async function startGradeLab (options) {
  const lab = new GradeLab(options)
  await lab.start()
  return lab
}

export class GradeLab {
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
    this.kind = null
    this.port = this.#options.port
    /** Peak RSS the watch saw in the child's whole life, in bytes. */
    this.maxRss = 0
  }

  get alive () {
    return this.#child !== null && this.#child.exitCode === null && this.#child.signalCode === null
  }

  /** The child's stdout and stderr so far (its lifetime, across restarts): where a handler's errors are. */
  output () {
    return this.#output
  }

  async start () {
    const args = [this.#options.handler, '--port', String(this.port), '--host', this.#options.host]
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
        } else if (message?.type === 'load-failed') {
          clearTimeout(timer)
          const err = new Error(message.message)
          err.code = 'LOAD_FAILED'
          reject(err)
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
    this.pid = message.pid
    this.kind = message.kind
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

  /** What the handler left behind: { calls, pending, answered, open }, or null. */
  stats (timeoutMs = REPLY_TIMEOUT_MS) {
    return this.#ask('stats', timeoutMs)
  }

  /**
   * After a check: is the child still there and answering? A child that died
   * has its exit counted by the time this resolves (a reset connection can
   * reach the grader before the exit does).
   * @returns {Promise<'alive'|'dead'|'blocked'>}
   */
  async settle (timeoutMs = 2000) {
    if (!this.alive) return 'dead'
    const reply = await this.#ask('stats', timeoutMs)
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
    // without /proc (or in portable mode) the child reports its RSS itself (grader/lab-child.js)
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
 * Fresh labs for memory figures: each measurement gets a lab process that
 * has served nothing but its warm-up, as the benches measure
 * (lib/measure/fresh-server.js), on a port of its own. The next one starts while
 * the current one is measured, so a fresh process per point costs no wait
 * (starting one is mostly compiling the lab's modules: a second or more on
 * a busy machine). The main lab, the one the dashboard watches, stays up.
 */
export class FreshLabs {
  #options
  #spare = null
  #started = []

  /** @param {object} options as for GradeLab; the port is always a free one */
  constructor (options) {
    this.#options = { ...options, port: 0, onCancel: null }
  }

  /**
   * A lab that has served nothing yet.
   * @param {boolean} [another] start the next one now, for the next measurement
   * @returns {Promise<GradeLab>}
   */
  async take (another = true) {
    const next = this.#spare ?? this.#start()
    this.#spare = another ? this.#start() : null
    return next
  }

  /** Stop the labs taken so far; a spare waits for the next take(). */
  async releaseTaken () {
    const spare = this.#spare
    const taken = this.#started.filter(function notSpare (starting) { return starting !== spare })
    this.#started = spare === null ? [] : [spare]
    await stopAll(taken)
  }

  /** Stop every lab taken or started, a spare nobody took included. */
  async close () {
    const labs = this.#started
    this.#started = []
    this.#spare = null
    await stopAll(labs)
  }

  #start () {
    const lab = new GradeLab(this.#options)
    const starting = lab.start().then(function started () { return lab })
    // a spare that failed to start is reported by take(), not as an unhandled rejection
    starting.catch(function reportedByTake () {})
    this.#started.push(starting)
    return starting
  }
}

function stopAll (startingLabs) {
  return Promise.all(startingLabs.map(async function stopWhenStarted (starting) {
    const lab = await starting.catch(function failedToStart () { return null })
    await lab?.stop()
  }))
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
