/**
 * The sampler: the process's memory, its kernel peak RSS, event-loop delay and utilisation, and GC pauses, read every `interval`
 * ms while somebody listens, and not at all otherwise. It knows nothing of HTTP: /metrics, the bench and the tests subscribe to
 * it (autocannon's `tick`, in effect). More: README.md, "sampler.js".
 */
import { EventEmitter } from 'node:events'
import { getHeapSpaceStatistics } from 'node:v8'
import { monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks'
import { createPeakReader, readPeakRss } from './peak.js'
import { watchGcEvents } from './gc-events.js'
import { round } from '../util/units.js'

export const INTERVAL_MIN = 10
export const INTERVAL_MAX = 5000

const SAMPLER_DEFAULTS = Object.freeze({
  /** ms between samples for `on('sample')` listeners, and for `subscribe()` without an interval. */
  interval: 100,
  /**
   * ms between the event-loop delay probe's own ticks: finer costs idle wake-ups (docs/metrics.md, scripts/metrics-cpu.js), and the
   * lab's stalls are longer. A sampling window shorter than this may hold no reading (its delay figures are then null).
   */
  resolution: 50,
  /** What each ingest request in flight holds (lib/metrics/held.js), read into each sample; null: none. */
  held: null,
  /** Allocation sites (lib/metrics/alloc-sites.js): sampled while this samples (its windows go on the bus); null: none. */
  allocationSites: null
})

const NS_PER_MS = 1e6

/** A sampling interval, checked: a TypeError unless an integer number of ms from 10 to 5000. */
export function checkInterval (value, name = 'interval') {
  if (!Number.isSafeInteger(value) || value < INTERVAL_MIN || value > INTERVAL_MAX) {
    throw new TypeError(`${name} must be an integer number of ms from ${INTERVAL_MIN} to ${INTERVAL_MAX}, got ${value}`)
  }
  return value
}

function normalizeSamplerOptions (options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('sampler options must be an object')
  const out = { ...SAMPLER_DEFAULTS, ...options }
  checkInterval(out.interval, 'option interval')
  if (!Number.isSafeInteger(out.resolution) || out.resolution < 1 || out.resolution > 1000) {
    throw new TypeError(`option resolution must be an integer number of ms from 1 to 1000, got ${out.resolution}`)
  }
  if (out.held !== null && typeof out.held?.read !== 'function') throw new TypeError('option held must be a held-bytes ledger')
  if (out.allocationSites !== null && typeof out.allocationSites?.resume !== 'function') {
    throw new TypeError('option allocationSites must be a site sampling (lib/metrics/alloc-sites.js)')
  }
  return Object.freeze(out)
}

/** Create a sampler. Nothing runs until the first subscriber. A sample: README.md, "A sample (createSampler)". */
export function createSampler (options) {
  return new Sampler(normalizeSamplerOptions(options))
}

/**
 * Emits 'sample' every `options.interval` ms while it has 'sample' listeners; `subscribe(interval, listener)` listens at any
 * other interval.
 */
export class Sampler extends EventEmitter {
  #options
  /** interval -> { interval, timer, listeners, window } */
  #groups = new Map()
  #gcObserver = null
  /** Each collection as an event (lib/metrics/gc-events.js), while sampling. */
  #gcEvents = null
  #seq = 0
  #last = null
  #emitterUnsubscribe = null
  /** /proc/self/status kept open while sampling (lib/metrics/peak.js), closed when sampling stops. */
  #peak = null

  constructor (options) {
    super()
    this.#options = options
    // `on('sample')` is a subscription at the default interval; the last `off('sample')` ends it. These two listeners are the
    // sampler's own.
    this.on('newListener', function joinOnSampleListener (name) {
      if (name === 'sample' && this.#emitterUnsubscribe === null) {
        this.#emitterUnsubscribe = this.subscribe(this.#options.interval, this.#emitSample)
      }
    })
    this.on('removeListener', function leaveOnLastSampleListener (name) {
      if (name === 'sample' && this.listenerCount('sample') === 0 && this.#emitterUnsubscribe !== null) {
        const unsubscribe = this.#emitterUnsubscribe
        this.#emitterUnsubscribe = null
        unsubscribe()
      }
    })
  }

  #emitSample = function emitSample (sample) {
    this.emit('sample', sample)
  }.bind(this)

  get interval () {
    return this.#options.interval
  }

  /** Whether anything is being sampled (timers, histogram and GC observer running). */
  get active () {
    return this.#groups.size > 0
  }

  get intervals () {
    return [...this.#groups.keys()].sort(function ascending (a, b) { return a - b })
  }

  /** Call `listener(sample)` every `interval` ms (10 to 5000) until the returned function is called (twice is harmless). */
  subscribe (interval, listener) {
    checkInterval(interval)
    if (typeof listener !== 'function') throw new TypeError('listener must be a function')
    this.#start()
    let group = this.#groups.get(interval)
    if (group === undefined) group = this.#addGroup(interval)
    // a Set would fold two subscriptions of one function into one
    const entry = { listener }
    group.listeners.add(entry)
    const sampler = this
    let subscribed = true
    return function unsubscribe () {
      if (!subscribed) return
      subscribed = false
      group.listeners.delete(entry)
      if (group.listeners.size === 0) sampler.#removeGroup(group)
    }
  }

  /**
   * One sample now, without disturbing any subscriber's window. Its `eventLoop` and `gc` are those of the most recent sample
   * taken at any interval, or nulls when nothing has been sampled since the sampler (re)started; `interval` is null.
   */
  snapshot () {
    const last = this.active ? this.#last : null
    return this.#build(null, last?.eventLoop ?? EMPTY_EVENT_LOOP, last?.gc ?? EMPTY_GC, last ?? NO_GC_EVENTS)
  }

  /** Stop everything: every subscription and the `on('sample')` listeners. */
  close () {
    this.removeAllListeners('sample')
    for (const group of [...this.#groups.values()]) this.#removeGroup(group)
  }

  #start () {
    if (this.#groups.size > 0) return
    const groups = this.#groups
    this.#gcObserver = new PerformanceObserver(function countGcPauses (list) {
      for (const entry of list.getEntries()) {
        for (const group of groups.values()) {
          group.window.gcCount++
          group.window.gcPauseMs += entry.duration
        }
      }
    })
    this.#gcObserver.observe({ entryTypes: ['gc'] })
    this.#gcEvents = watchGcEvents()
    this.#peak = createPeakReader()
    this.#options.allocationSites?.resume()
  }

  #stop () {
    this.#gcObserver.disconnect()
    this.#gcObserver = null
    this.#gcEvents.close()
    this.#gcEvents = null
    this.#peak.close()
    this.#peak = null
    this.#last = null
    this.#options.allocationSites?.pause()
  }

  #addGroup (interval) {
    const sampler = this
    const group = {
      interval,
      listeners: new Set(),
      window: newWindow(this.#options.resolution),
      gcWindow: this.#gcEvents.openWindow(),
      lastTick: performance.now(),
      timer: setInterval(function sampleTick () { sampler.#tick(group) }, interval)
    }
    group.timer.unref()
    this.#groups.set(interval, group)
    return group
  }

  #removeGroup (group) {
    // close() may have removed it before its last subscriber let go
    if (this.#groups.get(group.interval) !== group) return
    clearInterval(group.timer)
    group.window.delay.disable()
    this.#gcEvents.closeWindow(group.gcWindow)
    this.#groups.delete(group.interval)
    if (this.#groups.size === 0) this.#stop()
  }

  #tick (group) {
    // The sampler's own timer is a probe too: if the loop was blocked, this tick came late. It catches a block that the
    // histogram's reset at the previous tick may have cut in two.
    const now = performance.now()
    const lateMs = Math.max(0, now - group.lastTick - group.interval)
    group.lastTick = now
    const eventLoop = readWindow(group.window, this.#options.resolution, lateMs)
    const sample = this.#build(group.interval, eventLoop, {
      count: group.window.gcCount,
      pauseMs: round(group.window.gcPauseMs, 1000)
    }, this.#gcEvents.take(group.gcWindow))
    resetWindow(group.window)
    this.#last = sample
    for (const entry of [...group.listeners]) {
      // an earlier listener may have unsubscribed this one
      if (group.listeners.has(entry)) entry.listener(sample)
    }
  }

  #build (interval, eventLoop, gc, { gcEvents, gcEventsOmitted }) {
    const memory = process.memoryUsage()
    const held = this.#options.held?.read() ?? NOTHING_HELD
    const peak = this.#peak?.read() ?? readPeakRss()
    this.#seq++
    return Object.freeze({
      time: Date.now(),
      seq: this.#seq,
      interval,
      rss: memory.rss,
      heapTotal: memory.heapTotal,
      heapUsed: memory.heapUsed,
      external: memory.external,
      arrayBuffers: memory.arrayBuffers,
      heapSpaces: readHeapSpaces(),
      // read a moment apart from rss: a peak below the rss beside it would read as nonsense
      peakRss: Math.max(peak.bytes, memory.rss),
      peakSource: peak.source,
      eventLoop,
      gc,
      gcEvents,
      gcEventsOmitted,
      requests: held.requests,
      requestsOmitted: held.omitted
    })
  }
}

/** Bytes used in each of V8's heap spaces, keyed by V8's own names, in V8's order. */
function readHeapSpaces () {
  const spaces = {}
  for (const space of getHeapSpaceStatistics()) spaces[space.space_name] = space.space_used_size
  return spaces
}

const NOTHING_HELD = Object.freeze({ requests: Object.freeze([]), omitted: Object.freeze({ count: 0, bytes: 0 }) })
const EMPTY_EVENT_LOOP = Object.freeze({ p50: null, p99: null, max: null, utilization: null })
const EMPTY_GC = Object.freeze({ count: null, pauseMs: null })
const NO_GC_EVENTS = Object.freeze({ gcEvents: Object.freeze([]), gcEventsOmitted: 0 })

function newWindow (resolution) {
  const delay = monitorEventLoopDelay({ resolution })
  delay.enable()
  return {
    delay,
    elu: performance.eventLoopUtilization(),
    eluNow: null,
    gcCount: 0,
    gcPauseMs: 0
  }
}

function resetWindow (window) {
  window.delay.reset()
  window.elu = window.eluNow
  window.gcCount = 0
  window.gcPauseMs = 0
}

/**
 * The probe records the whole time between its ticks; what a reader means by "delay" is the part beyond the expected
 * `resolution`.
 */
function readWindow (window, resolution, lateMs) {
  window.eluNow = performance.eventLoopUtilization()
  const utilization = performance.eventLoopUtilization(window.eluNow, window.elu).utilization
  const h = window.delay
  const expected = resolution * NS_PER_MS
  function delayMs (ns) { return round(Math.max(0, ns - expected) / NS_PER_MS, 1000) }
  return Object.freeze({
    p50: h.count === 0 ? null : delayMs(h.percentile(50)),
    p99: h.count === 0 ? null : delayMs(h.percentile(99)),
    max: h.count === 0 ? round(lateMs, 1000) : Math.max(delayMs(h.max), round(lateMs, 1000)),
    utilization: round(utilization, 10000)
  })
}
