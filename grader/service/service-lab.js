/** A service's grading pair (as GradeLab): the reference lab and the service; a fresh process is the service restarted. */
import { FreshLabs } from '../lab/fresh-labs.js'
import { ReferenceLab } from '../lab/reference-lab.js'
import { StartedService } from './started-service.js'
import { UnwatchedService } from './unwatched-service.js'
import { WatchedService } from './watched-service.js'
import { MiB } from '../../lib/util/units.js'

export class ServiceLab {
  #options
  #retiredDeaths = 0
  #retiredLastDeath = null
  #overBudget = null

  /** `port`, `host`: the reference lab's (its dashboard); `budget`: RSS bytes; `mode`: 'started', 'watched' or 'unwatched'. */
  constructor (options) {
    this.#options = { port: 0, host: '127.0.0.1', ...options }
    this.mode = options.mode
    const { port, host, dataDir, budget, onCancel } = this.#options
    this.reference = new ReferenceLab({ port, host, dataDir, budget, onCancel })
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
    return [`the service's RSS reached ${(over / MiB).toFixed(0)} MiB, past the grader's budget of ` +
      `${(this.#options.budget / MiB).toFixed(0)} MiB: the lab did not start it, so it was not killed`]
  }

  output () {
    return this.current.output()
  }

  urlOf (route) {
    return route === 'student' ? this.current.urlOf() : `${this.reference.url}/${route}`
  }

  /** Start both; when either fails, stop the other. Throws `code` 'START_FAILED' with the reason. */
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

  /** The service as a process that served nothing yet: started again if the lab started it, else watched anew. */
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

/** Fresh processes for figures and bombs: the service renewed (ServiceLab.renew), reference labs of their own. */
class ServiceFresh {
  #lab
  #references
  #sampled = false

  constructor (lab, { host, dataDir, budget }) {
    this.#lab = lab
    this.#references = new FreshLabs({
      reference: function freshReference () { return new ReferenceLab({ port: 0, host, dataDir, budget }) }
    })
  }

  /** As FreshLabs.take, but only a reference lab is started ahead (the service has one port). */
  async take (next = true, route = 'student') {
    const ahead = next === true || (typeof next === 'string' && next !== 'student') ? next : false
    if (route !== 'student') return this.#references.take(ahead, route)
    return this.#lab.renew()
  }

  /** The service started again with the lab's sampler (NODE_OPTIONS) when the lab starts it, else null; restarted without after. */
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
