/**
 * One small pool of parse threads for the whole process, shared by every
 * /good request (200 concurrent uploads must not start 200 isolates), and
 * one budget for the batch bytes in flight across all of them, so memory
 * stays constant whatever the concurrency: a request that finds the budget
 * spent waits, and backpressure reaches its socket.
 */
import { Piscina } from 'piscina'

const WORKER = new URL('./parse-worker.js', import.meta.url).href

const PARSE_THREAD_YOUNG_MB = 2

let pool = null
let poolThreads = 0

/**
 * The shared pool, started on first use.
 * @param {number} threads
 */
export function getParsePool (threads) {
  if (pool === null || poolThreads !== threads) {
    if (pool !== null) pool.destroy()
    poolThreads = threads
    pool = new Piscina({
      filename: WORKER,
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: 30_000,
      // the budget below bounds the queue; no need for piscina's own limit
      maxQueue: Infinity,
      // A batch's records die as soon as they are tallied; a small young
      // generation collects them sooner. V8's default lets each thread's
      // young space grow to tens of MiB, which was most of /good's memory
      // (measured at 500 MB: 2 MiB gave 47 MiB above idle, 8 MiB 59 MiB).
      resourceLimits: { maxYoungGenerationSizeMb: PARSE_THREAD_YOUNG_MB }
    })
  }
  return pool
}

/** Stop the pool's threads (tests and shutdown). */
export async function closeParsePool () {
  if (pool === null) return
  const p = pool
  pool = null
  await p.destroy()
}

/**
 * Counting semaphore on bytes: acquire before sending a batch, release when
 * its answer is back.
 */
export class ByteBudget {
  constructor (capacity) {
    this.capacity = capacity
    this.used = 0
    this.waiting = []
  }

  /** Resolves once `bytes` fit (a single oversized request goes alone). */
  acquire (bytes) {
    if (this.used === 0 || this.used + bytes <= this.capacity) {
      this.used += bytes
      return null
    }
    const budget = this
    return new Promise(function waitForBudget (resolve) {
      budget.waiting.push({ bytes, resolve })
    })
  }

  release (bytes) {
    this.used -= bytes
    while (this.waiting.length > 0) {
      const next = this.waiting[0]
      if (this.used !== 0 && this.used + next.bytes > this.capacity) break
      this.waiting.shift()
      this.used += next.bytes
      next.resolve()
    }
  }
}
