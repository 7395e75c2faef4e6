/** A service the grader starts (`--start "CMD"`) and owns: its own group with `PORT` set, measured, killed past the budget. */
import { setTimeout as sleep } from 'node:timers/promises'
import { execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { PROJECT_ROOT } from '../../lib/util/project-root.js'
import { MOST_SOURCE_BYTES, placeInService, SiteReader, sourceOnDisk } from '../process/allocation-sites.js'
import { countRequests } from '../checks/client.js'
import { crashLine, keepTail, outputDrained } from '../process/output.js'
import { PROBE_TIMEOUT_MS, probe } from '../process/probe.js'
import { signalTree, treeAlive, treeStopped } from '../process/process-tree.js'
import { watchWithinBudget } from '../process/tree-memory.js'
import { ServiceOnPid, startFailed } from './service-on-pid.js'
import { MiB } from '../../lib/util/units.js'

/** How long a started service may take to answer its first request. */
const SERVICE_START_MS = 30_000
const PROBE_PAUSE_MS = 100
const STOP_GRACE_MS = 2000
const GONE_TIMEOUT_MS = 5000
const PAUSE_TIMEOUT_MS = 1000
/** Characters that make a command the shell's to read: without them it is split on blanks and run directly. */
const SHELL_SYNTAX = /[|&;<>()$`\\"'*?[\]#~={}%!\n]/
/** What a sampled service's Node processes load first (grader/student/sites-preload.js). */
const SITES_PRELOAD = pathToFileURL(path.join(PROJECT_ROOT, 'grader', 'student', 'sites-preload.js')).href

/** Split on blanks and run directly when free of shell syntax (so the known pid is the service's), else `sh -c`. */
function commandLine (command) {
  const words = command.trim().split(/\s+/).filter(Boolean)
  if (words.length === 0) throw new TypeError('--start needs a command')
  if (SHELL_SYNTAX.test(command)) return { file: 'sh', args: ['-c', command] }
  return { file: words[0], args: words.slice(1) }
}

/** The process groups of started services still running: killed when the grader exits short of SIGKILL. */
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

/** The command under `setpriv --pdeathsig SIGKILL` where Linux has it: a killed grader takes the service along. */
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

export class StartedService extends ServiceOnPid {
  #options
  #child = null
  #output = ''
  #exited = null
  #exitedPromise = null
  #stopping = false
  #listening = null
  #watch = null
  #sitesDir = null

  /** `url`'s port is the service's `PORT`; `budget`: RSS bytes past which it is killed; `sampled`: load the lab's sampler. */
  constructor (options) {
    super(options.url)
    this.#options = { ...options, startMs: options.startMs ?? SERVICE_START_MS }
    this.pid = null
    /** The grader started it: it may stop it, pause it, and start it again. */
    this.owned = true
    /** With `sampled`: the allocation sites its Node processes write (allocation-sites.js); else null. */
    this.sites = null
  }

  get alive () {
    return this.#child !== null && this.#exited === null
  }

  output () {
    return this.#output
  }

  /** Run the command and wait until it answers HTTP; `code` 'START_FAILED' when it exits first or never answers. */
  async start () {
    if (await probe(this.origin, PROBE_TIMEOUT_MS)) {
      throw startFailed(`something already answers at ${this.origin}: the lab starts the service itself there. ` +
        `Stop what is running, or grade it with --pid`)
    }
    const { file, args } = dyingWithTheGrader(commandLine(this.#options.command))
    const child = spawn(file, args, {
      // a process group of its own, so that the whole tree can be measured and stopped at once
      detached: true,
      env: { ...process.env, PORT: String(this.port), ...this.#sitesEnv() },
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
        // judged once its last words are read (grader/process/output.js)
        outputDrained(child).then(function judge () {
          service.#exited = { code, signal }
          service.#onExit(child, code, signal)
          resolve()
        })
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

  /** For a sampled run: a folder for the tables, and the preload added to NODE_OPTIONS (a non-Node process ignores both). */
  #sitesEnv () {
    if (this.#options.sampled !== true) return {}
    this.#sitesDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-sites-'))
    const dir = this.#sitesDir
    this.sites = new SiteReader({
      files: function tables () {
        try {
          const tables = fs.readdirSync(dir).filter(function table (name) { return name.endsWith('.json') })
          return tables.map(function full (name) { return path.join(dir, name) })
        } catch {
          return []
        }
      },
      place: placeInService(PROJECT_ROOT),
      source: sourceOnDisk(MOST_SOURCE_BYTES)
    })
    const options = [process.env.NODE_OPTIONS, `--import=${JSON.stringify(SITES_PRELOAD)}`].filter(Boolean).join(' ')
    return { NODE_OPTIONS: options, STREAMLAB_SITES_DIR: dir }
  }

  /** Stop the whole tree (SIGTERM, SIGKILL after a grace) and wait until nothing of it runs; not a death. */
  async stop () {
    try {
      await this.#stopTree()
    } finally {
      if (this.#sitesDir !== null) fs.rmSync(this.#sitesDir, { recursive: true, force: true })
      this.#sitesDir = null
    }
  }

  async #stopTree () {
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

  signal (signal) {
    if (this.alive) signalTree(this.tree, signal)
  }

  /** Stop the tree (SIGSTOP) while a reference route is timed, and wait until /proc shows it stopped. */
  async pause () {
    this.signal('SIGSTOP')
    const until = Date.now() + PAUSE_TIMEOUT_MS
    while (this.alive && treeStopped(this.tree) === false && Date.now() < until) await sleep(1)
  }

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
      return { ok: false, message: `"${this.#options.command}" did not answer at ${this.origin} within ${this.#options.startMs / 1000} ` +
        `s (does it listen on PORT=${this.port}, on 127.0.0.1?)${lastLines(this.#output)}` }
    }
    const { code, signal } = this.#exited
    return { ok: false, message: `"${this.#options.command}" exited (${signal ?? `exit code ${code}`}) before it answered at ` +
      `${this.origin}${lastLines(this.#output)}` }
  }

  #keep (chunk) {
    this.#output = keepTail(this.#output, chunk)
  }

  #startWatch () {
    this.#watch = watchWithinBudget(this, this.tree, this.#options.budget, function killed (rss, budget) {
      return `the service was killed: its RSS reached ${(rss / MiB).toFixed(0)} MiB, past the grader's budget of ` +
        `${(budget / MiB).toFixed(0)} MiB (the lab started it, so it starts it again)`
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
    const message = `the service died (${signal ?? `exit code ${code}`}): ${crashLine(this.#output)}`
    this.lastDeath = { reason: 'crash', pid: child.pid, code, signal, rss: null, message }
  }
}

function lastLines (output) {
  const lines = output.trim().split('\n').filter(Boolean).slice(-3)
  return lines.length === 0 ? '' : `; its last output: ${lines.join(' | ').slice(0, 600)}`
}
