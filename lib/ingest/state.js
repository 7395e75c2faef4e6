/**
 * What POST /good holds across its requests, one per app: its places to stream (admit.js), the parse
 * threads and the budget of batch bytes out at them (lib/parse/pool.js), the one place to gather a
 * record larger than a batch, and the small-body rule. Each part is changed only by the module that
 * owns it. `createApp` makes it and its `close()` stops the threads; two apps keep their own.
 */
import { createParsePool, ByteBudget, threadHeapMb } from '../parse/pool.js'
import { SmallBodies } from '../parse/small-body.js'
import { Semaphore } from '../util/semaphore.js'
import { PipelinePlaces } from './admit.js'

/** `opts`: normalised app options (`parseThreads` and `ingest`). */
export function createIngestState (opts) {
  return new IngestState(opts)
}

export class IngestState {
  constructor (opts) {
    this.pipelines = new PipelinePlaces(opts.ingest.activePipelines)
    // started now, so the threads' memory counts as idle, not as the first request's
    this.pool = createParsePool(opts.parseThreads, threadHeapMb(opts.ingest.parseCost), opts.ingest.blockBytes)
    this.budget = new ByteBudget(opts.ingest.bufferBudget)
    // one request at a time may gather a record larger than a batch: every pipeline gathering the
    // largest allowed (twice, while it is copied into its batch) would pass /good's ceiling on its own
    this.largeRecordGate = new Semaphore(1)
    this.smallBodies = new SmallBodies(this.pool, opts.ingest)
    this.closed = null
  }

  /** What /good holds right now: requests streaming and queued, batch bytes out at the threads. */
  snapshot () {
    return {
      active: this.pipelines.active,
      queued: this.pipelines.queued,
      budgetUsed: this.budget.used,
      waiting: this.budget.waiting.length,
      gathering: this.largeRecordGate.held
    }
  }

  /** Stop the parse threads: queued batches are refused, batches on a thread end with it. Safe twice. */
  close () {
    if (this.closed === null) this.closed = this.pool.destroy()
    return this.closed
  }
}
