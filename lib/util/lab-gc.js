/**
 * The collections the lab causes. Each read of V8's heap profile forces a mark-compact (lib/allocation/heap.js: V8's inspector
 * samples with `kSamplingForceGC`, and Node has no read without it), and the lab collects for itself (an experiment's window
 * before it reads its idle, the memory budget before it refuses): each runs through `labRead`, which notes when it ran on this
 * thread, and lib/metrics/gc-events.js marks a collection started inside one as the lab's.
 */
import { performance } from 'node:perf_hooks'
import { findCollector } from './collect-garbage.js'

/** Spans kept: far more than the reads between two samples of the slowest stream. */
const KEPT = 256
/** [from, to] of each read, performance.now() ms, in time order. */
const spans = []

/** Run `read` (a read of the heap profile) as the lab's: a collection inside it is the lab's. */
export function labRead (read) {
  const from = performance.now()
  try {
    return read()
  } finally {
    spans.push([from, performance.now()])
    if (spans.length > KEPT) spans.splice(0, spans.length - KEPT)
  }
}

/** Whether a collection that started at `startTime` (performance.now() ms, a 'gc' entry's) ran inside one of the lab's reads. */
export function causedByLab (startTime) {
  for (let k = spans.length - 1; k >= 0; k--) {
    const [from, to] = spans[k]
    if (startTime >= from && startTime <= to) return true
    // the reads are synchronous: one that ended before this start, and every earlier one, did not hold it
    if (to < startTime) return false
  }
  return false
}

/**
 * A collection as the lab's own (collect-garbage.js's, run through `labRead`), for the lab's measuring and pacing code: full,
 * or a scavenge for `{ type: 'minor' }` (V8's `gc` options, passed on); null where the runtime gives none.
 */
export function labCollector (collect = findCollector()) {
  if (collect === null) return null
  return function labCollect (options) {
    labRead(function collectAsTheLab () { return options === undefined ? collect() : collect(options) })
  }
}
