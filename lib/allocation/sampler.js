/**
 * The allocation sampler of one thread: which lines allocate and hold its bytes, V8 heap (heap.js) and Buffer bytes (buffers.js)
 * alike, estimated from samples taken every `intervalBytes` bytes on average. Nothing runs until `start()`; `stop()` takes the
 * Buffer wrappers and the profiler away again. More: README.md, "sampler.js".
 */
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { BufferRecorder } from './buffers.js'
import { HeapRecorder } from './heap.js'
import { preferredFolders } from './frames.js'
import { StringRecorder } from './strings.js'

export const ALLOCATION_SAMPLER_DEFAULTS = Object.freeze({
  /** Mean bytes between two samples, for both kinds, where the user names none (docs/metrics.md, "Allocation sites"). */
  intervalBytes: 512 * 1024,
  /** Sites a window names; the rest are summed in `totals.omitted`. */
  top: 20,
  /**
   * Sample V8's heap: 'held' (what each site holds, and what the window added to it), 'allocated' (all each site allocated in the
   * window, collected or not; what it holds unknown), or false.
   */
  heap: 'held',
  buffers: true,
  /** Sample strings made from bytes and texts parsed whole (strings.js), where V8's heap cannot be sampled. */
  strings: false,
  /** Folders whose first frame on the stack makes the site (a submission's), or null: the first outside Node's internals. */
  preferFiles: null
})

function normalizeSamplerOptions (options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('allocation sampler options must be an object')
  const out = { ...ALLOCATION_SAMPLER_DEFAULTS, ...options }
  if (!Number.isSafeInteger(out.intervalBytes) || out.intervalBytes < 1024 || out.intervalBytes > 1024 ** 3) {
    throw new TypeError(`option intervalBytes must be an integer number of bytes from 1024 to 1 GiB, got ${out.intervalBytes}`)
  }
  if (!Number.isSafeInteger(out.top) || out.top < 1 || out.top > 1000) {
    throw new TypeError(`option top must be an integer from 1 to 1000, got ${out.top}`)
  }
  if (!['held', 'allocated', false].includes(out.heap)) {
    throw new TypeError(`option heap must be 'held', 'allocated' or false, got ${JSON.stringify(out.heap)}`)
  }
  if (typeof out.buffers !== 'boolean') throw new TypeError(`option buffers must be a boolean, got ${out.buffers}`)
  if (typeof out.strings !== 'boolean') throw new TypeError(`option strings must be a boolean, got ${out.strings}`)
  const prefer = out.preferFiles
  if (prefer !== null && (!Array.isArray(prefer) || prefer.length === 0
    || !prefer.every(function absolute (p) { return typeof p === 'string' && path.isAbsolute(p) }))) {
    throw new TypeError(`option preferFiles must be null or a non-empty array of absolute folder paths, got ${JSON.stringify(prefer)}`)
  }
  return Object.freeze({ ...out, preferFiles: prefer === null ? null : Object.freeze([...prefer]) })
}

/** Create an allocation sampler for the thread that calls this. */
export function createAllocationSampler (options) {
  return new AllocationSampler(normalizeSamplerOptions(options))
}

export class AllocationSampler {
  #options
  #heap
  #buffers
  #strings
  #active = false
  #since = 0

  constructor (options) {
    this.#options = options
    const prefer = preferredFolders(options.preferFiles)
    this.#heap = options.heap === false ? null : new HeapRecorder(options.intervalBytes, options.heap === 'allocated', prefer)
    this.#buffers = options.buffers ? new BufferRecorder(options.intervalBytes, prefer) : null
    this.#strings = options.strings ? new StringRecorder(options.intervalBytes, prefer) : null
  }

  get options () {
    return this.#options
  }

  get active () {
    return this.#active
  }

