/** The grader's side of the student's process: spawned in its own group on a socket it opens, judged from outside only. */
import { setTimeout as sleep } from 'node:timers/promises'
import fs from 'node:fs'
import path from 'node:path'
import { countRequests } from '../checks/client.js'
import { crashLine, keepTail, outputDrained } from '../process/output.js'
import { PROBE_TIMEOUT_MS, probe, settle } from '../process/probe.js'
import { cpuMs, heldConnections, signalTree, treeAlive, treePids, treeStopped } from '../process/process-tree.js'
import { measureTree, watchWithinBudget } from '../process/tree-memory.js'
import { placeInSubmission, SiteReader, sourceInSnapshot } from '../process/allocation-sites.js'
import { launchStudent } from './student-launch.js'
import { EXIT_LOAD_FAILED, LOAD_FAILED_MARK } from './student-route.js'
import { MiB } from '../../lib/util/units.js'

const START_TIMEOUT_MS = 20_000
const PROBE_PAUSE_MS = 50
/** After SIGUSR2: time for two full collections of a small heap. */
const GC_PAUSE_MS = 100
const GONE_TIMEOUT_MS = 5000
/** A stopped process shows as stopped in /proc within a scheduler tick or two. */
const PAUSE_TIMEOUT_MS = 1000

/** A grading's student processes: paused together while a reference route is timed, stopped together at the end. */
export class StudentProcesses {
  #members = new Set()

  add (student) {
    this.#members.add(student)
  }

  delete (student) {
    this.#members.delete(student)
  }

  /** Run `work` with every student process stopped (SIGSTOP, and /proc showing it), and let them go on after. */
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
  #copyDir = null
  #ownLabCopy = null
  #stopping = false
  #listening = null
  #exited = null
  #exitedPromise = null

  /** `budget`: RSS bytes past which the tree is killed; `students`: the set it joins; `sources`: code its sites are shown with. */
  constructor (options) {
    this.#options = { host: '127.0.0.1', ...options }
    /** Deaths (crashed, or killed past the budget) since the first start. */
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
    /** How it is isolated (isolation.js IsolationFacts), once started. */
    this.isolation = null
    /** With `sampled`: its allocation sites, in the submission's files (grader/process/allocation-sites.js); else null. */
    this.sites = null
  }

  get alive () {
    return this.#child !== null && this.#exited === null
  }

  /** The process's stdout and stderr so far (its lifetime, across restarts): where a handler's errors are. */
  output () {
    return this.#output
  }

  /** This process serves /student alone. */
  urlOf (route) {
    if (route !== 'student') throw new Error(`the student's process serves POST /student only, not /${route}`)
    return `${this.url}/student`
  }

