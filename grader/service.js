/**
 * A service graded where it runs: an ingest endpoint in any language,
 * reached over HTTP at the URL the grader is given, as the graded target
 * the checks use in place of the student's process (grader/student-process.js).
 * Each kind answers the same questions (its URL, whether it is alive, its
 * memory over a load, what it leaves pending), as far as the grader can
 * know them:
 *
 * - **StartedService** (`--start "CMD"`): the grader runs the command in a
 *   process group of its own with `PORT` in its environment, waits until it
 *   answers HTTP, and owns it as it owns a student's process: its tree's
 *   memory from outside (the kernel's peak where /proc is, `ps` samples
 *   where not), its output, its exit code or signal, its connections; killed
 *   past the grader's budget, started again for the next check or figure.
 * - **WatchedService** (`--pid N`): a process already running. Its memory
 *   and connections are read from outside as a started one's; it is never
 *   signalled (not even paused or killed past the budget: the card says when
 *   it passed it), and a process that exits is not started again.
 * - **UnwatchedService** (neither): answers only. Memory cannot be judged
 *   (`measurable` false), nor what the process holds.
 *
 * ServiceLab is the pair a service grading runs on (as GradeLab is a
 * handler's): the reference lab for the textbook route, the lab's routes
 * and the dashboard, and the service. A service listens on one port, so a
 * fresh process for a memory figure is the service started again (the one
 * before it stopped), not a second one beside it (ServiceFresh).
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { execFileSync, spawn } from 'node:child_process'
import { isIP } from 'node:net'
import { performance } from 'node:perf_hooks'
import { countRequests } from './client.js'
import { FreshLabs, ReferenceLab } from './lab.js'
import { cpuMs, heldConnections, processRuns, signalTree, treeAlive, treePids, treeStopped } from './process-tree.js'
import { crashLine, probe } from './student-process.js'
import { measureTree, watchTree, watchWithinBudget } from './tree-memory.js'
import { procAvailable } from '../lib/util/platform.js'

const MiB = 1024 * 1024
/** How long a started service may take to answer its first request. */
export const SERVICE_START_MS = 30_000
const PROBE_TIMEOUT_MS = 2000
const PROBE_PAUSE_MS = 100
/** After SIGTERM, before SIGKILL. */
const STOP_GRACE_MS = 2000
const GONE_TIMEOUT_MS = 5000
const PAUSE_TIMEOUT_MS = 1000
/** Characters that make a command the shell's to read: without them it is split on blanks and run directly. */
const SHELL_SYNTAX = /[|&;<>()$`\\"'*?[\]#~={}%!\n]/

/**
 * Whether `url` is one the grader may aim its load at without --allow-remote:
 * a loopback address (127.0.0.0/8, ::1) or `localhost`.
 * @param {string} url
 * @returns {{ ok: boolean, url: URL|null, loopback: boolean, port: number|null, problem: string|null }}
 */
export function classifyUrl (url) {
  let parsed
  try {
    parsed = new URL(url)
  } catch {
    return { ok: false, url: null, loopback: false, port: null, problem: `not a URL: ${url}` }
  }
  if (parsed.protocol !== 'http:') return { ok: false, url: parsed, loopback: false, port: null, problem: `only http:// URLs are graded, got ${parsed.protocol}//` }
  const port = parsed.port === '' ? 80 : Number(parsed.port)
  return { ok: true, url: parsed, loopback: isLoopback(parsed.hostname), port, problem: null }
}

/**
 * @param {string} hostname as URL gives it (`[::1]` with its brackets)
 * @returns {boolean}
 */
export function isLoopback (hostname) {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase()
  if (host === 'localhost' || host.endsWith('.localhost')) return true
  if (isIP(host) === 4) return host.startsWith('127.')
  if (isIP(host) === 6) return host === '::1' || /^::ffff:127\./.test(host) || /^(0+:){7}0*1$/.test(host)
  return false
}

/**
 * How a command line is run: split on blanks and run directly when it holds
 * no shell syntax (so the pid the grader knows is the service's own), else
 * by `sh -c`.
 * @param {string} command
 * @returns {{ file: string, args: string[] }}
 */
