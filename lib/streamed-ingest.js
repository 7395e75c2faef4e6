/**
 * The streamed ingest behind POST /good:
 * request -> compressed counter -> gunzip (per layer) -> inflated counter
 * and digest -> record sink, composed with `pipeline`. The sink finds
 * record boundaries on the main thread and has worker threads JSON.parse
 * batches of whole records, so memory stays constant: a few batches per
 * request, under one budget shared by all requests.
 */
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createGunzipBody } from './gzip-framing.js'
import {
  negotiateBody, checkContentLength, requestBody, compressedCounter, inflatedCounter, makeSummary, clientGone
} from './ingest-common.js'
import { detectFormat, DETECT_BYTES, RecordScanner, LineBatcher } from './json-records.js'
import { createTally, mergeTally, finishTally } from './tally.js'
import { getParsePool, ByteBudget, threadHeapMb } from './parse-pool.js'
import { fromZlibError, jsonInvalid, shapeInvalid, requestAborted, tooDeep, recordTooDense, pipelinesBusy } from './errors.js'
import { Semaphore } from './semaphore.js'

const MIN_CHUNK = 16 * 1024
const MAX_CHUNK = 256 * 1024
// Parse batches stay small: the records of a batch are all alive until it is
// tallied, and smaller batches let the parse threads' young generation
// collect them (measured: 64 KiB batches halved /good's peak against 256 KiB).
const MAX_BATCH = 64 * 1024

let activeRequests = 0
let sharedBudget = null
let sharedGate = null
/**
 * One request at a time may gather a record larger than a batch: eight
 * pipelines each gathering a 4 MiB record (twice, while it is copied into
 * its batch) would pass /good's ceiling on their own.
 */
const largeRecordGate = new Semaphore(1)
/** Seconds a client told the pipelines are busy is asked to wait. */
const RETRY_AFTER_SECONDS = 1

function gateFor (limit) {
  if (sharedGate === null || sharedGate.limit !== limit) sharedGate = new Semaphore(limit)
  return sharedGate
}

/**
 * Wait for one of the few places to stream. Past a handful of pipelines two
 * cores get no faster, but every extra one holds its socket, inflate and
 * batch buffers. Waiting requests are not read: their bytes wait in the
 * kernel's socket buffers and the client's, which is backpressure too.
 */
async function admit (req, limit, queueMs) {
  // a client gone while its request waited for the handler never sends 'close' again
  if (clientGone(req)) throw requestAborted(0)
  const gate = gateFor(limit)
  if (gate.held < gate.limit) return gate.acquire()
  const gone = new AbortController()
  const started = Date.now()
  function onClose () {
    if (!req.complete) gone.abort(requestAborted(0))
  }
  const deadline = setTimeout(function queueDeadlinePassed () {
    gone.abort(pipelinesBusy(limit, Date.now() - started, RETRY_AFTER_SECONDS))
  }, queueMs)
  deadline.unref()
  req.on('close', onClose)
  try {
    const leave = await gate.acquire(gone.signal)
    if (clientGone(req)) {
      leave()
      throw requestAborted(0)
    }
    return leave
  } finally {
    clearTimeout(deadline)
    req.removeListener('close', onClose)
  }
}

function budgetFor (bytes) {
  if (sharedBudget === null || sharedBudget.capacity !== bytes) sharedBudget = new ByteBudget(bytes)
  return sharedBudget
}

/**
 * Inflate and batch sizes for one more request: large when alone (zlib runs
 * about twice as fast with 256 KiB output chunks than with its 16 KiB
 * default; 1 MiB gained little more here and cost ~40 MiB of RSS), smaller
 * under concurrency so the total stays within the budget.
 */
function chunkSizeFor (bufferBudget, active) {
  const share = Math.floor(bufferBudget / (4 * Math.max(1, active)))
  return Math.max(MIN_CHUNK, Math.min(MAX_CHUNK, 2 ** Math.floor(Math.log2(Math.max(share, 1)))))
}

/**
 * A Writable that receives inflated bytes and answers with a tally.
 */