  /** Start it and wait until it answers HTTP; `code` 'LOAD_FAILED' when the module did not load or never served. */
  async start () {
    const launched = await launchStudent(this.#options)
    const { child, command } = launched
    this.#tmpDir = launched.tmpDir
    this.#copyDir = launched.copyDir
    this.#ownLabCopy = launched.ownLabCopy
    this.isolation = launched.facts
    this.#child = child
    this.#exited = null
    this.pid = child.pid
    this.port = launched.port
    this.url = launched.url
    this.#root = launched.root
    this.sites = launched.sites === null ? null : siteReader(launched.sites, this.#options.sources ?? new Map())
    this.#options.students?.add(this)
    const student = this
    child.stdin.on('error', function ignore () {})
    child.stdout.setEncoding('utf8')
    child.stderr.setEncoding('utf8')
    child.stdout.on('data', function keep (chunk) { student.#keep(chunk) })
    child.stderr.on('data', function keep (chunk) { student.#keep(chunk) })
    const exited = new Promise(function waitForExit (resolve) {
      child.once('exit', function onExit (code, signal) {
        // judged once its last words are read (grader/process/output.js)
        outputDrained(child).then(function judge () {
          if (student.#exited !== null && student.#child === child) return
          student.#exited = { code, signal }
          student.#onExit(child, code, signal)
          resolve()
        })
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
    // the budget holds from the first byte: a module that allocates as it loads is killed at it too
    this.#startWatch()
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
  }

  /** Start again after it died or hung, on a port of its own. */
  async restart () {
    await this.stop()
    this.#stopping = false
    await this.start()
  }

  /** Kill the whole tree and wait until nothing of it runs; not counted as a death. */
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
    for (const dir of [this.#tmpDir, this.#copyDir]) {
      if (dir !== null) fs.rmSync(dir, { recursive: true, force: true })
    }
    this.#tmpDir = null
    this.#copyDir = null
    this.#ownLabCopy?.close()
    this.#ownLabCopy = null
  }

  signal (signal) {
    if (this.alive && this.#root.pid !== undefined) signalTree(this.#root, signal)
  }

  /** SIGSTOP the tree and wait until /proc shows all of it stopped: signals land when the kernel next runs them. */
  async pause () {
    this.signal('SIGSTOP')
    const until = Date.now() + PAUSE_TIMEOUT_MS
    while (this.alive && treeStopped(this.#root) === false && Date.now() < until) await sleep(1)
  }

  /** Ask for two collections (SIGUSR2) and give them a moment; false when it is gone. Ignoring it only raises its idle figure. */
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

  /** After a check: 'alive', 'dead' (its exit counted by then) or 'blocked', from one request to a path no route answers. */
  settle (timeoutMs) {
    return settle(this, this.url, timeoutMs)
  }

  /** What is left after the requests: connections it holds (null without /proc), the grader's calls; null when it is gone. */
  async stats () {
    if (!this.alive) return null
    const held = heldConnections(treePids(this.#root), this.port)
    const tally = this.#tally ?? { sent: 0, answered: 0, open: 0 }
    const source = held === null ? null : 'kernel'
    return { calls: tally.sent, answered: tally.answered, unanswered: tally.open, pending: held, open: held, source }
  }

  /** CPU time used (/proc/<pid>/stat), in ms; null where /proc is missing or it is gone. */
  cpuMs () {
    return cpuMs(this.pid)
  }

  /** The tree's peak over `load`, garbage collected first (tree-memory.js measureTree): the process is never asked. */
  async measure (load) {
    await this.gc()
    const pid = this.pid
    const student = this
    return measureTree({
      root: this.#root,
      alive: function stillAlive () { return student.alive },
      killedPeak: function killedAt () {
        const death = student.lastDeath
        return death?.reason === 'memory' && death.pid === pid ? death.rss : null
      }
    }, load)
  }

  async #waitUntilServing (exited) {
    const until = Date.now() + START_TIMEOUT_MS
    let gone = false
    exited.then(function noted () { gone = true })
    while (!gone && Date.now() < until) {
      const probed = probe(this.url, Math.min(PROBE_TIMEOUT_MS, until - Date.now()))
      const answered = await Promise.race([probed, exited.then(function no () { return false })])
      if (answered && this.alive) return { ok: true }
      if (!gone) await sleep(PROBE_PAUSE_MS)
    }
    if (!gone) return { ok: false, message: `${path.basename(this.#options.handler)} did not start serving within ` +
      `${START_TIMEOUT_MS / 1000} s (its module may never finish ` +
      `loading${this.maxRss > 0 ? `; its RSS reached ${(this.maxRss / MiB).toFixed(0)} MiB` : ''})` }
    const { code, signal } = this.#exited
    const death = this.lastDeath
    if (death?.reason === 'memory' && death.pid === this.pid) {
      return { ok: false, message: `the student's process was killed at ${(death.rss / MiB).toFixed(0)} MiB while loading, past the ` +
        `grader's budget of ${(this.#options.budget / MiB).toFixed(0)} MiB` }
    }
    if (signal === 'SIGXCPU') {
      return { ok: false, message: `the student's process used up its CPU-time limit of ` +
        `${this.isolation.cpuSeconds} s while loading (SIGXCPU)` }
    }
    const marked = this.#output.split('\n').find(function reason (line) { return line.startsWith(LOAD_FAILED_MARK) })
    if (code === EXIT_LOAD_FAILED && marked) return { ok: false, message: marked.slice(LOAD_FAILED_MARK.length) }
    return { ok: false, message: `the student's process exited (${signal ?? `exit code ${code}`}) before it served: ` +
      `${this.#output.trim().split('\n').slice(-3).join(' | ').slice(0, 600)}` }
  }

  #keep (chunk) {
    this.#output = keepTail(this.#output, chunk)
  }

  #startWatch () {
    this.#watch = watchWithinBudget(this, this.#root, this.#options.budget, function killed (rss, budget) {
      return `the student's process was killed: its RSS reached ${(rss / MiB).toFixed(0)} MiB, past the grader's budget of ` +
        `${(budget / MiB).toFixed(0)} MiB`
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
    if (signal === 'SIGXCPU') {
      const message = `the student's process was stopped: its CPU time passed the grader's limit of ${this.isolation?.cpuSeconds} s ` +
        '(SIGXCPU)'
      this.lastDeath = { reason: 'cpu', pid: child.pid, code, signal, rss: null, message }
      return
    }
    const message = `the student's process died (${signal ?? `exit code ${code}`}): ${crashLine(this.#output)}`
    this.lastDeath = { reason: 'crash', pid: child.pid, code, signal, rss: null, message }
  }
}

/** The allocation sites a sampled child writes in its folder, its submission's files alone, their code from `sources`. */
function siteReader ({ file, labRoot, scope, submission }, sources) {
  return new SiteReader({
    files: function tableFile () { return [file] },
    place: placeInSubmission({ root: labRoot, seen: scope, given: submission }),
    source: sourceInSnapshot(sources)
  })
}
