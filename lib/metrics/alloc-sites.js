/**
 * Allocation sites in the metrics: while wanted, every `windowMs` the main thread's and each parse thread's sampler
 * (lib/allocation/) give a window, merged into one and emitted on the bus as a `sites` event, which the stream, the live view and
 * a run's recorder take. Wanted: the sampler samples, somebody listens, and the mode allows it ('experiment': while a run runs or
 * a stream asks, `want()`; 'always'; 'off': nothing wrapped, profiled or sent to the threads). A new route's first request closes
 * the window at its start and starts an epoch of held (route-cuts.js); a run's end closes its last, and `settled()` resolves once
 * it is on the bus. A request peak the held ledger reports has the sampler note what each site holds then (/bad's whole string is
 * garbage by the window's end). Heap reads run as the lab's (lib/util/lab-gc.js). docs/metrics.md, "Allocation sites", says what
 * a window holds.
 */
import { ALLOCATION_SAMPLER_DEFAULTS, createAllocationSampler, mergeWindows } from '../allocation/sampler.js'
import { labRead } from '../util/lab-gc.js'
import { createThreadSites } from '../parse/thread-sites.js'
import { RouteCuts } from './route-cuts.js'

export const ALLOCATION_SAMPLING_MODES = Object.freeze(['experiment', 'always', 'off'])

export const SITE_SAMPLING_DEFAULTS = Object.freeze({
  mode: 'experiment',
  /** ms between windows: each reads V8's live profile and asks every parse thread for its own (docs/metrics.md). */
  windowMs: 2000,
  /** Mean bytes between samples: coarser than the sampler's own, so /good keeps its throughput (docs/metrics.md). */
  intervalBytes: 4 * ALLOCATION_SAMPLER_DEFAULTS.intervalBytes,
  /** Sites a window names, of all threads together. */
  top: 20
})

/** A request's peak is noted from this many sampling intervals on: fewer say little, and each note costs a mark-compact. */
const PEAK_INTERVALS = 8

/**
 * @param {{ mode?: string, events: import('node:events').EventEmitter, pool?: object|null,
 *   held?: import('./held.js').HeldLedger|null, windowMs?: number, intervalBytes?: number, top?: number }} options
 *   `pool`: the parse pool (lib/parse/pool.js), whose threads sample too; `held`: the ledger whose peaks are noted
 */
export function createSiteSampling (options) {
  const { events, pool = null, held = null, ...rest } = options ?? {}
  if (events === null || typeof events?.on !== 'function') throw new TypeError('option events must be an EventEmitter')
  if (held !== null && typeof held?.onPeak !== 'function') throw new TypeError('option held must be a held ledger (lib/metrics/held.js)')
  const out = { ...SITE_SAMPLING_DEFAULTS, ...rest }
  checkMode(out.mode)
  if (!Number.isSafeInteger(out.windowMs) || out.windowMs < 10 || out.windowMs > 60_000) {
    throw new TypeError(`option windowMs must be an integer number of ms from 10 to 60000, got ${out.windowMs}`)
  }
  // the sampler checks intervalBytes and top, and names them
  const sampler = createAllocationSampler({ intervalBytes: out.intervalBytes, top: out.top })
  return new SiteSampling(Object.freeze(out), events, pool === null ? null : createThreadSites(pool), sampler, held)
}

export function checkMode (mode, name = 'option mode') {
  if (!ALLOCATION_SAMPLING_MODES.includes(mode)) throw new TypeError(`${name} must be one of ${ALLOCATION_SAMPLING_MODES.join(', ')}, ` +
    `got ${JSON.stringify(mode)}`)
  return mode
}

export class SiteSampling {
  #options
  #events
  #threads
  #sampler
  #listening = false
  #runs = new Set()
  #asks = 0
  #timer = null
  /** The window being collected (a promise), or null */
  #collecting = null
  #latest = null
  #cuts = new RouteCuts()
  /** The highest request peak noted in this window */
  #peakNoted = 0
  #stopPeaks

