/**
 * Buffer bytes by site. V8's sampling heap profiler never sees a Buffer's bytes: they are an
 * ArrayBuffer's backing store, outside V8's heap. So the Buffer allocators that the lab and
 * Node's own JavaScript call are wrapped while a recorder listens, and an allocation of s bytes
 * is sampled with probability 1 - exp(-s / interval) (a countdown of bytes drawn from an
 * exponential law, as V8 samples its heap). A sampled allocation stands for s / that probability
 * bytes, is charged to its site, and stays "held" until its ArrayBuffer is collected.
 *
 * Buffer's statics belong to the thread, not to one sampler: the wrappers are installed when
 * the first recorder of this thread starts and removed when the last one stops, so nothing runs
 * on an allocation while nobody samples. Bytes allocated in C++ (a socket's reads, zlib's
 * one-shot native paths) never pass through these functions and are not seen.
 */
import { Buffer } from 'node:buffer'
import { isAnyArrayBuffer } from 'node:util/types'
import { siteKey, siteOfCallSites } from './sites.js'

/**
 * The allocators wrapped. `Buffer.from` allocates unless it is handed an ArrayBuffer (it then
 * shares that memory); `concat` calls `allocUnsafe` itself, which is not counted twice.
 */
export const BUFFER_ALLOCATORS = Object.freeze(['alloc', 'allocUnsafe', 'allocUnsafeSlow', 'concat', 'from', 'copyBytesFrom'])

/** Frames captured per sampled allocation: enough to climb out of Node's stream internals. */
const STACK_FRAMES = 12

/** Sites a recorder keeps apart; past it, the rest share one. */
const MOST_SITES = 2000
const OTHER_SITES = Object.freeze({ functionName: '(other sites)', file: null, line: null, column: null })

/** @type {Set<BufferRecorder>} the recorders of this thread */
const recorders = new Set()
/** @type {Map<string, Function>|null} the allocators as they were, while wrapped */
let originals = null
/** Inside a wrapped allocator: the allocators it calls are part of its allocation. */
let inside = false

/**
 * Whether this thread's Buffer allocators are wrapped now.
 * @returns {boolean}
 */
export function buffersWrapped () {
  return originals !== null
}

/** Samples this thread's Buffer allocations, by site, from `start()` to `stop()`. */
export class BufferRecorder {
  #interval
  #countdown = 0
  /** @type {Map<string, object>} */
  #sites = new Map()
  #registry = null
  #totals = { allocatedBytes: 0, heldBytes: 0, samples: 0 }

  constructor (intervalBytes) {
    this.#interval = intervalBytes
  }

  start () {
    if (recorders.has(this)) return
    this.#sites = new Map()
    this.#totals = { allocatedBytes: 0, heldBytes: 0, samples: 0 }
    this.#countdown = nextCountdown(this.#interval)
    const recorder = this
    this.#registry = new FinalizationRegistry(function releaseHeld (entry) { recorder.#release(entry) })
    recorders.add(this)
    if (originals === null) wrapAllocators()
  }

  stop () {
    if (!recorders.delete(this)) return
    // its pending finalizations go with it
    this.#registry = null
    if (recorders.size === 0) unwrapAllocators()
  }

  /** Bytes of this allocation count down to the next sample; a true return asks for its site. */
  count (bytes) {
    this.#countdown -= bytes
    return this.#countdown <= 0
  }

  /** Charge a sampled allocation of `bytes` to `site`, held until `arrayBuffer` is collected. */
  record (site, bytes, arrayBuffer) {
    this.#countdown = nextCountdown(this.#interval)
    const weight = bytes / -Math.expm1(-bytes / this.#interval)
    const entry = this.#siteFor(site)
    entry.allocatedBytes += weight
    entry.heldBytes += weight
    entry.samples++
    this.#totals.allocatedBytes += weight
    this.#totals.heldBytes += weight
    this.#totals.samples++
    this.#registry.register(arrayBuffer, { entry, weight })
  }

