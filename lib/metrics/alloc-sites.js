/**
 * Allocation sites in the metrics: while they are wanted, every `windowMs` the main thread's
 * and each parse thread's allocation sampler (lib/allocation/) give their window, merged into
 * one, and the next sample of each interval carries it as `allocationSites`
 * (docs/metrics.md, "Allocation sites").
 *
 * Wanted means: the sampler (lib/metrics/sampler.js) is sampling, somebody listens, and the
 * mode allows it: 'experiment' (the default) while an experiment runs or a stream asks for
 * the sites (`want()`), 'always' whenever the sampler samples, 'off' never. Off, nothing is
 * wrapped, profiled or sent to the threads.
 *
 * A request of a route that no request since the last window had closes the window at once
 * (`at`: its start), and the next starts from there: a run that takes its routes in turn
 * gets windows of one route each, which a run record can give to that route (lib/runs/sites.js).
 *
 * Given the held ledger, a request whose stage takes a whole Buffer or string and so raises its
 * peak past any the window has seen has the sampler note what each site holds then: /bad's
 * string and parsed document are garbage by the window's end.
 */
import { ALLOCATION_SAMPLER_DEFAULTS, createAllocationSampler, mergeWindows } from '../allocation/sampler.js'

export const ALLOCATION_SAMPLING_MODES = Object.freeze(['experiment', 'always', 'off'])

const SITES_DEFAULTS = Object.freeze({
  mode: 'experiment',
  /**
   * ms between windows. Each reads V8's live profile and asks every parse thread for its own;
   * every 2 s that costs a fraction of a ms a window, a /bad upload of seconds still spans
   * several, and a stream at 100 ms gets the sites in one sample of twenty, not in all.
   */
  windowMs: 2000,
  /**
   * Mean bytes between samples (lib/allocation/sampler.js): four times the sampler's own, as
   * /good keeps its throughput at this rate and not at that one (docs/metrics.md, "Allocation sites").
   */
  intervalBytes: 4 * ALLOCATION_SAMPLER_DEFAULTS.intervalBytes,
  /** Sites a window names, of all threads together. */
  top: 20
})

/**
 * A new route closes the window only this long after the last one: a window given to a stream
 * at 100 ms is given before the next replaces it, and a load of several routes at once does not
 * close one per request.
 */
const ROUTE_CUT_MS = 250
/** Requests in flight followed: more than any load the lab admits. */
const MAX_IN_FLIGHT = 10_000
/**
 * A request's peak is noted from this many sampling intervals on: fewer samples say little, and
 * each note of the heap costs a mark-compact.
 */
const PEAK_INTERVALS = 8

/**
 * @param {{ mode?: string, events: import('node:events').EventEmitter, pool?: object|null,
 *   held?: import('./held.js').HeldLedger|null, windowMs?: number, intervalBytes?: number, top?: number }} options
 *   `pool`: the parse pool (lib/parse/pool.js), whose threads sample too; `held`: the ledger whose peaks are noted
 * @returns {SiteSampling}
 */
export function createSiteSampling (options) {
  const { events, pool = null, held = null, ...rest } = options ?? {}
  if (events === null || typeof events?.on !== 'function') throw new TypeError('option events must be an EventEmitter')
  if (pool !== null && typeof pool?.allocationWindows !== 'function') throw new TypeError('option pool must be a parse pool (lib/parse/pool.js)')
  if (held !== null && typeof held?.onPeak !== 'function') throw new TypeError('option held must be a held ledger (lib/metrics/held.js)')
  const out = { ...SITES_DEFAULTS, ...rest }
  checkMode(out.mode)
  if (!Number.isSafeInteger(out.windowMs) || out.windowMs < 10 || out.windowMs > 60_000) throw new TypeError(`option windowMs must be an integer number of ms from 10 to 60000, got ${out.windowMs}`)
  // the sampler checks intervalBytes and top, and names them
  const sampler = createAllocationSampler({ intervalBytes: out.intervalBytes, top: out.top })
  return new SiteSampling(Object.freeze(out), events, pool, sampler, held)
}

/**
 * Check an allocation sampling mode.
 * @param {unknown} mode
 * @param {string} [name]
 */
export function checkMode (mode, name = 'option mode') {
  if (!ALLOCATION_SAMPLING_MODES.includes(mode)) throw new TypeError(`${name} must be one of ${ALLOCATION_SAMPLING_MODES.join(', ')}, got ${JSON.stringify(mode)}`)
  return mode
}

/** See the module comment. Made by `createSiteSampling`. */
export class SiteSampling {
  #options
  #events
  #pool
  #sampler
  #listening = false
  /** @type {Set<string>} experiment runs in flight */
  #runs = new Set()
  #asks = 0
  #timer = null
  /** The window being collected (a promise), or null */
  #collecting = null
  #latest = null
  #seq = 0
  /** interval -> the seq of the window its samples last carried */
  #given = new Map()
  /** request id -> route, in flight */
  #inFlight = new Map()
  /** routes with a request since the last window */
  #routesSince = new Set()
  #lastWindowAt = 0
  /** As the latest run ended: the newest window, which intervals it was given at, and the last (a promise) */
  #ending = null
  /** The highest request peak noted in this window */
  #peakNoted = 0
  #stopPeaks

