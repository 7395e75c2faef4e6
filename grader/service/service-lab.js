/**
 * The pair a service's grading runs on, as GradeLab is a handler's: the
 * reference lab (the textbook route, the lab's routes, the dashboard) and
 * the service as it runs now. A service listens on one port, so a fresh
 * process for a memory figure is the service started again, not a second
 * one beside it.
 */
import { FreshLabs } from '../lab/fresh-labs.js'
import { ReferenceLab } from '../lab/reference-lab.js'
import { StartedService } from './started-service.js'
import { UnwatchedService } from './unwatched-service.js'
import { WatchedService } from './watched-service.js'
import { MiB } from '../../lib/util/units.js'

/**
 * The reference lab, and the service as it runs now (`current`: started
 * again for a fresh figure, or after it died or hung, when the lab started it).
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
  async renew ({ sampled = false } = {}) {
    const old = this.current
    await old.stop()
    this.#retiredDeaths += old.deaths
    this.#retiredLastDeath = old.lastDeath ?? this.#retiredLastDeath
    if (old.overBudget) this.#overBudget = Math.max(this.#overBudget ?? 0, old.overBudget)
    this.current = this.#newTarget(sampled)
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

  /** Fresh processes for the memory figures and the bombs (ServiceFresh). */
  freshProcesses () {
    const { host, dataDir, budget } = this.#options
    return new ServiceFresh(this, { host, dataDir, budget })
  }

  #newTarget (sampled = false) {
    const { mode, url, command, pid, budget, startMs } = this.#options
    if (mode === 'started') return new StartedService({ command, url, budget, startMs, sampled })
    if (mode === 'watched') return new WatchedService({ pid, url, budget })
    return new UnwatchedService({ url })
  }
}

/**
 * Fresh processes for the memory figures and the bombs (as FreshLabs gives
 * a handler's): for the service, the service renewed (ServiceLab.renew); for
 * the lab's routes, reference labs of their own.
 */
class ServiceFresh {
  #lab
  #references
  #sampled = false

  /** @param {ServiceLab} lab @param {{ host?: string, dataDir?: string, budget: number }} options */
  constructor (lab, { host, dataDir, budget }) {
    this.#lab = lab
    this.#references = new FreshLabs({
      reference: function freshReference () { return new ReferenceLab({ port: 0, host, dataDir, budget }) }
    })
  }

  /**
   * @param {boolean|string} [next] as FreshLabs.take: only a reference lab is started ahead (the service has one port)
   * @param {string} [route]
   */
  async take (next = true, route = 'student') {
    if (route !== 'student') return this.#references.take(next === true || (typeof next === 'string' && next !== 'student') ? next : false, route)
    return this.#lab.renew()
  }

  /**
   * The service started again with the lab's allocation sampler loaded (NODE_OPTIONS), when the
   * lab starts it; null for one it watches or only reaches (nothing of the lab's can run in it).
   * Started again without it when the check ends.
   */
  takeSampled () {
    if (this.#lab.mode !== 'started') return null
    this.#sampled = true
    return this.#lab.renew({ sampled: true })
  }

  async releaseTaken () {
    if (this.#sampled) {
      this.#sampled = false
      // one that does not start again is started by the next check, or its death is that check's
      await this.#lab.renew().catch(function startedByTheNextCheck () {})
    }
    return this.#references.releaseTaken()
  }

  close () {
    return this.#references.close()
  }
}