  #siteFor (site) {
    const key = siteKey(site, 'buffer')
    let entry = this.#sites.get(key)
    if (entry === undefined) {
      if (this.#sites.size >= MOST_SITES) return this.#siteFor(OTHER_SITES)
      entry = { ...site, kind: 'buffer', allocatedBytes: 0, heldBytes: 0, samples: 0 }
      this.#sites.set(key, entry)
    }
    return entry
  }

  #release ({ entry, weight }) {
    entry.heldBytes -= weight
    this.#totals.heldBytes -= weight
  }

  /**
   * The sites since the last window: what each allocated in it, what each holds now; a site
   * that holds nothing and allocated nothing leaves the table.
   * @returns {{ sites: object[], totals: { allocatedBytes: number, heldBytes: number, samples: number } }}
   */
  window () {
    const sites = []
    for (const [key, entry] of this.#sites) {
      // what is left of a float's sums once everything it added has been taken away
      if (entry.heldBytes < 1) entry.heldBytes = 0
      if (entry.allocatedBytes > 0 || entry.heldBytes > 0) sites.push({ ...entry })
      if (entry.heldBytes === 0) this.#sites.delete(key)
      entry.allocatedBytes = 0
      entry.samples = 0
    }
    const totals = { ...this.#totals, heldBytes: Math.max(0, this.#totals.heldBytes) }
    this.#totals.allocatedBytes = 0
    this.#totals.samples = 0
    return { sites, totals }
  }
}

/** Bytes to the next sample: exponential, of mean `interval`. */
function nextCountdown (interval) {
  return -Math.log(1 - Math.random()) * interval
}

function wrapAllocators () {
  originals = new Map()
  for (const name of BUFFER_ALLOCATORS) {
    const original = Buffer[name]
    if (typeof original !== 'function') continue
    originals.set(name, original)
    Buffer[name] = name === 'from' ? sampledFrom(original) : sampledAllocator(original)
  }
}

function unwrapAllocators () {
  for (const [name, original] of originals) Buffer[name] = original
  originals = null
}

function sampledAllocator (original) {
  return function sampledAllocation () {
    if (inside) return original.apply(this, arguments)
    inside = true
    let buffer
    try {
      buffer = original.apply(this, arguments)
    } finally {
      inside = false
    }
    noteAllocation(buffer, sampledAllocation)
    return buffer
  }
}

function sampledFrom (original) {
  return function sampledBufferFrom (value) {
    if (inside) return original.apply(this, arguments)
    inside = true
    let buffer
    try {
      buffer = original.apply(this, arguments)
    } finally {
      inside = false
    }
    // a Buffer over an ArrayBuffer's memory allocates none
    if (!isAnyArrayBuffer(value)) noteAllocation(buffer, sampledBufferFrom)
    return buffer
  }
}

function noteAllocation (buffer, wrapper) {
  const bytes = buffer?.byteLength
  if (!(bytes > 0)) return
  let site = null
  for (const recorder of recorders) {
    if (!recorder.count(bytes)) continue
    site ??= captureSite(wrapper)
    recorder.record(site, bytes, buffer.buffer)
  }
}

/** The site of the code that called `wrapper`, from V8's structured stack. */
function captureSite (wrapper) {
  const limit = Error.stackTraceLimit
  const prepare = Error.prepareStackTrace
  const holder = {}
  let callSites
  try {
    Error.stackTraceLimit = STACK_FRAMES
    Error.prepareStackTrace = keepCallSites
    Error.captureStackTrace(holder, wrapper)
    callSites = holder.stack
  } finally {
    Error.stackTraceLimit = limit
    if (prepare === undefined) delete Error.prepareStackTrace
    else Error.prepareStackTrace = prepare
  }
  return siteOfCallSites(callSites)
}

function keepCallSites (error, callSites) {
  return callSites
}