  /** Start sampling (again: every figure starts from nothing). */
  start () {
    if (this.#active) return
    this.#active = true
    this.#since = performance.now()
    this.#buffers?.start()
    this.#strings?.start()
    this.#heap?.start()
  }

  /** Stop sampling: the Buffer allocators are as they were, the profiler is off. */
  stop () {
    if (!this.#active) return
    this.#active = false
    this.#buffers?.stop()
    this.#strings?.stop()
    this.#heap?.stop()
  }

  /**
   * Keep what each site holds now, where it is more than the window will see at its end: a request's peak, inside a synchronous
   * call whose objects are garbage by then. With a heap sampled for what it holds, this forces a mark-compact (heap.js).
   */
  notePeak () {
    if (!this.#active) return
    this.#heap?.notePeak()
    this.#buffers?.notePeak()
  }

  /**
   * The sites since the previous window (or the start); an empty window while stopped. With `epoch`, held counts from then on
   * only what is sampled after this window (a new route's start): a site's held is then never more than what it allocated in that
   * route's windows.
   */
  window ({ epoch = false } = {}) {
    const now = performance.now()
    const windowMs = this.#active ? Math.round(now - this.#since) : 0
    this.#since = now
    const heap = this.#active ? this.#heap?.window() ?? null : null
    const buffers = this.#active ? this.#buffers?.window() ?? null : null
    const strings = this.#active ? this.#strings?.window() ?? null : null
    if (epoch && this.#active) {
      this.#heap?.newEpoch()
      this.#buffers?.newEpoch()
    }
    const sites = [...(heap?.sites ?? []), ...(buffers?.sites ?? []), ...(strings?.sites ?? [])]
    const totals = { heap: heap?.totals ?? null, buffer: buffers?.totals ?? null, omitted: NONE_OMITTED }
    // a sampler of strings has their totals too; one without keeps the window's shape as it was
    if (this.#strings !== null) totals.string = strings?.totals ?? null
    return topSites({
      intervalBytes: this.#options.intervalBytes,
      windowMs,
      sites,
      totals,
      heapError: this.#heap?.error ?? null
    }, this.#options.top)
  }
}

const NONE_OMITTED = Object.freeze({ count: 0, allocatedBytes: 0, heldBytes: 0 })


/** The window with its `top` sites by allocated plus held bytes, the rest added to `omitted`, bytes whole. */
function topSites (window, top) {
  const sites = window.sites.map(roundSite).sort(function mostBytes (a, b) {
    return (b.allocatedBytes + b.heldBytes) - (a.allocatedBytes + a.heldBytes)
  })
  const omitted = { ...window.totals.omitted }
  for (const site of sites.slice(top)) {
    omitted.count++
    omitted.allocatedBytes += site.allocatedBytes
    omitted.heldBytes += site.heldBytes ?? 0
  }
  return {
    ...window,
    sites: sites.slice(0, top),
    totals: {
      heap: roundTotals(window.totals.heap),
      buffer: roundTotals(window.totals.buffer),
      ...(Object.hasOwn(window.totals, 'string') ? { string: roundTotals(window.totals.string) } : {}),
      omitted
    }
  }
}

/** null: not known (a heap sampled for what it allocated) */
function roundBytes (bytes) {
  return bytes === null ? null : Math.round(bytes)
}

function roundSite (site) {
  return { ...site, allocatedBytes: Math.round(site.allocatedBytes), heldBytes: roundBytes(site.heldBytes) }
}

function roundTotals (totals) {
  if (totals === null) return null
  return { allocatedBytes: Math.round(totals.allocatedBytes), heldBytes: roundBytes(totals.heldBytes), samples: totals.samples }
}

/** Held bytes summed where known: a thread whose heap holds an unknown amount adds nothing. */
function addTotals (a, b) {
  if (a === null) return b === null ? null : { ...b }
  if (b === null) return a
  const held = a.heldBytes === null && b.heldBytes === null ? null : (a.heldBytes ?? 0) + (b.heldBytes ?? 0)
  return { allocatedBytes: a.allocatedBytes + b.allocatedBytes, heldBytes: held, samples: a.samples + b.samples }
}

/**
 * Several threads' windows as one: each site marked with its `thread`, the top `top` of all, the totals summed; `heapErrors`
 * names each thread whose heap could not be sampled.
 */
export function mergeWindows (windows, top) {
  let heap = null
  let buffer = null
  const omitted = { ...NONE_OMITTED }
  const sites = []
  const heapErrors = {}
  let windowMs = 0
  let intervalBytes = null
  for (const { thread, window } of windows) {
    intervalBytes ??= window.intervalBytes
    windowMs = Math.max(windowMs, window.windowMs)
    for (const site of window.sites) sites.push({ thread, ...site })
    heap = addTotals(heap, window.totals.heap)
    buffer = addTotals(buffer, window.totals.buffer)
    omitted.count += window.totals.omitted.count
    omitted.allocatedBytes += window.totals.omitted.allocatedBytes
    omitted.heldBytes += window.totals.omitted.heldBytes
    if (window.heapError) heapErrors[thread] = window.heapError
  }
  const merged = topSites({ intervalBytes, windowMs, sites, totals: { heap, buffer, omitted } }, top)
  return { intervalBytes: merged.intervalBytes, windowMs: merged.windowMs,
    threads: windows.map(function threadOf (w) { return w.thread }), sites: merged.sites, totals: merged.totals, heapErrors }
}
