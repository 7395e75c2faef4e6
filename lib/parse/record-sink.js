/**
 * Stages 5 to 7 of POST /good (lib/ingest/README.md): the record sink at the
 * end of its pipeline. A Writable that takes inflated bytes, finds where
 * records end on the main thread, has the parse threads JSON.parse batches
 * of whole records, tallies them, and ends with what it found (`found`: the
 * format and the tally). A few batches per request, within the budget all
 * requests share. A small body (lib/parse/small-body.js) is parsed here,
 * whole when it is held whole (`parseWhole`).
 */
import { Writable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { detectFormat, DETECT_BYTES, RecordScanner, LineBatcher } from '../json/records.js'
import { CuttingScanner } from '../json/cutter.js'
import { createTally, mergeTally, finishTally } from './tally.js'
import { parseBatch, parseDocument } from './parse-batch.js'
import { jsonInvalid, shapeInvalid, requestAborted, tooDeep, recordTooDense } from '../errors/index.js'

/**
 * A batch this small is parsed on the main thread, even in a large body: it
 * costs less than its trip to a thread, and a body's first batches (a key, a
 * short value) would otherwise hold the threads its first full batch needs.
 */
const SMALL_BATCH = 4 * 1024
/** Most batches sent to a thread in one message (see takeGroup). */
const GROUP_BATCHES = 4

function heldBy (sum, batch) {
  return sum + batch.bytes.buffer.byteLength
}

/**
 * A Writable that takes inflated bytes and ends with `found`.
 * @param {{ format: string|null, batchBytes: number, maxValueBytes: number, maxDepth: number, maxCost: number,
 *   simd?: boolean, smallBodies: import('./small-body.js').SmallBodies, pool: object, budget: import('./pool.js').ByteBudget,
 *   largeRecordGate: import('../util/semaphore.js').Semaphore }} options
 *   format null: detected from the first bytes; the rest is what lib/ingest/state.js holds for the app
 */
export class RecordSink extends Writable {
  constructor ({ format, batchBytes, maxValueBytes, maxDepth, maxCost, simd = true, smallBodies, pool, budget, largeRecordGate }) {
    super({ highWaterMark: 0 })
    /** WebAssembly SIMD: the cutter in front of the scanner (lib/json/cutter.js), the threads' UTF-8 decoder. */
    this.simd = simd
    this.maxCost = maxCost
    /** The small-body rule: a body that ends within it is parsed here, not on a thread. */
    this.smallBodies = smallBodies
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
    /** Most bytes sent to a thread in one message: GROUP_BATCHES full batches, each a record past the size. */
    this.groupBytes = (GROUP_BATCHES + 1) * batchBytes
    this.maxValueBytes = maxValueBytes
    this.maxDepth = maxDepth
    this.pool = pool
    this.budget = budget
    this.largeRecordGate = largeRecordGate
    this.prefix = []
    this.prefixBytes = 0
    this.scanner = null
    this.ready = [] // batches the scanner emitted, not yet sent
    this.inflight = new Set()
    /** Batch bytes this request has out at the parse threads now. */
    this.outBytes = 0
    this.tallies = new Map() // generation -> tally
    this.firstError = null // { offset, reason }
    /** What the body held, once it ended without fault: `{ format, tally }`. */
    this.found = null
    this.fatal = null
    const sink = this
    this.collect = function collectBatch (batch) { sink.ready.push(batch) }
  }

  startScanner (bytes) {
    if (this.format === null) this.format = detectFormat(bytes)
    const options = {
      batchBytes: this.batchBytes, maxValueBytes: this.maxValueBytes, maxDepth: this.maxDepth, onBatch: this.collect, allocate: this.pool.spares?.take
    }
    const Scanner = this.simd ? CuttingScanner : RecordScanner
    this.scanner = this.format === 'ndjson' ? new LineBatcher(options) : new Scanner(this.format, options)
  }

  noteError (error) {
    if (this.firstError === null || (error.offset >= 0 && error.offset < this.firstError.offset)) this.firstError = error
  }

  async send () {
    if (this.smallBodies.within(this.seen)) {
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
      // a request keeps every parse thread busy and one job ready, no more
      while (this.inflight.size > this.pool.size) await Promise.race(this.inflight)
      const group = this.takeGroup()
      // what the batches' buffers hold, spare room included
      const size = group.batches.reduce(heldBy, 0)
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
      const task = this.run(group.batches, size)
      const inflight = this.inflight
      inflight.add(task)
      task.finally(function forgetTask () { inflight.delete(task) })
    }
  }

  /**
   * The next batches for one trip to a thread: the first ready one, and those
   * after it while they are not small, within `groupBytes` and GROUP_BATCHES.
   * The main thread pays per trip, not per batch, and the thread still parses
   * them one at a time. While threads are idle the batches are shared out
   * among them, so one request alone parses on every thread.
   * @returns {{ batches: object[], bytes: number }}
   */
  takeGroup () {
    const idle = this.pool.queued > 0 ? 0 : this.pool.idle.length
    const most = idle > 1 ? Math.min(GROUP_BATCHES, Math.ceil(this.ready.length / idle)) : GROUP_BATCHES
    const batches = [this.ready.shift()]
    let bytes = batches[0].bytes.byteLength
    while (batches.length < most && this.ready.length > 0) {
      const next = this.ready[0].bytes.byteLength
      if (next <= SMALL_BATCH || bytes + next > this.groupBytes) break
      batches.push(this.ready.shift())
      bytes += next
    }
    return { batches, bytes }
  }

  /**
   * Parse the batches of a small body on this thread: the same parseBatch a
   * thread runs, so the same projection, errors and tally, without a hop
   * that costs more than the parse.
   */
  parseHere () {
    const batches = this.ready
    this.ready = []
    for (const batch of batches) {
      if (this.fatal !== null || this.destroyed) return
      this.parseOne(batch)
    }
  }

  /** What parseBatch takes for one batch (costBound: the scanner's bound on its projected cost, where it had one). */
  taskFor (batch) {
    const { kind, bytes, costBound = Infinity } = batch
    // giveBack: the thread hands the buffer back for the next batches (lib/parse/pool.js, SpareBuffers)
    return { kind, bytes, maxDepth: this.maxDepth, maxCost: this.maxCost, costBound, simd: this.simd, giveBack: true }
  }

  /** parseBatch on this thread, for one batch. */
  parseOne (batch) {
    this.take(batch, batch.bytes.byteLength, parseBatch(this.taskFor(batch)))
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

  /** Parse a group of batches on a thread (takeGroup), and take their answers in order. */
  async run (batches, size) {
    let sizes = null
    this.outBytes += size
    try {
      // transferred, not copied: the batches' bytes move to the parse thread (their sizes are read first)
      sizes = batches.map(function sizeOf (batch) { return batch.bytes.byteLength })
      const tasks = batches.map(this.taskFor, this)
      const transferList = batches.map(function bytesOf (batch) { return batch.bytes.buffer })
      const answers = await this.pool.run(tasks, { transferList, signal: this.gone.signal })
      for (let k = 0; k < batches.length; k++) this.take(batches[k], sizes[k], answers[k])
    } catch (err) {
      if (this.gone.signal.aborted) return // dropped from the queue: the request is over
      // past the projection, the thread's heap limit: refused like a projection past it,
      // for the batch the thread was parsing when it ran out (the pool says which)
      if (err.code === 'ERR_WORKER_OUT_OF_MEMORY') {
        const k = err.taskIndex < batches.length ? err.taskIndex : 0
        this.fatal = recordTooDense(this.maxCost, null, sizes[k] - 2, batches[k].offset)
      } else this.fatal = err // a worker died: not the client's fault
    } finally {
      this.outBytes -= size
      this.budget.release(size)
    }
  }

  /**
   * Bytes the sink holds besides the chunk it is writing: the head kept to
   * detect the format, the pieces of the record being gathered, the batches
   * ready to send. Read when a sample is taken (lib/metrics/held.js).
   */
  heldBytes () {
    let bytes = 0
    for (const piece of this.prefix) bytes += piece.length
    for (const piece of this.scanner?.pieces ?? []) bytes += piece.length
    for (const batch of this.ready) bytes += batch.bytes.byteLength
    return bytes
  }

  /**
   * The most the sink holds, the chunk it writes included, for chunks of at
   * most `chunk` bytes: that chunk, the batches made from it and the one
   * before, the record being gathered (a batch, or one record up to the
   * record limit), and the head.
   */
  heldBound (chunk) {
    return 3 * chunk + this.batchBytes + Math.max(this.batchBytes, this.maxValueBytes) + DETECT_BYTES
  }

  /**
   * A record larger than a batch is being gathered: wait for the one place
   * to gather such records (backpressure reaches the socket meanwhile), and
   * give it back once the record has gone to a thread.
   */
  async holdLargeRecordPlace () {
    const gathering = this.scanner !== null && this.scanner.pieceBytes > 2 * this.batchBytes
    if (gathering && this.leaveLarge === null) {
      this.leaveLarge = await this.largeRecordGate.acquire(this.gone.signal)
    } else if (!gathering && this.leaveLarge !== null) {
      this.leaveLarge()
      this.leaveLarge = null
    }
  }

  _destroy (err, callback) {
    // a sink that finished has nothing left queued: no reason to make (an error, with its stack)
    if (this.found === null) this.gone.abort(err ?? requestAborted(0))
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
    this.found = { format: this.format, tally: finishTally(this.tallies.get(end.generation) ?? createTally()) }
    await this.holdLargeRecordPlace()
  }

  /**
   * A small body held whole, inflated: a valid document within the limits
   * is parsed at once (parseDocument, here or on an idle parse thread);
   * anything else is scanned as a streamed body is, so that every refusal,
   * and its offset, is the one a streamed body gets.
   * @param {Buffer} data
   * @returns {Promise<{ format: string, tally: object }>}
   */
  async parseWhole (data) {
    const format = this.format ?? detectFormat(data)
    if (format !== 'ndjson') {
      const document = { kind: 'document', bytes: data, format, maxDepth: this.maxDepth, maxCost: this.maxCost, maxValueBytes: this.maxValueBytes }
      const answer = this.smallBodies.shareTheParse(data.byteLength) ? await this.smallBodies.parseThere(document) : parseDocument(document)
      if (answer !== null) return { format, tally: finishTally(answer.tally) }
    }
    this.format = format
    this.end(data)
    await finished(this)
    return this.found
  }
}
