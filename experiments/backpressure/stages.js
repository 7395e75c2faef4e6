/**
 * The backpressure experiment's pipeline on the server: the request, gunzip,
 * a batcher that cuts ~64 KiB batches of whole lines, and a consumer that
 * takes `delayMs` per batch (a stand-in for a database write). Every stream
 * but the request has the upload's highWaterMark on both sides.
 *
 * The link from the batcher to the consumer is written by hand so that the
 * switch can flip while the upload runs:
 *
 *   "pipeline"  waits for 'drain' when write() returns false: what pipeline() does
 *   "ignore"    writes each batch as it comes (the classic mistake): the batcher
 *               keeps flowing, so does everything before it, and the consumer's
 *               buffer grows with the body until a cap stops it
 *
 * Each write is followed by a look at what the pipeline holds (`watchHeld`):
 * the cap and the memory budget are checked per batch, never by sampling.
 */
import { once } from 'node:events'
import { Transform, Writable } from 'node:stream'
import { finished, pipeline } from 'node:stream/promises'
import { bufferCapExceeded, recordTooLarge, requestAborted } from '../../lib/errors/index.js'

/** The two ways the batcher writes to the consumer. */
export const MODES = Object.freeze(['pipeline', 'ignore'])
/** A batch is cut once this much has gathered, at the last newline. */
export const BATCH_BYTES = 64 * 1024
/** A line longer than this is refused: a batch must end somewhere. */
export const MAX_LINE = 1024 * 1024
/** The order the stages are shown in: from the socket to the consumer. */
export const STAGE_NAMES = Object.freeze(['request', 'gunzip.in', 'gunzip.out', 'batcher.in', 'batcher.out', 'consumer'])

/**
 * The batcher: inflated bytes in, batches of whole NDJSON lines out, each a
 * Buffer of its own so that a batch never keeps the chunk it came from alive.
 * Its readable side holds whole batches (object mode: a reader of a byte
 * stream gets everything buffered joined into one), bounded in bytes: once
 * `queuedBytes` reaches the highWaterMark the write that cut the batch waits
 * until the reader has `taken()` enough, so a batch of one 1 MiB line counts
 * as 1 MiB. `pendingBytes` is the line not yet ended, at most `maxLine`.
 * @param {{ highWaterMark: number, batchBytes?: number, maxLine?: number }} settings
 * @returns {Transform & { inflatedBytes: number, queuedBytes: number, pendingBytes: number,
 *   readableBytesBound: number, taken: (bytes: number) => void }}
 */
export function createBatcher ({ highWaterMark, batchBytes = BATCH_BYTES, maxLine = MAX_LINE }) {
  let parts = []
  let pending = 0
  let offset = 0
  /** The write callback held while the readable side is at its bound. */
  let waiting = null
  function out (batch, callback) {
    batcher.queuedBytes += batch.length
    batcher.push(batch)
    if (batcher.queuedBytes < highWaterMark) return callback()
    waiting = callback
  }
  const batcher = new Transform({
    writableHighWaterMark: highWaterMark,
    readableObjectMode: true,
    // in batches, as many as the bound holds of full ones; the bytes are bounded in `out`
    readableHighWaterMark: Math.max(1, Math.round(highWaterMark / batchBytes)),
    transform: function cutBatches (chunk, encoding, callback) {
      batcher.inflatedBytes += chunk.length
      parts.push(chunk)
      pending += chunk.length
      if (pending < batchBytes) return callback()
      const joined = parts.length === 1 ? chunk : Buffer.concat(parts, pending)
      const end = joined.lastIndexOf(0x0a) + 1
      if (end === 0) {
        if (pending > maxLine) return callback(recordTooLarge(maxLine, pending, offset))
        parts = [joined]
        return callback()
      }
      const rest = joined.subarray(end)
      parts = rest.length > 0 ? [Buffer.from(rest)] : []
      pending = rest.length
      offset += end
      out(Buffer.from(joined.subarray(0, end)), callback)
    },
    flush: function lastBatch (callback) {
      if (pending === 0) return callback()
      const last = Buffer.concat(parts, pending)
      parts = []
      pending = 0
      out(last, callback)
    },
    destroy: function dropBatches (err, callback) {
      parts = []
      pending = 0
      // the held write completes with the error, which lets the writable side drop its queue
      const held = waiting
      waiting = null
      held?.(err ?? streamStopped())
      callback(err)
    }
  })
  batcher.inflatedBytes = 0
  batcher.queuedBytes = 0
  batcher.readableBytesBound = highWaterMark
  Object.defineProperty(batcher, 'pendingBytes', { get: function pendingBytes () { return pending } })
  batcher.taken = function taken (bytes) {
    batcher.queuedBytes -= bytes
    if (waiting === null || batcher.queuedBytes >= highWaterMark) return
    const held = waiting
    waiting = null
    held()
  }
  return batcher
}

