/** What the grader reads from outside of a service whose pid it knows: requests at its port, connections, CPU, memory. */
import { settle } from '../process/probe.js'
import { heldConnections, treeCpuMs, treePids } from '../process/process-tree.js'
import { measureTree } from '../process/tree-memory.js'
import { procAvailable } from '../../lib/util/platform.js'

/** The base of StartedService and WatchedService, which set `tree` (its root) and `requests` (the count at its port). */
export class ServiceOnPid {
  constructor (url) {
    this.endpoint = url.href
    this.origin = url.origin
    this.port = Number(url.port || 80)
    this.tree = null
    this.requests = null
    this.deaths = 0
    this.lastDeath = null
    this.maxRss = 0
    this.measurable = true
    this.label = 'the service'
  }

  /** The service has one endpoint: every check's body goes there. */
  urlOf () {
    return this.endpoint
  }

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

  /** The tree's peak over `load` (tree-memory.js); no GC is asked: a signal it does not expect could end it. */
  measure (load) {
    const service = this
    const pid = this.pid
    return measureTree({
      root: this.tree,
      alive: function stillAlive () { return service.alive },
      killedPeak: function killedAt () { return service.killedPeak(pid) }
    }, load)
  }

  killedPeak () {
    return null
  }
}

/** The grader's tally beside the connections the kernel shows held (null where unreadable, and `unread` says why). */
export function statsOf (tally, held, unread) {
  const t = tally ?? { sent: 0, answered: 0, open: 0 }
  const source = held === null ? null : 'kernel'
  return { calls: t.sent, answered: t.answered, unanswered: t.open, pending: held, open: held, source, unread: source ? null : unread }
}

/** A start that failed: the grading stops with the message on the card. */
export function startFailed (message) {
  const err = new Error(message)
  err.code = 'START_FAILED'
  return err
}
