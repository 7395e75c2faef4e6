/**
 * What the grader reads of a service from outside, where it knows its pid:
 * the requests counted at its port, its tree's connections, CPU time and
 * memory. The base of a started and a watched service, and the pieces every
 * kind of service shares.
 */
import { settle } from '../process/probe.js'
import { heldConnections, treeCpuMs, treePids } from '../process/process-tree.js'
import { measureTree } from '../process/tree-memory.js'
import { procAvailable } from '../../lib/util/platform.js'

/**
 * A service whose pid the grader knows. StartedService and WatchedService
 * set `tree` (the root of its process tree) and `requests` (the count of
 * requests at its port) as they start it or find it; `killedPeak` says what
 * RSS it was killed at, if the grader killed it.
 */
export class ServiceOnPid {
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
  settle (timeoutMs) {
    return settle(this, this.origin, timeoutMs)
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
   * The tree's peak over `load` (grader/process/tree-memory.js). No garbage
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

/**
 * What is left after the requests: the grader's own tally beside the
 * connections the kernel shows held (null where they cannot be read, and
 * `unread` says why).
 */
export function statsOf (tally, held, unread) {
  const t = tally ?? { sent: 0, answered: 0, open: 0 }
  return { calls: t.sent, answered: t.answered, unanswered: t.open, pending: held, open: held, source: held === null ? null : 'kernel', unread: held === null ? unread : null }
}

/** A start that failed: the grading stops with the message on the card. */
export function startFailed (message) {
  const err = new Error(message)
  err.code = 'START_FAILED'
  return err
}