export function commandLine (command) {
  const words = command.trim().split(/\s+/).filter(Boolean)
  if (words.length === 0) throw new TypeError('--start needs a command')
  if (SHELL_SYNTAX.test(command)) return { file: 'sh', args: ['-c', command] }
  return { file: words[0], args: words.slice(1) }
}

/**
 * The process groups of the services this grader started and that still
 * run: killed when the grader exits, however it exits short of SIGKILL (for
 * which the parent-death signal stands in, dyingWithTheGrader).
 */
const startedGroups = new Set()
process.once('exit', function stopStartedServices () {
  for (const pgid of startedGroups) {
    try {
      process.kill(-pgid, 'SIGKILL')
    } catch {
      // gone already
    }
  }
})

let setprivFound = null

/**
 * The command run under `setpriv --pdeathsig SIGKILL` where Linux has setpriv
 * (it execs the command in place, so the pid is the service's): a grader
 * that is killed takes the service with it. A shell's children are not
 * covered; the exit handler above is.
 * @param {{ file: string, args: string[] }} line
 */
function dyingWithTheGrader (line) {
  if (process.platform !== 'linux') return line
  if (setprivFound === null) {
    try {
      execFileSync('setpriv', ['--version'], { stdio: 'ignore', timeout: 5000 })
      setprivFound = true
    } catch {
      setprivFound = false
    }
  }
  return setprivFound ? { file: 'setpriv', args: ['--pdeathsig', 'SIGKILL', '--', line.file, ...line.args] } : line
}

/**
 * What a service whose process the grader knows answers from outside: its
 * requests counted at its port, its tree's connections, CPU time and memory.
 * StartedService and WatchedService set `tree` (the root of its process tree)
 * and `requests` (the count of requests at its port) as they start it or
 * find it; `killedPeak` says what RSS it was killed at, if the grader killed it.
 */
class ServiceOnPid {
  /** @param {URL} url */
  constructor (url) {
    this.endpoint = url.href
    this.origin = url.origin
    this.port = Number(url.port || 80)
    this.tree = null
    this.requests = null
    this.deaths = 0
    this.lastDeath = null
    this.maxRss = 0
    /** Its memory can be read from outside. */
    this.measurable = true
    this.label = 'the service'
  }

  /** The service has one endpoint: every check's body goes there. */
  urlOf () {
    return this.endpoint
  }

  /** @returns {Promise<'alive'|'dead'|'blocked'>} as StudentProcess.settle */
  async settle (timeoutMs = PROBE_TIMEOUT_MS) {
    return settleBy(this, timeoutMs)
  }

  async stats () {
    if (!this.alive) return null
    return statsOf(this.requests, procAvailable() ? heldConnections(treePids(this.tree), this.port) : null, 'no /proc')
  }

  /** The tree's CPU time in ms (every member /proc shows), null without /proc. */
  cpuMs () {
    return this.alive ? treeCpuMs(this.tree) : null
  }

  /**
   * The tree's peak over `load` (grader/tree-memory.js). No garbage
   * collection is asked for first: the service is not the lab's code, and a
   * signal it does not expect could end it. Its idle figure is what it
   * holds between requests.
   */
  measure (load) {
    const service = this
    const pid = this.pid
    return measureTree({
      root: this.tree,
      alive: function stillAlive () { return service.alive },
      killedPeak: function killedAt () { return service.killedPeak(pid) }
    }, load)
  }

  /** The RSS the grader killed process `pid` at, or null. */
  killedPeak () {
    return null
  }
}

/** A service the grader started, and owns. */
export class StartedService extends ServiceOnPid {
  #options
  #child = null
  #output = ''
  #exited = null
  #exitedPromise = null
  #stopping = false
  #listening = null
  #watch = null

  /**
   * @param {{ command: string, url: URL, budget: number, startMs?: number }} options
   *   `url`: the endpoint; its port is the service's `PORT`; `budget`: RSS in bytes past which the tree is killed
   */
  constructor (options) {
    super(options.url)
    this.#options = { ...options, startMs: options.startMs ?? SERVICE_START_MS }
    this.pid = null
    /** The grader started it: it may stop it, pause it, and start it again. */
    this.owned = true
  }

