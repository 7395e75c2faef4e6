/**
 * The streamed ingest behind POST /good:
 * request -> compressed counter -> gunzip (per layer) -> inflated counter
 * and digest -> record sink, composed with `pipeline`. The sink finds
 * record boundaries on the main thread and has worker threads JSON.parse
 * batches of whole records, so memory stays constant: a few batches per
 * request, under one budget shared by all requests.
 */
import { Readable, Writable } from 'node:stream'
import { pipeline, finished } from 'node:stream/promises'
import zlib from 'node:zlib'
import { createGunzipBody, paddingError } from './gzip-framing.js'
import {
  negotiateBody, checkContentLength, requestBody, compressedCounter, inflatedCounter, makeSummary, clientGone
} from './ingest-common.js'
import { detectFormat, DETECT_BYTES, RecordScanner, LineBatcher } from './json-records.js'
import { createTally, mergeTally, finishTally } from './tally.js'
import { getParsePool, ByteBudget, threadHeapMb } from './parse-pool.js'
import parseBatch, { parseDocument } from './parse-worker.js'
import { fromZlibError, jsonInvalid, shapeInvalid, requestAborted, tooDeep, recordTooDense, pipelinesBusy } from './errors.js'
import { Semaphore } from './semaphore.js'

const MIN_CHUNK = 16 * 1024
const MAX_CHUNK = 256 * 1024
/** The smallest inflate chunk, for the smallest bodies. */
const SMALL_CHUNK = 4 * 1024
/**
 * Inflated bytes expected per compressed byte when sizing a small body's
 * inflate chunk: JSON inflates 2 to 10 times; a body that inflates more
 * only takes more chunks.
 */
const EXPECTED_RATIO = 8
// Parse batches stay small: the records of a batch are all alive until it is
// tallied, and smaller batches let the parse threads' young generation
// collect them (measured: 64 KiB batches halved /good's peak against 256 KiB).
const MAX_BATCH = 64 * 1024
/**
 * A batch this small is parsed on the main thread, even in a large body:
 * JSON.parse of 4 KiB takes tens of microseconds, less than its message to
 * a thread and back, and a body's first batches (a key, a short value) would
 * otherwise hold the threads while its first full batch waits.
 */
const SMALL_BATCH = 4 * 1024

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
export function chunkSizeFor (bufferBudget, active) {
  const share = Math.floor(bufferBudget / (4 * Math.max(1, active)))
  return Math.max(MIN_CHUNK, Math.min(MAX_CHUNK, 2 ** Math.floor(Math.log2(Math.max(share, 1)))))
}

/**
 * The inflate chunk for a body of `compressedBytes` (Content-Length, or NaN
 * when chunked): no larger than the body needs. zlib allocates its whole
 * output chunk up front, so a 1 KB body inflated into a 256 KiB chunk costs
 * 256 KiB of Buffer memory, and thousands of them a second are garbage that
 * watchGarbage must have collected (a full collection every 48 requests).
 */
export function inflateChunkFor (share, compressedBytes) {
  if (!Number.isSafeInteger(compressedBytes) || compressedBytes < 0) return share
  const wanted = 2 ** Math.ceil(Math.log2(Math.max(1, EXPECTED_RATIO * compressedBytes)))
  return Math.max(SMALL_CHUNK, Math.min(share, wanted))
}

/**
 * A Writable that receives inflated bytes and answers with a tally.
 */
