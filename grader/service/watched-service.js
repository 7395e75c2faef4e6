/** A running service given by `--pid N`: read from outside, never signalled, not started again once it exits. */
import { countRequests } from '../checks/client.js'
import { PROBE_TIMEOUT_MS, probe } from '../process/probe.js'
import { processRuns } from '../process/process-tree.js'
import { watchTree } from '../process/tree-memory.js'
import { ServiceOnPid, startFailed } from './service-on-pid.js'

export class WatchedService extends ServiceOnPid {
  #watch = null
  #gone = false
  #options

  /** `budget`: past it the card says so; nothing is killed. */
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
    const message = `the service (pid ${this.pid}) exited: the lab did not start it, so its exit code is its parent's to read, ` +
      'and it is not started again'
    this.lastDeath = { reason: 'crash', pid: this.pid, code: null, signal: null, rss: null, message }
    return false
  }

  /** Its output is its own: the grader does not see it. */
  output () {
    return ''
  }

  /** Throws `code` 'START_FAILED' when there is no such process, or nothing answers at the URL. */
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
