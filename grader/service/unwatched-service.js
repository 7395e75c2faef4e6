/** A service the grader has no pid of: reached over HTTP only, its answers judged, its memory not (`measurable` false). */
import { performance } from 'node:perf_hooks'
import { countRequests } from '../checks/client.js'
import { PROBE_TIMEOUT_MS, probe } from '../process/probe.js'
import { startFailed, statsOf } from './service-on-pid.js'

export class UnwatchedService {
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

  /** Throws `code` 'START_FAILED' when nothing answers at the URL. */
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
