/**
 * Each garbage collection as an event: `{ at, kind, ms, heapBefore, heapAfter, cause }`, handed to the sampler's windows
 * (lib/metrics/sampler.js), at most `perWindow` in each. `cause` is 'lab' for one the lab forced by reading a heap profile
 * (lib/util/lab-gc.js), else 'run'. More: README.md, "gc-events.js".
 */
import { GCProfiler } from 'node:v8'
import { performance, PerformanceObserver } from 'node:perf_hooks'
import { causedByLab } from '../util/lab-gc.js'
import { MINOR_KINDS } from './gc-kinds.js'

/** Events a sample holds; the rest are counted in its `gcEventsOmitted`. */
export const GC_EVENTS_PER_WINDOW = 50

/** V8's GC types (the observer's `detail.kind`, a bit each) by the names V8's --trace-gc prints. */
const KIND_BY_TYPE = Object.freeze({ 1: 'scavenge', 2: 'minor-mark-sweep', 4: 'mark-compact', 8: 'incremental-marking',
  16: 'weak-callbacks' })
/** The same types as the profiler names them (MinorMarkCompact: V8 before 11.9). */
const KIND_BY_NAME = Object.freeze({
  Scavenge: 'scavenge',
  MinorMarkSweep: 'minor-mark-sweep',
  MinorMarkCompact: 'minor-mark-sweep',
  MarkSweepCompact: 'mark-compact',
  IncrementalMarking: 'incremental-marking',
  ProcessWeakCallbacks: 'weak-callbacks'
})

/** How far on a record of the entry's kind is looked for, when the two sources disagree. */
const LOOK_AHEAD = 4
/** Records kept unpaired at most: a bound, not a case that happens. */
const PROFILED_MAX = 10_000

/** Start listening for collections; `close()` stops. A window is `openWindow()`'s, emptied by `take`. */
export function watchGcEvents ({ perWindow = GC_EVENTS_PER_WINDOW } = {}) {
  if (!Number.isSafeInteger(perWindow) || perWindow < 0) throw new TypeError(`perWindow must be a whole number, got ${perWindow}`)
  const windows = new Set()
  /** observer entries not yet paired, in the order of their collections */
  const entries = []
  /** { kind, heapBefore, heapAfter } from the profilers, not yet paired */
  const profiled = []
  let last = null
  const observer = new PerformanceObserver(function keepGcEntries (list) {
    for (const entry of list.getEntries()) entries.push(entry)
  })
  observer.observe({ entryTypes: ['gc'] })
  let profiler = new GCProfiler()
  let spare = new GCProfiler()
  profiler.start()
  // read after the start: a collection that began before it has no record
  const profiledFrom = performance.now()

  function harvest () {
    for (const entry of observer.takeRecords()) entries.push(entry)
    spare.start()
    const gathered = profiler.stop();
    [profiler, spare] = [spare, profiler]
    for (const [k, stat] of (gathered?.statistics ?? []).entries()) {
      const record = {
        kind: KIND_BY_NAME[stat.gcType] ?? String(stat.gcType),
        heapBefore: stat.beforeGC?.heapStatistics?.usedHeapSize ?? null,
        heapAfter: stat.afterGC?.heapStatistics?.usedHeapSize ?? null
      }
      // heard by both profilers while they overlapped
      if (k === 0 && last !== null && record.kind === last.kind && record.heapBefore === last.heapBefore
        && record.heapAfter === last.heapAfter) continue
      profiled.push(record)
      last = record
    }
    if (profiled.length > PROFILED_MAX) profiled.splice(0, profiled.length - PROFILED_MAX)
    // the sampler's clock is Date.now(); the observer's is performance.now()
    const offset = Date.now() - performance.now()
    // every entry taken came before the profiler was read, so its record is in `profiled`
    for (const entry of entries.splice(0)) deliver(eventOf(entry, offset, pairFor(entry)))
  }

  /** The profiler's record of the entry's collection, or null when it has none. */
  function pairFor (entry) {
    if (entry.startTime < profiledFrom) return null
    const kind = kindOf(entry)
    const k = profiled.slice(0, LOOK_AHEAD).findIndex(function sameKind (record) { return record.kind === kind })
    if (k === -1) return null
    // records before it are of collections the observer did not report
    return profiled.splice(0, k + 1)[k]
  }

  function deliver (event) {
    for (const window of windows) addEvent(window, event, perWindow)
  }

  return Object.freeze({
    /** A window of its own for one interval's samples. */
    openWindow: function openWindow () {
      const window = { events: [], omitted: 0 }
      windows.add(window)
      return window
    },
    closeWindow: function closeWindow (window) {
      windows.delete(window)
    },
    /** The events learned of since the window's last take, and how many were left out. */
    take: function take (window) {
      harvest()
      const taken = { gcEvents: Object.freeze(window.events), gcEventsOmitted: window.omitted }
      window.events = []
      window.omitted = 0
      return taken
    },
    close: function close () {
      observer.disconnect()
      profiler.stop()
      entries.length = 0
      profiled.length = 0
      windows.clear()
    }
  })
}

function kindOf (entry) {
  const type = entry.detail?.kind ?? entry.kind
  return KIND_BY_TYPE[type] ?? `gc-${type}`
}

function eventOf (entry, offset, stat) {
  return Object.freeze({
    at: Math.round((offset + entry.startTime) * 10) / 10,
    kind: kindOf(entry),
    ms: Math.round(entry.duration * 1000) / 1000,
    heapBefore: stat?.heapBefore ?? null,
    heapAfter: stat?.heapAfter ?? null,
    cause: causedByLab(entry.startTime) ? 'lab' : 'run'
  })
}

/** How much a window wants an event when it is full: mark-compacts most, young collections least. */
function rank (event) {
  if (event.kind === 'mark-compact') return 2
  return MINOR_KINDS.includes(event.kind) ? 0 : 1
}

/**
 * Add an event to a window of at most `max`: when full, the latest event of the lowest rank below the new one's makes room, else
 * the new one is left out; either way one is counted.
 */
export function addEvent (window, event, max) {
  if (window.events.length < max) {
    window.events.push(event)
    return
  }
  window.omitted++
  const r = rank(event)
  let out = -1
  for (let k = window.events.length - 1; k >= 0; k--) {
    const rk = rank(window.events[k])
    if (rk < r && (out === -1 || rk < rank(window.events[out]))) out = k
  }
  if (out === -1) return
  window.events.splice(out, 1)
  window.events.push(event)
}
