/**
 * What POST /good holds across its requests, one per app: the parse
 * threads, the budget of batch bytes out at them, the few places to stream,
 * the one place to gather a record larger than a batch, and the count of
 * requests streaming. `createApp` makes it and its `close()` stops the
 * threads; two apps in one process keep their own.
 */
import { createParsePool, ByteBudget, threadHeapMb } from '../parse/pool.js'
import { performance } from 'node:perf_hooks'
import { Semaphore } from '../util/semaphore.js'

/**
 * @param {object} opts normalised app options (`parseThreads`, `ingest.parseCost`,
 *   `ingest.bufferBudget`, `ingest.activePipelines`)
 * @returns {IngestState}
 */
export function createIngestState (opts) {
  return new IngestState(opts)
}

/** See the module comment. */
export class IngestState {
  constructor (opts) {
    /** Requests streaming now (inside their pipeline place). */
    this.active = 0
    // started now, so the threads' memory counts as idle, not as the first request's
    this.pool = createParsePool(opts.parseThreads, threadHeapMb(opts.ingest.parseCost))
    /** Batch bytes out at the parse threads, across all requests. */
    this.budget = new ByteBudget(opts.ingest.bufferBudget)
    /**
     * Places to stream: past a handful of pipelines two cores get no faster,
     * but every extra one holds its socket, inflate and batch buffers.
     */
    this.gate = new Semaphore(opts.ingest.activePipelines)
    /**
     * One request at a time may gather a record larger than a batch: eight
     * pipelines each gathering a 4 MiB record (twice, while it is copied into
     * its batch) would pass /good's ceiling on their own.
     */
    this.largeRecordGate = new Semaphore(1)
    /**
     * The requests streaming now, as `{ counter, length, startedAt }` (compressed bytes read so far,
     * Content-Length or NaN, Date.now() at its start): how a queue tells moving from stuck.
     */
    this.streaming = new Set()
    /** Small documents sent to an idle parse thread so far, rather than parsed on the main thread. */
    this.documentsShared = 0
    /** The event loop's utilisation when a small document was last placed (mainThreadPaused). */
    this.lastPlaced = performance.eventLoopUtilization()
    this.closed = null
  }

  /**
   * Whether the event loop waited for I/O since the last small document was
   * placed: it had time to spare (one client, waiting for its next request;
   * or parse threads still busy), so parsing here costs no other request
   * anything. When it went from one request straight to the next, requests
   * are waiting for the main thread, and a parse is worth moving off it.
   * @param {number} idleMs waiting shorter than this is not a pause
   */
  mainThreadPaused (idleMs) {
    const now = performance.eventLoopUtilization()
    const since = performance.eventLoopUtilization(now, this.lastPlaced)
    this.lastPlaced = now
    return since.idle >= idleMs
  }

  /** Compressed bytes the requests streaming now have read so far, together. */
  streamingBytes () {
    let bytes = 0
    for (const stream of this.streaming) bytes += stream.counter.bytes
    return bytes
  }

  /**
   * The soonest a request streaming now is on course to end, in ms from `now`, at the pace it has
   * kept since it started: Infinity when none has a Content-Length and bytes read.
   */
  soonestEndMs (now = Date.now()) {
    let soonest = Infinity
    for (const { counter, length, startedAt } of this.streaming) {
      const ms = now - startedAt
      if (!Number.isSafeInteger(length) || counter.bytes <= 0 || ms <= 0) continue
      soonest = Math.min(soonest, Math.max(0, length - counter.bytes) * ms / counter.bytes)
    }
    return soonest
  }

  /** What /good holds right now: requests in flight and batch bytes out at the workers. */
  snapshot () {
    return {
      active: this.active,
      queued: this.gate.waiting.length,
      budgetUsed: this.budget.used,
      waiting: this.budget.waiting.length,
      gathering: this.largeRecordGate.held
    }
  }

  /**
   * Stop the parse threads: batches still queued are refused, batches on a
   * thread end with it. Safe to call twice.
   * @returns {Promise<void>}
   */
  close () {
    if (this.closed === null) this.closed = this.pool.destroy()
    return this.closed
  }
}