  constructor (options, events, pool, sampler, held) {
    this.#options = options
    this.#events = events
    this.#pool = pool
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
      this.#sampler.notePeak()
    } catch (err) {
      // the request is not the sampler's to fail
      reportFailure(err)
    }
  }.bind(this)

  #onRequest = function onRequest (event) {
    if (typeof event?.route !== 'string' || (typeof event.id !== 'number' && typeof event.id !== 'string')) return
    if (event.phase === 'end') {
      this.#inFlight.delete(event.id)
      return
    }
    if (event.phase !== 'start') return
    const fresh = this.#routesSince.size > 0 && !this.#routesSince.has(event.route)
    this.#inFlight.set(event.id, event.route)
    if (this.#inFlight.size > MAX_IN_FLIGHT) this.#inFlight.delete(this.#inFlight.keys().next().value)
    this.#routesSince.add(event.route)
    const at = Number.isFinite(event.time) ? event.time : Date.now()
    if (!fresh || !this.active || at - this.#lastWindowAt < ROUTE_CUT_MS) return
    this.#startTimer()
    this.collect(at).catch(reportFailure)
  }.bind(this)

  #onExperiment = function onExperiment (event) {
    if (event?.phase === 'start') this.#runs.add(event.id)
    else if (['result', 'error', 'cancelled'].includes(event?.phase)) {
      this.#runs.delete(event.id)
      // the run's last window, from the timer's last tick to its end, taken before sampling stops;
      // and the newest, which no sample may have carried yet
      const newest = this.#latest
      const given = new Map(this.#given)
      const last = this.active ? this.collect(Date.now(), { ending: true }).catch(reportFailure) : Promise.resolve(null)
      this.#ending = last.then(function ended (window) { return { newest, given, last: window ?? null } })
    } else return
    this.#update()
  }.bind(this)

  get mode () {
    return this.#options.mode
  }

  /** Whether sites are being sampled now. */
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

  /**
   * Ask for the sites (a stream that wants them, in mode 'experiment') until the returned function is called.
   * @returns {() => void}
   */
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

  /**
   * The newest window for a sample at `interval`: once per window for each interval, null
   * between them and while nothing is sampled; every time for a snapshot (`interval` null).
   * @param {number|null} interval
   */
  take (interval) {
    const latest = this.#latest
    if (latest === null) return null
    if (interval === null) return latest.window
    if (this.#given.get(interval) === latest.seq) return null
    this.#given.set(interval, latest.seq)
    return latest.window
  }

  /**
   * The windows of the latest run that no sample at `interval` carried: the newest, if not
   * given yet, and the one collected as the run ended. A run's record keeps them last
   * (lib/runs/recorder.js), since its samples stop with the run.
   * @param {number} interval the recorder's sample interval
   * @returns {Promise<object[]>}
   */
  async endingWindows (interval) {
    if (this.#ending === null) return []
    const { newest, given, last } = await this.#ending
    return [newest !== null && given.get(interval) !== newest.seq ? newest.window : null, last].filter(Boolean)
  }

  /**
   * The newest window now, without waiting for the timer (specs, and a snapshot that cannot wait).
   * @param {number} [at] when it closes, ms since 1970 (a new route's first request: its start)
   * @param {{ ending?: boolean }} [how] `ending`: a run's last window: the one being collected, if
   *   one is, else a new one
   */
  async collect (at = Date.now(), { ending = false } = {}) {
    // a window being collected (the timer's, late behind a parse that held the loop) is the run's last
    if (this.#collecting !== null) return ending ? this.#collecting : this.#latest?.window ?? null
    if (!this.active) return this.#latest?.window ?? null
    this.#collecting = this.#closeWindow(at)
    try {
      return await this.#collecting
    } finally {
      this.#collecting = null
    }
  }

  async #closeWindow (at) {
    const main = { thread: 'main', window: this.#sampler.window() }
    this.#peakNoted = 0
    this.#lastWindowAt = at
    this.#routesSince = new Set(this.#inFlight.values())
    const threads = this.#pool === null ? [] : await this.#pool.allocationWindows()
    const window = Object.freeze({ at, ...mergeWindows([main, ...threads], this.#options.top) })
    // stopped while the threads answered: no sample takes it, though a run's record may
    if (this.active) this.#latest = { seq: ++this.#seq, window }
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
      this.#pool?.startAllocationSampling(this.#options.intervalBytes)
      this.#lastWindowAt = Date.now()
      this.#routesSince = new Set(this.#inFlight.values())
      this.#startTimer()
    } else {
      clearInterval(this.#timer)
      this.#timer = null
      this.#sampler.stop()
      this.#pool?.stopAllocationSampling()
      this.#latest = null
      this.#given.clear()
    }
  }
}

function reportFailure (err) {
  console.warn(`streamlab: allocation sites: ${err.message}`)
}
