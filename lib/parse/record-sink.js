/**
 * Stages 5 to 7 of POST /good (lib/ingest/README.md): a Writable at the end of its pipeline that
 * copies inflated bytes into blocks, finds where records end in each block on the main thread, has
 * the parse threads JSON.parse batches of whole records within the budget all requests share,
 * tallies them, and ends with `found`. A block's batches are views of it: it goes to a thread whole,
 * in one message, and comes back for the next bytes (docs/ingest.md, "Blocks"). A small body
 * (small-body.js) is parsed here, whole when it is held whole (`parseWhole`).
 */
import { Writable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { detectFormat, DETECT_BYTES, RecordScanner, LineBatcher } from '../json/records.js'
import { CuttingScanner } from '../json/cutter.js'
import { createTally, mergeTally, finishTally } from './tally.js'
import { parseBatch, parseDocument } from './parse-batch.js'
import { jsonInvalid, shapeInvalid, requestAborted, tooDeep, recordTooDense } from '../errors/index.js'

// A batch this small is parsed on the main thread even in a large body: it costs less than its trip,
// and a body's first short batches would otherwise hold the threads its first full batch needs.
const SMALL_BATCH = 4 * 1024
const GROUP_BATCHES = 4 // most batches sent to a thread in one message (takeGroup)

/** A scanner's refusal that names where the JSON went wrong, to weigh against the threads' errors. */
function isLocated (err) {
  return err?.details?.offset >= 0 && (err.type === 'json.invalid' || err.type === 'json.too.deep')
}

/** The buffers a group's batches are in, each once: a block's batches share it. */
function buffersOf (batches) {
  return [...new Set(batches.map(function bufferOf (batch) { return batch.bytes.buffer }))]
}

function bytesIn (sum, buffer) {
  return sum + buffer.byteLength
}

/**
 * `format` null: detected from the first bytes; `batchBytes` the request's share of the budget, and
 * `blockBytes()` its share now, at most `blockMost` (lib/ingest/streamed.js); `streams()` how many
 * requests stream now; the rest is what lib/ingest/state.js holds for the app.
 */
export class RecordSink extends Writable {
  constructor (options) {
    const { format, batchBytes, blockBytes, blockMost, maxValueBytes, maxDepth, maxCost, simd = true } = options
    const { smallBodies, pool, budget, largeRecordGate, streams } = options
    super({ highWaterMark: 0 })
    this.simd = simd // WebAssembly SIMD: the cutter in front of the scanner, the threads' UTF-8 decoder
    this.maxCost = maxCost
    this.smallBodies = smallBodies // a body that ends within the rule is parsed here, not on a thread
    this.seen = 0
    this.final = false // the input is over (ended, or scanning stopped at an error): no batch will follow
    this.gone = new AbortController() // the request is gone or refused: its queued work is dropped with it
    this.leaveLarge = null // gives back the large-record place, while held
    this.format = format
    this.batchBytes = batchBytes
    this.blockBytes = blockBytes
    this.blockMost = blockMost
    this.streams = streams // how many requests stream now, this one included
    this.block = null // `{ u8, room, fill, lent }`: the block being filled, its bytes at 1 to fill (newBlock)
    // most bytes in one message: GROUP_BATCHES full batches, each a record past the size
    this.groupBytes = (GROUP_BATCHES + 1) * batchBytes
    this.maxValueBytes = maxValueBytes
    this.maxDepth = maxDepth
    this.pool = pool
    this.budget = budget
    this.largeRecordGate = largeRecordGate
    this.scanner = null
    this.ready = [] // batches the scanner emitted, not yet sent
    this.inflight = new Set()
    this.outBytes = 0
    this.tallies = new Map() // generation -> tally
    this.firstError = null // { offset, reason }
    this.found = null // `{ format, tally }`, once the body ended without fault
    this.fatal = null
    const sink = this
    this.collect = function collectBatch (batch) {
      batch.inBlock = sink.block !== null && batch.bytes.buffer === sink.block.u8.buffer
      // a batch views the block: it is the batch's until a thread hands it back (a job may wait in the queue)
      if (batch.inBlock) sink.block.lent = true
      sink.ready.push(batch)
    }
  }

  startScanner (bytes) {
    if (this.format === null) this.format = detectFormat(bytes)
    const { batchBytes, maxValueBytes, maxDepth, collect: onBatch } = this
    const options = { batchBytes, maxValueBytes, maxDepth, onBatch, allocate: this.pool.spares?.take, inPlace: true }
    const Scanner = this.simd ? CuttingScanner : RecordScanner
    this.scanner = this.format === 'ndjson' ? new LineBatcher(options) : new Scanner(this.format, options)
  }

  noteError (error) {
    if (this.firstError === null || (error.offset >= 0 && error.offset < this.firstError.offset)) this.firstError = error
  }

  async send () {
    if (this.smallBodies.within(this.seen)) {
      // a small body so far: hold its batches until it ends (parsed here) or grows past the rule
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
      // a request alone keeps every parse thread busy and one job ready; with others, its share of that
      while (this.inflight.size >= this.jobsOut()) await Promise.race(this.inflight)
      if (this.destroyed || this.ready.length === 0) return
      const group = this.takeGroup()
      // transferred, not copied: the buffers move to the parse thread, spare room included in what they hold
      const buffers = buffersOf(group)
      const size = buffers.reduce(bytesIn, 0)
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
      const task = this.run(group, buffers, size)
      const inflight = this.inflight
      inflight.add(task)
      task.finally(function forgetTask () { inflight.delete(task) })
    }
  }

  /** The most jobs the request has out at once: more would wait in the pool's queue, holding their bytes. */
  jobsOut () {
    return Math.max(1, Math.ceil((this.pool.size + 1) / this.streams()))
  }

  /**
   * The next batches for one trip to a thread. A block's batches all go together: one thread parses
   * them in place, one after another. Batches of their own (a record that crossed a block's edge, a
   * long one) go with those after them that are not small, within `groupBytes` and GROUP_BATCHES,
   * and with the block that follows. The main thread pays per trip, not per batch; while threads are
   * idle, batches of their own are shared out.
   */
  takeGroup () {
    const batches = [this.ready.shift()]
    if (batches[0].inBlock) return this.takeBlock(batches, batches[0].bytes.buffer)
    const idle = this.pool.queued > 0 ? 0 : this.pool.idle.length
    const most = idle > 1 ? Math.min(GROUP_BATCHES, Math.ceil(this.ready.length / idle)) : GROUP_BATCHES
    let bytes = batches[0].bytes.byteLength
    while (batches.length < most && this.ready.length > 0) {
      const next = this.ready[0]
      if (next.inBlock) return this.takeBlock(batches, next.bytes.buffer)
      if (next.bytes.byteLength <= SMALL_BATCH || bytes + next.bytes.byteLength > this.groupBytes) break
      batches.push(this.ready.shift())
      bytes += next.bytes.byteLength
    }
    return batches
  }

  /** The ready batches that are views of `block`, added to `batches`. */
  takeBlock (batches, block) {
    while (this.ready.length > 0 && this.ready[0].bytes.buffer === block) batches.push(this.ready.shift())
    return batches
  }

  /** A small body's batches parsed here: the same parseBatch, errors and tally, without the hop. */
  parseHere () {
    const batches = this.ready
    this.ready = []
    for (const batch of batches) {
      if (this.fatal !== null || this.destroyed) return
      this.parseOne(batch)
    }
  }

  /** What parseBatch takes for one batch (costBound: the scanner's bound on its projected cost, if any). */
  taskFor (batch) {
    const { kind, bytes, costBound = Infinity } = batch
    // giveBack: the thread hands the buffer back for the next batches or blocks (pool.js)
    const { maxDepth, maxCost, simd } = this
    return { kind, bytes, maxDepth, maxCost, costBound, simd, giveBack: batch.inBlock ? 'block' : 'batch' }
  }

  parseOne (batch) {
    this.take(batch, batch.bytes.byteLength, parseBatch(this.taskFor(batch)))
  }

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
  async run (batches, transferList, size) {
    let sizes = null
    this.outBytes += size
    try {
      // their sizes are read before the buffers move
      sizes = batches.map(function sizeOf (batch) { return batch.bytes.byteLength })
      const tasks = batches.map(this.taskFor, this)
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

  /** Bytes held besides the chunk being written (the block, filled or not, the record being gathered, ready batches), for held.js. */
  heldBytes () {
    const block = this.block?.u8.buffer
    let bytes = block?.byteLength ?? 0
    for (const piece of this.scanner?.pieces ?? []) bytes += piece.length
    for (const batch of this.ready) if (batch.bytes.buffer !== block) bytes += batch.bytes.byteLength
    return bytes
  }

  /**
   * The most the sink holds for chunks of at most `chunk` bytes: that chunk, the block (the first one
   * at least the head the format is told from), the record being gathered and the batch before it
   * (a batch, or one up to the record limit), and a small body's batches, held until it ends.
   */
  heldBound (chunk) {
    return chunk + Math.max(this.blockMost, DETECT_BYTES) + 2 + this.batchBytes + Math.max(this.batchBytes, this.maxValueBytes) +
      this.smallBodies.bound
  }

  /**
   * A record larger than a batch is being gathered: wait for the one place to gather such records
   * (backpressure reaches the socket meanwhile), given back once the record has gone to a thread.
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
    // a block still here holds nothing anyone reads: the next request may fill it
    if (this.block !== null && !this.block.lent) this.pool.blocks?.give(this.block.u8.buffer)
    this.block = null
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

  /** A block with a byte to spare on each side (records.js, `inPlace`); the first holds the head the format is told from. */
  newBlock () {
    const share = this.blockBytes()
    const room = this.scanner === null ? Math.max(share, DETECT_BYTES) : share
    const buffer = this.pool.blocks?.take(room + 2) ?? new ArrayBuffer(room + 2)
    return { u8: new Uint8Array(buffer, 0, room + 2), room, fill: 0, lent: false }
  }

  /** Copy inflated bytes into blocks; each full one is scanned where it lies. */
  async fill (chunk) {
    let at = 0
    while (at < chunk.length) {
      if (this.block === null) this.block = this.newBlock()
      const block = this.block
      const n = Math.min(chunk.length - at, block.room - block.fill)
      block.u8.set(n === chunk.length ? chunk : chunk.subarray(at, at + n), 1 + block.fill)
      block.fill += n
      at += n
      this.seen += n
      if (block.fill === block.room) await this.scanBlock(block)
    }
  }

  /** Find the records in a block and send its batches; a block no batch views is filled again. */
  async scanBlock (block) {
    const bytes = block.u8.subarray(1, 1 + block.fill)
    if (this.scanner === null) this.startScanner(bytes.subarray(0, DETECT_BYTES))
    let fault = null
    try {
      if (bytes.length > 0) this.scanner.write(bytes)
    } catch (err) {
      fault = err
    }
    // a record that runs on past the block is kept as a copy: the block leaves with its batches
    this.scanner.detachFrom(block.u8.buffer)
    if (fault !== null) await this.failWith(fault)
    await this.send()
    if (this.block === block) {
      if (block.lent) this.block = null
      else block.fill = 0
    }
    if (this.firstError || this.fatal) await this.failWith(null)
    await this.holdLargeRecordPlace()
  }

  /** Stop at the first error in the input: a worker's may come earlier than the scanner's. */
  async failWith (scannerError) {
    // the batches emitted before the scanner stopped may hold an earlier fault: parse them first
    this.final = true
    await this.send()
    this.ready = []
    await this.settle()
    if (this.fatal) throw this.fatal
    if (isLocated(scannerError)) {
      this.noteError({ offset: scannerError.details.offset, reason: scannerError.details.reason, error: scannerError })
    } else if (scannerError) {
      throw scannerError
    }
    const first = this.firstError
    throw first.error ?? jsonInvalid(first.reason, first.offset)
  }

  _write (chunk, encoding, callback) {
    this.fill(chunk).then(function filled () { callback() }, callback)
  }

  _final (callback) {
    this.finish().then(function finished () { callback() }, callback)
  }

  async finish () {
    this.final = true
    if (this.block === null && this.scanner === null) this.block = this.newBlock()
    if (this.block !== null) await this.scanBlock(this.block)
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
   * A small body held whole, inflated: a valid document within the limits is parsed at once (here or
   * on an idle parse thread); anything else is scanned as a streamed body is, for the same refusals.
   */
  async parseWhole (data) {
    const format = this.format ?? detectFormat(data)
    if (format !== 'ndjson') {
      const { maxDepth, maxCost, maxValueBytes } = this
      const document = { kind: 'document', bytes: data, format, maxDepth, maxCost, maxValueBytes }
      const shared = this.smallBodies.shareTheParse(data.byteLength)
      const answer = shared ? await this.smallBodies.parseThere(document) : parseDocument(document)
      if (answer !== null) return { format, tally: finishTally(answer.tally) }
    }
    this.format = format
    this.end(data)
    await finished(this)
    return this.found
  }
}
