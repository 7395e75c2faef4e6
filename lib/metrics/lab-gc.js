/**
 * The collections the lab causes. Each read of V8's heap profile forces a mark-compact
 * (lib/allocation/heap.js: V8's inspector samples with `kSamplingForceGC`, and Node has no read
 * without it), and an experiment's window collects before it reads its idle; the lab runs each
 * through `labRead`, which notes when it ran on this
 * thread, and gc-events.js marks a collection that started inside such a span as the lab's.
 */
import { performance } from 'node:perf_hooks'

/** Spans kept: far more than the reads between two samples of the slowest stream. */
const KEPT = 256
/** [from, to] of each read, performance.now() ms, in time order. */
const spans = []

/**
 * Run `read` (a read of the heap profile) as the lab's: a collection inside it is the lab's.
 * @template T
 * @param {() => T} read
 * @returns {T}
 */
export function labRead (read) {
  const from = performance.now()
  try {
    return read()
  } finally {
    spans.push([from, performance.now()])
    if (spans.length > KEPT) spans.splice(0, spans.length - KEPT)
  }
}

/**
 * Whether a collection that started at `startTime` (performance.now() ms, a 'gc' entry's) ran
 * inside one of the lab's reads.
 * @param {number} startTime
 */
export function causedByLab (startTime) {
  for (let k = spans.length - 1; k >= 0; k--) {
    const [from, to] = spans[k]
    if (startTime >= from && startTime <= to) return true
    // the reads are synchronous: one that ended before this start, and every earlier one, did not hold it
    if (to < startTime) return false
  }
  return false
}