  get alive () {
    return this.#child !== null && this.#exited === null
  }

  output () {
    return this.#output
  }

  /**
   * Run the command and wait until it answers HTTP.
   * @throws {Error} `code` 'START_FAILED' when it exits first or never answers (the message says which, and why)
   */
  async start () {
    if (await probe(this.origin, PROBE_TIMEOUT_MS)) {
      throw startFailed(`something already answers at ${this.origin}: the lab starts the service itself there. Stop what is running, or grade it with --pid`)
    }
    const { file, args } = dyingWithTheGrader(commandLine(this.#options.command))
    const child = spawn(file, args, {
      // a process group of its own, so that the whole tree can be measured and stopped at once
      detached: true,
      env: { ...process.env, PORT: String(this.port) },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    this.#child = child
    this.#exited = null
    this.#stopping = false
    this.pid = child.pid ?? null
    this.tree = { pid: child.pid, pgid: child.pid }
    if (child.pid !== undefined) startedGroups.add(child.pid)
    const service = this
    child.stdout.setEncoding('utf8')
    child.stderr.setEncoding('utf8')
    child.stdout.on('data', function keep (chunk) { service.#keep(chunk) })
    child.stderr.on('data', function keep (chunk) { service.#keep(chunk) })
    this.#exitedPromise = new Promise(function waitForExit (resolve) {
      child.once('exit', function onExit (code, signal) {
        service.#exited = { code, signal }
        service.#onExit(child, code, signal)
        resolve()
      })
      child.once('error', function spawnFailed (err) {
        service.#keep(`could not start ${file}: ${err.message}\n`)
        if (service.#exited !== null) return
        service.#exited = { code: null, signal: null }
        resolve()
      })
    })
    const ready = await this.#waitUntilAnswering()
    if (!ready.ok) {
      await this.stop()
      throw startFailed(ready.message)
    }
    this.#listening = child
    this.requests = countRequests(this.origin)
    this.#startWatch()
  }

  /** Stop the whole tree (SIGTERM, SIGKILL after a grace) and wait until nothing of it runs; not a death. */
  async stop () {
    this.#stopping = true
    this.#watch?.stop()
    this.#watch = null
    this.requests?.stop()
    this.requests = null
    if (this.#child === null || this.tree?.pid === undefined) return
    const root = this.tree
    if (this.alive) {
      signalTree(root, 'SIGCONT')
      signalTree(root, 'SIGTERM')
      const grace = setTimeout(function forceKill () { signalTree(root, 'SIGKILL') }, STOP_GRACE_MS)
      await this.#exitedPromise
      clearTimeout(grace)
    }
    const until = Date.now() + GONE_TIMEOUT_MS
    while (treeAlive(root) && Date.now() < until) {
      signalTree(root, 'SIGKILL')
      await sleep(20)
    }
  }

  /** @param {NodeJS.Signals} signal to the whole tree */
  signal (signal) {
    if (this.alive) signalTree(this.tree, signal)
  }

  /** Stop the tree (SIGSTOP) while a reference route is timed, and wait until /proc shows it stopped. */
  async pause () {
    this.signal('SIGSTOP')
    const until = Date.now() + PAUSE_TIMEOUT_MS
    while (this.alive && treeStopped(this.tree) === false && Date.now() < until) await sleep(1)
  }

  /** The RSS the memory watch killed process `pid` at, or null. */
  killedPeak (pid) {
    return this.lastDeath?.reason === 'memory' && this.lastDeath.pid === pid ? this.lastDeath.rss : null
  }

  async #waitUntilAnswering () {
    const until = Date.now() + this.#options.startMs
    const exited = this.#exitedPromise.then(function no () { return false })
    while (this.#exited === null && Date.now() < until) {
      const answered = await Promise.race([probe(this.origin, Math.min(PROBE_TIMEOUT_MS, Math.max(1, until - Date.now()))), exited])
      if (answered && this.alive) return { ok: true }
      if (this.#exited === null) await sleep(PROBE_PAUSE_MS)
    }
    if (this.#exited === null) {
      return { ok: false, message: `"${this.#options.command}" did not answer at ${this.origin} within ${this.#options.startMs / 1000} s (does it listen on PORT=${this.port}, on 127.0.0.1?)${lastLines(this.#output)}` }
    }
    const { code, signal } = this.#exited
    return { ok: false, message: `"${this.#options.command}" exited (${signal ?? `exit code ${code}`}) before it answered at ${this.origin}${lastLines(this.#output)}` }
  }

  #keep (chunk) {
    this.#output += chunk
    // a service that logs without end must not make the grader's memory its own
    if (this.#output.length > 1_000_000) this.#output = this.#output.slice(-500_000)
  }

  #startWatch () {
    this.#watch = watchWithinBudget(this, this.tree, this.#options.budget, function killed (rss, budget) {
      return `the service was killed: its RSS reached ${(rss / MiB).toFixed(0)} MiB, past the grader's budget of ${(budget / MiB).toFixed(0)} MiB (the lab started it, so it starts it again)`
    })
  }


  #onExit (child, code, signal) {
    if (child !== this.#child) return
    this.#watch?.stop()
    this.#watch = null
    // whatever it left behind goes with it
    signalTree(this.tree, 'SIGKILL')
    startedGroups.delete(child.pid)
    if (this.#stopping || this.#listening !== child) return
    this.deaths++
    if (this.lastDeath?.reason === 'memory' && this.lastDeath.pid === child.pid) return
    this.lastDeath = { reason: 'crash', pid: child.pid, code, signal, rss: null, message: `the service died (${signal ?? `exit code ${code}`}): ${crashLine(this.#output)}` }
  }
}

/** A running process the grader was given the pid of: read from outside, never signalled. */
export class WatchedService extends ServiceOnPid {
  #watch = null
  #gone = false
  #options

  /**
   * @param {{ pid: number, url: URL, budget: number }} options `budget`: past it the card says so; nothing is killed
   */
  constructor (options) {
    super(options.url)
    this.#options = options
    this.pid = options.pid
    this.tree = { pid: options.pid, pgid: null, uid: null }
    /** The RSS at which it first passed the budget, or null: it is reported, not killed. */
    this.overBudget = null
    this.owned = false
  }

  get alive () {
    if (this.#gone) return false
    if (processRuns(this.pid)) return true
    this.#gone = true
    this.#watch?.stop()
    this.deaths++
    this.lastDeath = { reason: 'crash', pid: this.pid, code: null, signal: null, rss: null, message: `the service (pid ${this.pid}) exited: the lab did not start it, so its exit code is its parent's to read, and it is not started again` }
    return false
  }

  /** Its output is its own: the grader does not see it. */
  output () {
    return ''
  }

  /** @throws {Error} `code` 'START_FAILED' when there is no such process, or nothing answers at the URL */
  async start () {
    if (!processRuns(this.pid)) throw startFailed(`no process with pid ${this.pid}`)
    if (!(await probe(this.origin, PROBE_TIMEOUT_MS))) throw startFailed(`nothing answers at ${this.origin}`)
    this.requests = countRequests(this.origin)
    const service = this
    const budget = this.#options.budget
    this.#watch = watchTree(this.tree, function noteMemory (memory) {
      if (memory.rss > service.maxRss) service.maxRss = memory.rss
      if (budget > 0 && memory.rss > budget && service.overBudget === null) service.overBudget = memory.rss
    })
  }

  /** Stop watching; the process goes on. */
  async stop () {
    this.#watch?.stop()
    this.#watch = null
    this.requests?.stop()
    this.requests = null
  }

  /** Not the grader's to signal. */
  signal () {}

  async pause () {}
}

/** A service the grader has no pid of: it judges answers only. */
export class UnwatchedService {
  /** @param {{ url: URL }} options */
  constructor (options) {
    this.requests = null
    this.endpoint = options.url.href
    this.origin = options.url.origin
    this.port = Number(options.url.port || 80)
    this.pid = null
    this.deaths = 0
    this.lastDeath = null
    this.maxRss = 0
    this.measurable = false
    this.owned = false
    this.label = 'the service'
  }

  /** Not known without a pid: taken as alive, and settle() says whether it answers. */
  get alive () {
    return true
  }

  output () {
    return ''
  }

  urlOf () {
    return this.endpoint
  }

  /** @throws {Error} `code` 'START_FAILED' when nothing answers at the URL */
  async start () {
    if (!(await probe(this.origin, PROBE_TIMEOUT_MS))) throw startFailed(`nothing answers at ${this.origin}`)
    this.requests = countRequests(this.origin)
  }

  async stop () {
    this.requests?.stop()
    this.requests = null
  }

  signal () {}

  async pause () {}

  /** Without a pid a service that stopped answering cannot be told from one that is gone: both are 'blocked'. */
  async settle (timeoutMs = PROBE_TIMEOUT_MS) {
    return (await probe(this.origin, timeoutMs)) ? 'alive' : 'blocked'
  }

  async stats () {
    return statsOf(this.requests, null, 'no pid')
  }

  cpuMs () {
    return null
  }

  /** The load runs; nothing is read (`growth` null, and `measurable` false says why). */
  async measure (load) {
    const started = performance.now()
    const outcome = await load()
    return { outcome, ms: performance.now() - started, idleRss: null, peakRss: null, growth: null, peakSource: null, unreadable: false }
  }
}

/**
 * The pair a service grading runs on: the reference lab, and the service
 * as it runs now (`current`: started again for a fresh figure, or after
 * it died or hung, when the lab started it).
 */
export class ServiceLab {
  #options
  #retiredDeaths = 0
  #retiredLastDeath = null
  #overBudget = null

  /**
   * @param {{ mode: 'started'|'watched'|'unwatched', url: URL, command?: string, pid?: number, budget: number,
   *   port?: number, host?: string, dataDir?: string, onCancel?: (id: string) => void, startMs?: number }} options
   *   `port`, `host`: the reference lab's (its dashboard)
   */
  constructor (options) {
    this.#options = { port: 0, host: '127.0.0.1', ...options }
    this.mode = options.mode
    this.reference = new ReferenceLab({ port: this.#options.port, host: this.#options.host, dataDir: this.#options.dataDir, budget: this.#options.budget, onCancel: this.#options.onCancel })
    this.current = this.#newTarget()
    this.label = 'the service'
    /** The fresh process of a figure is the service itself, started again: a hang there is the main one's. */
    this.freshIsMain = true
    /** Set by the handler's lab; a service has none. */
    this.isolation = null
    this.kind = 'service'
  }

  get deaths () { return this.#retiredDeaths + this.current.deaths }
  get lastDeath () { return this.current.lastDeath ?? this.#retiredLastDeath }
  get alive () { return this.current.alive && this.reference.alive }
  get url () { return this.reference.url }
  get pid () { return this.current.pid }
  /** Whether its memory can be read at all (a pid is known). */
  get measurable () { return this.current.measurable }
  /** Whether the grader may start it again: only a service it started. */
  get restartable () { return this.mode === 'started' }
  get maxRss () { return this.current.maxRss }
  /** Whether the lab started it (its output is the grader's to read, and it may pause and stop it). */
  get owned () { return this.current.owned }

  /** What the card should say beside the checks: a watched service that passed the budget (it is not killed). */
  notes () {
    const over = Math.max(this.#overBudget ?? 0, this.current.overBudget ?? 0)
    if (over === 0) return []
    return [`the service's RSS reached ${(over / MiB).toFixed(0)} MiB, past the grader's budget of ${(this.#options.budget / MiB).toFixed(0)} MiB: the lab did not start it, so it was not killed`]
  }

  output () {
    return this.current.output()
  }

  urlOf (route) {
    return route === 'student' ? this.current.urlOf() : `${this.reference.url}/${route}`
  }

  /**
   * Start both; when either fails, stop the other.
   * @throws {Error} `code` 'START_FAILED' when the service did not start or cannot be reached (the message says why)
   */
  async start () {
    const [reference, service] = await Promise.allSettled([this.reference.start(), this.current.start()])
    if (reference.status === 'fulfilled' && service.status === 'fulfilled') return
    await this.stop()
    throw service.status === 'rejected' ? service.reason : reference.reason
  }

  /** After a death or a hang: the service started again (only when the lab started it), and the reference lab if it died. */
  async restart () {
    await this.renew()
    if (!this.reference.alive) await this.reference.restart()
  }

  /**
   * The service as a process that has served nothing yet: started again
   * when the lab started it, else a new watch on the same process (a figure
   * then stands on a process that has served before, and its death count
   * starts again from nought).
   * @returns {Promise<StartedService|WatchedService|UnwatchedService>}
   */
  async renew () {
    const old = this.current
    await old.stop()
    this.#retiredDeaths += old.deaths
    this.#retiredLastDeath = old.lastDeath ?? this.#retiredLastDeath
    if (old.overBudget) this.#overBudget = Math.max(this.#overBudget ?? 0, old.overBudget)
    this.current = this.#newTarget()
    if (this.mode === 'started') await this.current.start()
    // one the lab did not start may be gone or not answering: the check's own requests and settle() say so
    else await this.current.start().catch(function reportedByTheCheck () {})
    return this.current
  }

  async stop () {
    await Promise.all([this.current.stop(), this.reference.stop()])
  }

  settle (timeoutMs) {
    return this.current.settle(timeoutMs)
  }

  stats () {
    return this.current.stats()
  }

  cpuMs () {
    return this.current.cpuMs()
  }

  measure (load) {
    return this.current.measure(load)
  }

  runStep (step) {
    this.reference.runStep(step)
  }

  /** Run `work` (timing a reference route) with the service stopped, when the lab owns it; a service it does not own runs on. */
  async whileStudentsPaused (work) {
    const service = this.current
    if (!service.owned || !service.alive) return work()
    await service.pause()
    try {
      return await work()
    } finally {
      service.signal('SIGCONT')
    }
  }

  #newTarget () {
    const { mode, url, command, pid, budget, startMs } = this.#options
    if (mode === 'started') return new StartedService({ command, url, budget, startMs })
    if (mode === 'watched') return new WatchedService({ pid, url, budget })
    return new UnwatchedService({ url })
  }
}

/**
 * Fresh processes for the memory figures and the bombs (as FreshLabs gives
 * a handler's): for the service, the service renewed (ServiceLab.renew); for
 * the lab's routes, reference labs of their own.
 */
export class ServiceFresh {
  #lab
  #references

  /** @param {ServiceLab} lab @param {{ host?: string, dataDir?: string, budget: number }} options */
  constructor (lab, options) {
    this.#lab = lab
    this.#references = new FreshLabs({ handler: null, ...options })
  }

  /**
   * @param {boolean|string} [next] as FreshLabs.take: only a reference lab is started ahead (the service has one port)
   * @param {string} [route]
   */
  async take (next = true, route = 'student') {
    if (route !== 'student') return this.#references.take(next === true || (typeof next === 'string' && next !== 'student') ? next : false, route)
    return this.#lab.renew()
  }

  releaseTaken () {
    return this.#references.releaseTaken()
  }

  close () {
    return this.#references.close()
  }
}

async function settleBy (target, timeoutMs) {
  if (!target.alive) return 'dead'
  if (await probe(target.origin, timeoutMs)) return 'alive'
  if (!target.alive) return 'dead'
  await sleep(200)
  return target.alive ? 'blocked' : 'dead'
}

function statsOf (tally, held, unread) {
  const t = tally ?? { sent: 0, answered: 0, open: 0 }
  return { calls: t.sent, answered: t.answered, unanswered: t.open, pending: held, open: held, source: held === null ? null : 'kernel', unread: held === null ? unread : null }
}

function treeCpuMs (root) {
  if (!procAvailable()) return null
  let total = 0
  for (const pid of treePids(root)) total += cpuMs(pid) ?? 0
  return total
}

/** Whether the process runs (a zombie does not: it is gone, its parent has not read its exit yet). */

function startFailed (message) {
  const err = new Error(message)
  err.code = 'START_FAILED'
  return err
}

function lastLines (output) {
  const lines = output.trim().split('\n').filter(Boolean).slice(-3)
  return lines.length === 0 ? '' : `; its last output: ${lines.join(' | ').slice(0, 600)}`
}