class RecordSink extends Writable {
  constructor ({ format, batchBytes, maxValueBytes, maxDepth, maxCost, pool, budget }) {
    super({ highWaterMark: 0 })
    this.maxCost = maxCost
    /** Aborts when the request is gone or refused: its queued work is dropped with it. */
    this.gone = new AbortController()
    /** Gives back the large-record place, while this request holds it. */
    this.leaveLarge = null
    this.format = format
    this.batchBytes = batchBytes
    this.maxValueBytes = maxValueBytes
    this.maxDepth = maxDepth
    this.pool = pool
    this.budget = budget
    this.prefix = []
    this.prefixBytes = 0
    this.scanner = null
    this.ready = [] // batches the scanner emitted, not yet sent
    this.inflight = new Set()
    this.tallies = new Map() // generation -> tally
    this.firstError = null // { offset, reason }
    this.result = null
    this.fatal = null
    const sink = this
    this.collect = function collectBatch (batch) { sink.ready.push(batch) }
  }

  startScanner (bytes) {
    if (this.format === null) this.format = detectFormat(bytes)
    const options = { batchBytes: this.batchBytes, maxValueBytes: this.maxValueBytes, maxDepth: this.maxDepth, onBatch: this.collect }
    this.scanner = this.format === 'ndjson' ? new LineBatcher(options) : new RecordScanner(this.format, options)
  }

  noteError (error) {
    if (this.firstError === null || (error.offset >= 0 && error.offset < this.firstError.offset)) this.firstError = error
  }

  async send () {
    while (this.ready.length > 0) {
      if (this.fatal !== null || this.destroyed) return
      // a request keeps every parse thread busy and one batch ready, no more
      while (this.inflight.size > this.pool.size) await Promise.race(this.inflight)
      const batch = this.ready.shift()
      const size = batch.bytes.byteLength
      const wait = this.budget.acquire(size, this.gone.signal)
      if (wait) {
        try {
          await wait
        } catch {
          return // destroyed while waiting: the budget was never taken
        }
      }
      if (this.destroyed) {
        this.budget.release(size)
        return
      }
      const task = this.run(batch, size)
      const inflight = this.inflight
      inflight.add(task)
      task.finally(function forgetTask () { inflight.delete(task) })
    }
  }

  async run (batch, size) {
    try {
      // transferred, not copied: the batch's bytes move to the parse thread
      const task = { kind: batch.kind, bytes: batch.bytes, maxDepth: this.maxDepth, maxCost: this.maxCost }
      const answer = await this.pool.run(task, { transferList: [batch.bytes.buffer], signal: this.gone.signal })
      if (answer.tooDense) {
        this.fatal = recordTooDense(this.maxCost, answer.tooDense.projected, size - 2, batch.offset)
      } else if (answer.error) {
        const offset = answer.error.offset < 0 ? -1 : batch.offset + answer.error.offset
        this.noteError({ offset, reason: answer.error.reason, error: answer.error.tooDeep ? tooDeep(this.maxDepth, offset) : undefined })
      } else if (answer.tally) {
        const known = this.tallies.get(batch.generation)
        if (known) mergeTally(known, answer.tally)
        else this.tallies.set(batch.generation, answer.tally)
      }
    } catch (err) {
      if (this.gone.signal.aborted) return // dropped from the queue: the request is over
      // past the projection, the thread's heap limit: refused like a projection past it
      if (err.code === 'ERR_WORKER_OUT_OF_MEMORY') this.fatal = recordTooDense(this.maxCost, null, size - 2, batch.offset)
      else this.fatal = err // a worker died: not the client's fault
    } finally {
      this.budget.release(size)
    }
  }

  /**
   * A record larger than a batch is being gathered: wait for the one place
   * to gather such records (backpressure reaches the socket meanwhile), and
   * give it back once the record has gone to a thread.
   */
  async holdLargeRecordPlace () {
    const gathering = this.scanner !== null && this.scanner.pieceBytes > 2 * this.batchBytes
    if (gathering && this.leaveLarge === null) {
      this.leaveLarge = await largeRecordGate.acquire(this.gone.signal)
    } else if (!gathering && this.leaveLarge !== null) {
      this.leaveLarge()
      this.leaveLarge = null
    }
  }

  _destroy (err, callback) {
    this.gone.abort(err ?? requestAborted(0))
    this.ready = []
    if (this.leaveLarge !== null) {
      this.leaveLarge()
      this.leaveLarge = null
    }
    callback(err)
  }

  async settle () {
    while (this.inflight.size > 0) {
      const pending = [...this.inflight]
      await Promise.allSettled(pending)
      for (const p of pending) this.inflight.delete(p)
    }
  }

