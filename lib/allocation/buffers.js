/**
 * Buffer bytes by site. V8's sampling heap profiler never sees a Buffer's bytes: they are an ArrayBuffer's backing store, outside
 * V8's heap. So the Buffer allocators that the lab and Node's own JavaScript call are wrapped while a recorder listens, and an
 * allocation of s bytes is sampled with probability 1 - exp(-s / interval) (a countdown of bytes drawn from an exponential law,
 * as V8 samples its heap). A sampled allocation stands for s / that probability bytes, is charged to its site, and stays "held"
 * until its ArrayBuffer is collected. More: README.md, "buffers.js".
 */
import { Buffer } from 'node:buffer'
import { isAnyArrayBuffer } from 'node:util/types'
import { WrappingRecorder } from './site-table.js'
import { anyPrefers, captureCallSites, siteOfCallSites } from './frames.js'

/**
 * The allocators wrapped. `Buffer.from` allocates unless it is handed an ArrayBuffer (it then shares that memory); `concat` calls
 * `allocUnsafe` itself, which is not counted twice.
 */
export const BUFFER_ALLOCATORS = Object.freeze(['alloc', 'allocUnsafe', 'allocUnsafeSlow', 'concat', 'from', 'copyBytesFrom'])

/** the recorders of this thread */
const recorders = new Set()
/** the allocators as they were, while wrapped */
let originals = null
/** Inside a wrapped allocator: the allocators it calls are part of its allocation. */
let inside = false

/** Whether this thread's Buffer allocators are wrapped now. */
export function buffersWrapped () {
  return originals !== null
}

/** Samples this thread's Buffer allocations, by site, from `start()` to `stop()`; each held until its ArrayBuffer is collected. */
export class BufferRecorder extends WrappingRecorder {
  constructor (intervalBytes, prefer = null) {
    super(intervalBytes, prefer, { kind: 'buffer', held: true, recorders, wrap: wrapAllocators, unwrap: unwrapAllocators })
  }
}

function wrapAllocators () {
  originals = new Map()
  for (const name of BUFFER_ALLOCATORS) {
    const original = Buffer[name]
    if (typeof original !== 'function') continue
    originals.set(name, original)
    Buffer[name] = name === 'from' ? sampled(original, fromAllocates) : sampled(original)
  }
}

function unwrapAllocators () {
  for (const [name, original] of originals) Buffer[name] = original
  originals = null
}

/**
 * `original` wrapped: its allocation noted, unless `allocates(args)` says this call makes none; calls it makes itself (concat's
 * allocUnsafe) are part of it, not noted again.
 */
function sampled (original, allocates = function always () { return true }) {
  return function sampledAllocation () {
    if (inside) return original.apply(this, arguments)
    inside = true
    let buffer
    try {
      buffer = original.apply(this, arguments)
    } finally {
      inside = false
    }
    if (allocates(arguments)) noteAllocation(buffer, sampledAllocation)
    return buffer
  }
}

/** Buffer.from over an ArrayBuffer's memory allocates none. */
function fromAllocates (args) {
  return !isAnyArrayBuffer(args[0])
}

function noteAllocation (buffer, wrapper) {
  const bytes = buffer?.byteLength
  if (!(bytes > 0)) return
  let callSites = null
  for (const recorder of recorders) {
    if (!recorder.count(bytes)) continue
    callSites ??= captureCallSites(wrapper, anyPrefers(recorders))
    recorder.record(siteOfCallSites(callSites, recorder.prefer), bytes, buffer.buffer)
  }
}