/**
 * The consumer: a Writable that waits `settings.delayMs` per batch, read at each
 * batch, so a change shows from the next one.
 * @param {{ highWaterMark: number, settings: { delayMs: number } }} setup
 * @returns {Writable & { tally: { writtenBatches: number, batches: number, consumedBytes: number } }}
 */
export function createConsumer ({ highWaterMark, settings }) {
  let timer = null
  let inWrite = null
  const tally = { writtenBatches: 0, batches: 0, consumedBytes: 0 }
  const consumer = new Writable({
    highWaterMark,
    write: function consumeBatch (batch, encoding, callback) {
      inWrite = callback
      timer = setTimeout(function consumed () {
        timer = null
        inWrite = null
        tally.batches++
        tally.consumedBytes += batch.length
        callback()
      }, settings.delayMs)
    },
    destroy: function stopConsuming (err, callback) {
      clearTimeout(timer)
      timer = null
      // a write left without its callback keeps the Writable's queue (every batch written
      // after it) referenced: completed with the error, the queue is dropped
      const unfinished = inWrite
      inWrite = null
      unfinished?.(err ?? streamStopped())
      callback(err)
    }
  })
  consumer.tally = tally
  // destroyed from outside (the client gone, the run's time box) while the link is not waiting on it:
  // the link finds `errored` at its next batch, or `finished` rejects
  consumer.on('error', function seenByTheLink () {})
  return consumer
}

/**
 * The upload's streams run to their end with `pipeline()`, the request's body to the consumer: null, or
 * what stopped them (errors as data, never thrown). The last step is the hand-written link from the
 * batcher to the consumer, honouring write()'s return or not as `settings.mode` says at each batch.
 * @param {{ body: import('node:stream').Readable, gunzip: import('node:zlib').Gunzip,
 *   batcher: Transform & { queuedBytes: number }, consumer: Writable & { tally: object } }} streams
 * @param {{ mode: string }} settings the upload's live settings
 * @param {() => Error|null} afterWrite what the pipeline holds, looked at after each write: an error stops it
 * @returns {Promise<Error|null>}
 */
export async function runPipeline ({ body, gunzip, batcher, consumer }, settings, afterWrite) {
  let cause = null
  async function feedConsumer (batches, { signal }) {
    try {
      for await (const batch of batches) {
        batcher.taken(batch.length)
        if (consumer.destroyed) throw consumer.errored ?? requestAborted(null)
        consumer.tally.writtenBatches++
        const fits = consumer.write(batch)
        const stop = afterWrite()
        if (stop) throw stop
        if (!fits && settings.mode === 'pipeline') await once(consumer, 'drain', { signal })
      }
      consumer.end()
      await finished(consumer)
    } catch (err) {
      // an AbortError here is pipeline() stopping this step for another's failure: not a cause
      if (err?.name !== 'AbortError') cause ??= err
      throw err
    }
  }
  try {
    await pipeline(body, gunzip, batcher, feedConsumer)
    return null
  } catch (err) {
    // Node 20's pipeline() rejects with its own AbortError when its last step throws: the step's cause then
    return err?.name === 'AbortError' && cause !== null ? cause : err
  }
}