  constructor (options, events, threads, sampler, held) {
    this.#options = options
    this.#events = events
    this.#threads = threads
    this.#sampler = sampler
    events.on('experiment', this.#onExperiment)
    events.on('request', this.#onRequest)
    this.#stopPeaks = held?.onPeak(this.#onPeak) ?? function noLedger () {}
  }

  #onPeak = function onPeak (holding) {
    const total = holding.peak.total
    if (!this.active || total <= this.#peakNoted || total < PEAK_INTERVALS * this.#options.intervalBytes) return
    this.#peakNoted = total
    try {
      labRead(this.#sampler.notePeak.bind(this.#sampler))
    } catch (err) {
      // the request is not the sampler's to fail
      reportFailure(err)
    }
  }.bind(this)

  #onRequest = function onRequest (event) {
    const at = this.#cuts.onRequest(event, { active: this.active, collecting: this.#collecting !== null })
    if (at === null) return
    this.#startTimer()
    this.collect(at, { epoch: true }).catch(reportFailure)
  }.bind(this)

  #onExperiment = function onExperiment (event) {
    if (event?.phase === 'start') this.#runs.add(event.id)
    else if (['result', 'error', 'cancelled'].includes(event?.phase)) {
      this.#runs.delete(event.id)
      // the run's last window, from the timer's last tick to its end, taken before sampling stops
      if (this.active) this.collect(Date.now()).catch(reportFailure)
    } else return
    this.#update()
  }.bind(this)

  get mode () {
    return this.#options.mode
  }

  get active () {
    return this.#timer !== null
  }

  /** The metrics sampler started sampling: sites may be sampled (lib/metrics/sampler.js). */
  resume () {
    this.#listening = true
    this.#update()
  }

  /** The metrics sampler stopped: nobody listens. */
  pause () {
    this.#listening = false
    this.#update()
  }

  /** Ask for the sites (a stream that wants them, in mode 'experiment') until the returned function is called. */
  want () {
    this.#asks++
    this.#update()
    const sites = this
    let asking = true
    return function release () {
      if (!asking) return
      asking = false
      sites.#asks--
      sites.#update()
    }
  }

  /** The newest window (the JSON snapshot's), or null. */
  get latest () {
    return this.#latest
  }

  /** Resolves once no window is being collected: a run's last is on the bus by then (its recorder waits for it). */
  async settled () {
    await this.#collecting?.catch(function reported () {})
  }

  /**
   * Close a window now, without waiting for the timer: the one being collected, if one is (the timer's, late behind a parse that
   * held the loop), else a new one; the newest while not sampling.
   * `at`: when it closes (a new route's first request: its start); `epoch`: a new route's start (sampler.js window).
   */
  async collect (at = Date.now(), { epoch = false } = {}) {
    if (this.#collecting !== null) return this.#collecting
    if (!this.active) return this.#latest
    this.#collecting = this.#closeWindow(at, epoch)
    try {
      return await this.#collecting
    } finally {
      this.#collecting = null
    }
  }

  async #closeWindow (at, epochAsked) {
    // a cut put off (a route too soon after a window) starts at this window instead: held never counts from before it
    const epoch = this.#cuts.closed(at) || epochAsked
    const sampler = this.#sampler
    const main = { thread: 'main', window: labRead(function read () { return sampler.window({ epoch }) }) }
    this.#peakNoted = 0
    const threads = this.#threads === null ? [] : await this.#threads.windows({ epoch })
    const window = Object.freeze({ at, ...mergeWindows([main, ...threads], this.#options.top) })
    // sent even if sampling stopped while the threads answered: a run's last window comes after it
    this.#latest = window
    this.#events.emit('sites', window)
    return window
  }

  close () {
    this.#events.off('experiment', this.#onExperiment)
    this.#events.off('request', this.#onRequest)
    this.#stopPeaks()
    this.#listening = false
    this.#update()
  }

  /** (Re)start the timer: the next window is `windowMs` from now. */
  #startTimer () {
    clearInterval(this.#timer)
    const sites = this
    this.#timer = setInterval(function collectSites () {
      sites.collect().catch(reportFailure)
    }, this.#options.windowMs)
    this.#timer.unref()
  }

  #wanted () {
    const mode = this.#options.mode
    if (!this.#listening || mode === 'off') return false
    return mode === 'always' || this.#runs.size > 0 || this.#asks > 0
  }

  #update () {
    const wanted = this.#wanted()
    if (wanted === this.active) return
    if (wanted) {
      this.#sampler.start()
      this.#threads?.start(this.#options.intervalBytes)
      this.#cuts.closed(Date.now())
      this.#startTimer()
    } else {
      clearInterval(this.#timer)
      this.#timer = null
      this.#sampler.stop()
      this.#threads?.stop()
    }
  }
}

function reportFailure (err) {
  console.warn(`streamlab: allocation sites: ${err.message}`)
}