  async scan (chunk) {
    if (this.scanner === null) {
      this.prefix.push(chunk)
      this.prefixBytes += chunk.length
      if (this.prefixBytes < DETECT_BYTES) return
      const head = Buffer.concat(this.prefix)
      this.prefix = []
      this.startScanner(head.subarray(0, DETECT_BYTES))
      chunk = head
    }
    try {
      this.scanner.write(chunk)
    } catch (err) {
      await this.failWith(err)
    }
    await this.send()
    if (this.firstError || this.fatal) await this.failWith(null)
    await this.holdLargeRecordPlace()
  }

  /** Stop at the first error in the input: a worker's may come earlier than the scanner's. */
  async failWith (scannerError) {
    // Batches the scanner emitted before it stopped lie before the fault it
    // found, and one of them may hold an earlier one: parse them first.
    await this.send()
    this.ready = []
    await this.settle()
    if (this.fatal) throw this.fatal
    if (scannerError && scannerError.details?.offset >= 0 && (scannerError.type === 'json.invalid' || scannerError.type === 'json.too.deep')) {
      this.noteError({ offset: scannerError.details.offset, reason: scannerError.details.reason, error: scannerError })
    } else if (scannerError) {
      throw scannerError
    }
    const first = this.firstError
    throw first.error ?? jsonInvalid(first.reason, first.offset)
  }

  _write (chunk, encoding, callback) {
    this.scan(chunk).then(function scanned () { callback() }, callback)
  }

  _final (callback) {
    this.finish().then(function finished () { callback() }, callback)
  }

  async finish () {
    if (this.scanner === null) {
      const head = Buffer.concat(this.prefix)
      this.prefix = []
      this.startScanner(head)
      if (head.length > 0) await this.scan(head)
    }
    let end
    try {
      end = this.scanner.end()
    } catch (err) {
      await this.failWith(err)
    }
    await this.send()
    await this.settle()
    if (this.firstError || this.fatal) await this.failWith(null)
    if (!end.shapeOk) throw shapeInvalid(this.format, 0)
    this.result = finishTally(this.tallies.get(end.generation) ?? createTally())
    await this.holdLargeRecordPlace()
  }
}

/**
 * Stream, inflate, parse and summarise a request body.
 * @param {import('express').Request} req
 * @param {object} opts normalised app options
 * @param {{ admission?: import('./admission.js').MemoryAdmission }} [context] paces garbage collection
 * @returns {Promise<object>} the summary
 */
export async function ingestStreamed (req, opts, { admission } = {}) {
  const plan = negotiateBody(req, opts.limits)
  checkContentLength(req, opts.limits.compressed)
  const leave = await admit(req, opts.ingest.activePipelines, opts.ingest.queueMs)
  activeRequests++
  const stopWatching = admission?.watchGarbage() ?? function nothingWatched () {}
  try {
    const chunkSize = chunkSizeFor(opts.ingest.bufferBudget, activeRequests)
    const compressed = compressedCounter(opts.limits.compressed)
    const gunzips = []
    for (let k = 0; k < plan.layers; k++) gunzips.push(createGunzipBody({ chunkSize }))
    const inflated = inflatedCounter(opts.limits, compressed)
    const sink = new RecordSink({
      format: plan.format,
      batchBytes: Math.min(chunkSize, MAX_BATCH),
      maxValueBytes: opts.limits.record,
      maxDepth: opts.limits.depth,
      maxCost: opts.ingest.parseCost,
      pool: getParsePool(opts.parseThreads, threadHeapMb(opts.ingest.parseCost)),
      budget: budgetFor(opts.ingest.bufferBudget)
    })
    try {
      await pipeline(requestBody(req, { idleMs: opts.limits.bodyIdleMs }), compressed, ...gunzips, inflated, sink)
    } catch (err) {
      throw fromZlibError(err, compressed.bytes) ?? err
    }
    return makeSummary({
      format: sink.format,
      tally: sink.result,
      inflatedBytes: inflated.bytes,
      compressedBytes: compressed.bytes,
      sha256: inflated.digest()
    })
  } finally {
    stopWatching()
    activeRequests--
    leave()
  }
}

/** What /good holds right now: requests in flight and batch bytes out at the workers. */
export function streamedIngestState () {
  return {
    active: activeRequests,
    queued: sharedGate ? sharedGate.waiting.length : 0,
    budgetUsed: sharedBudget ? sharedBudget.used : 0,
    waiting: sharedBudget ? sharedBudget.waiting.length : 0,
    gathering: largeRecordGate.held
  }
}