/** What a write cut short by destroy() completes with, when destroy() was given no error: Node's own code for it. */
function streamStopped () {
  return Object.assign(new Error('the stream was destroyed before this write completed'), { code: 'ERR_STREAM_DESTROYED' })
}

/**
 * Each stage's buffered bytes and the bound its highWaterMark sets, read from
 * the streams' own state. The request stage is Node's IncomingMessage and the
 * lab's body stream around it (lib/ingest/read.js) together.
 * @param {{ req: import('node:http').IncomingMessage, body: import('node:stream').Readable,
 *   gunzip: import('node:zlib').Gunzip, batcher: Transform, consumer: Writable }} streams
 * @returns {Array<{ name: string, bytes: number, bound: number }>} in STAGE_NAMES order
 */
export function readStages ({ req, body, gunzip, batcher, consumer }) {
  return [
    { name: 'request', bytes: req.readableLength + body.readableLength, bound: req.readableHighWaterMark + body.readableHighWaterMark },
    { name: 'gunzip.in', bytes: gunzip.writableLength, bound: gunzip.writableHighWaterMark },
    { name: 'gunzip.out', bytes: gunzip.readableLength, bound: gunzip.readableHighWaterMark },
    { name: 'batcher.in', bytes: batcher.writableLength + batcher.pendingBytes, bound: batcher.writableHighWaterMark },
    { name: 'batcher.out', bytes: batcher.queuedBytes, bound: batcher.readableBytesBound },
    { name: 'consumer', bytes: consumer.writableLength, bound: consumer.writableHighWaterMark }
  ]
}

/**
 * Watch what the pipeline holds, after each write and at each look from outside:
 * the peak of every stage and of the whole, the experiment's cap on the consumer,
 * and the memory budget, which the upload's reservation grows into as any
 * stage passes its bound (a refusal stops the upload as the cap does).
 * @param {{ read: () => Array<{ name: string, bytes: number, bound: number }>, cap: number, route: string,
 *   reservation: import('../../lib/limits/admission.js').Reservation|null, base: number, step?: number }} setup
 *   `base`: what the reservation already holds for the stages at their bounds; `step`: how much it grows by at a time
 * @returns {{ check: () => Error|null, look: () => { stages: object[], held: number },
 *   peaks: () => { held: number, stages: Record<string, number> } }}
 */
export function watchHeld ({ read, cap, route, reservation, base, step = 8 * 1024 * 1024 }) {
  let peakHeld = 0
  const peakStages = Object.fromEntries(STAGE_NAMES.map(function zero (name) { return [name, 0] }))
  function look () {
    const stages = read()
    let held = 0
    for (const stage of stages) {
      held += stage.bytes
      if (stage.bytes > peakStages[stage.name]) peakStages[stage.name] = stage.bytes
    }
    if (held > peakHeld) peakHeld = held
    return { stages, held }
  }
  function check () {
    const { stages } = look()
    const consumer = stages[stages.length - 1].bytes
    if (consumer > cap) return bufferCapExceeded({ route, limit: cap, held: consumer, stage: 'consumer' })
    if (reservation === null) return null
    // every stage's bytes past its bound, on top of the bounds `base` holds
    const need = stages.reduce(function past (total, stage) { return total + Math.max(0, stage.bytes - stage.bound) }, base)
    if (need <= reservation.bytes) return null
    return reservation.tryGrow(Math.max(step, need - reservation.bytes), 'the stages\' buffers past their bounds')
  }
  return {
    check,
    look,
    peaks: function peaks () { return { held: peakHeld, stages: { ...peakStages } } }
  }
}