class RecordSink extends Writable {
  constructor ({ format, batchBytes, maxValueBytes, maxDepth, maxCost, inlineBytes = 0, pool, budget }) {
    super({ highWaterMark: 0 })
    this.maxCost = maxCost
    /** A body that ends within this many inflated bytes is parsed here, not on a thread. */
    this.inlineBytes = inlineBytes
    /** Inflated bytes received so far. */
    this.seen = 0
    /** The input is over (it ended, or scanning stopped at an error): no batch will follow. */
    this.final = false
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
    if (this.inlineBytes > 0 && this.seen <= this.inlineBytes) {
      // a small body so far: hold its batches until it ends (then parse them
      // here) or grows past the bound (then send them on, as for any body)
      if (this.final) this.parseHere()
      return
    }
    while (this.ready.length > 0) {
      if (this.fatal !== null || this.destroyed) return
      if (this.ready[0].bytes.byteLength <= SMALL_BATCH) {
        // a key, a short value, the last records of an array: parsed here for less than its
        // trip to a thread, and it does not hold a thread the next full batch could use
        this.parseOne(this.ready.shift())
        continue
      }
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

  /**
   * Parse the batches of a body that ended within `inlineBytes`, on this
   * thread: the same parseBatch a thread runs, so the same projection of
   * its cost first (413 record.too.dense), the same errors and the same
   * tally. For a body this small the hop to a thread (a message each way,
   * a thread to wake) costs more than JSON.parse itself, and the parse
   * holds the event loop no longer than /bad's would for the same bytes.
   */
  parseHere () {
    const batches = this.ready
    this.ready = []
    for (const batch of batches) {
      if (this.fatal !== null || this.destroyed) return
      this.parseOne(batch)
    }
  }

  /** parseBatch on this thread, for one batch. */
  parseOne (batch) {
    const task = { kind: batch.kind, bytes: batch.bytes, maxDepth: this.maxDepth, maxCost: this.maxCost }
    this.take(batch, batch.bytes.byteLength, parseBatch(task))
  }

  /** Fold one batch's answer into the request's figures. */
  take (batch, size, answer) {
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
  }

  async run (batch, size) {
    try {
      // transferred, not copied: the batch's bytes move to the parse thread
      const task = { kind: batch.kind, bytes: batch.bytes, maxDepth: this.maxDepth, maxCost: this.maxCost }
      this.take(batch, size, await this.pool.run(task, { transferList: [batch.bytes.buffer], signal: this.gone.signal }))
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
    // a sink that finished has nothing left queued: no reason to make (an error, with its stack)
    if (this.result === null) this.gone.abort(err ?? requestAborted(0))
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
    this.final = true
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
    this.seen += chunk.length
    this.scan(chunk).then(function scanned () { callback() }, callback)
  }

  _final (callback) {
    this.finish().then(function finished () { callback() }, callback)
  }

  async finish () {
    this.final = true
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

function gunzipLayers (layers, chunkSize) {
  const gunzips = []
  for (let k = 0; k < layers; k++) gunzips.push(createGunzipBody({ chunkSize }))
  return gunzips
}

/**
 * Read a body to its end and keep it, checking each chunk with `count`.
 * Events rather than `pipeline`: one source read whole needs no composing,
 * and for a body of a read or two pipeline's set-up (an AbortController,
 * end-of-stream watches on both sides) cost more than all the rest.
 * @param {import('node:stream').Readable} source destroyed with the error when `count` refuses a chunk
 * @param {(chunk: Buffer) => Error|null} count
 * @returns {Promise<Buffer>}
 */
function readWhole (source, count) {
  return new Promise(function read (resolve, reject) {
    const pieces = []
    source.on('data', function keep (chunk) {
      const error = count(chunk)
      if (error) source.destroy(error)
      else pieces.push(chunk)
    })
    source.once('end', function ended () { resolve(pieces.length === 1 ? pieces[0] : Buffer.concat(pieces)) })
    source.once('error', reject)
  })
}

/**
 * Inflate a body held whole, layer by layer, making at most `bound` bytes,
 * framed as lib/gzip-framing.js frames every body (members, then nothing or
 * zero padding: `paddingError`, as gunzipWhole applies it for /bad). In one
 * synchronous call: for a body this small, zlib's thread pool costs more
 * than inflating (a stream or `zlib.gunzip` goes there and back twice, and
 * measured 230 us for a 1 KB body that inflates in 50).
 * @returns {Buffer|null} null when a layer inflates past the bound
 */
function inflateInHand (body, layers, bound) {
  let data = body
  for (let k = 0; k < layers; k++) {
    let inflated
    try {
      inflated = zlib.gunzipSync(data, { info: true, maxOutputLength: bound })
    } catch (err) {
      if (err.code === 'ERR_BUFFER_TOO_LARGE') return null
      throw err
    }
    const error = paddingError(data, inflated.engine.bytesWritten, 0)
    if (error) throw error
    data = inflated.buffer
  }
  return data
}

/**
 * A body whose Content-Length is within the inline bound arrives in a read
 * or two: read it whole, inflate it at once and, when it inflates within
 * the bound too, parse it here on the main thread (the hop to a parse
 * thread costs more than JSON.parse for so little). A valid document
 * within the limits is parsed whole (parseDocument); anything else goes
 * through the record sink, so every refusal is the one a streamed body gets.
 * A body that inflates past the bound is streamed like any other, from memory.
 * @returns {Promise<{ format: string, tally: object }>}
 */
async function ingestInHand (source, { compressed, inflated, sink, layers, bound, chunkSize, limits, maxCost }) {
  const body = await readWhole(source, compressed.count)
  const data = inflateInHand(body, layers, bound)
  if (data === null) {
    await pipeline(Readable.from([body]), ...gunzipLayers(layers, chunkSize), inflated, sink)
    return { format: sink.format, tally: sink.result }
  }
  const error = inflated.count(data)
  if (error) throw error
  const format = sink.format ?? detectFormat(data)
  if (format !== 'ndjson') {
    const answer = parseDocument({ bytes: data, format, maxDepth: limits.depth, maxCost, maxValueBytes: limits.record })
    if (answer !== null) return { format, tally: finishTally(answer.tally) }
  }
  sink.format = format
  sink.end(data)
  await finished(sink)
  return { format, tally: sink.result }
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
    const share = chunkSizeFor(opts.ingest.bufferBudget, activeRequests)
    const length = Number(req.headers['content-length'])
    const chunkSize = inflateChunkFor(share, length)
    const compressed = compressedCounter(opts.limits.compressed)
    const inflated = inflatedCounter(opts.limits, compressed)
    const sink = new RecordSink({
      format: plan.format,
      batchBytes: Math.min(share, MAX_BATCH),
      maxValueBytes: opts.limits.record,
      maxDepth: opts.limits.depth,
      maxCost: opts.ingest.parseCost,
      inlineBytes: opts.ingest.inlineParse,
      pool: getParsePool(opts.parseThreads, threadHeapMb(opts.ingest.parseCost)),
      budget: budgetFor(opts.ingest.bufferBudget)
    })
    const body = requestBody(req, { idleMs: opts.limits.bodyIdleMs })
    let parsed
    try {
      if (Number.isSafeInteger(length) && length <= opts.ingest.inlineParse) {
        parsed = await ingestInHand(body, {
          compressed, inflated, sink, layers: plan.layers, bound: opts.ingest.inlineParse, chunkSize, limits: opts.limits, maxCost: opts.ingest.parseCost
        })
      } else {
        await pipeline(body, compressed, ...gunzipLayers(plan.layers, chunkSize), inflated, sink)
        parsed = { format: sink.format, tally: sink.result }
      }
    } catch (err) {
      throw fromZlibError(err, compressed.bytes) ?? err
    }
    return makeSummary({
      format: parsed.format,
      tally: parsed.tally,
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
