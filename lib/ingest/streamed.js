/**
 * The streamed ingest behind POST /good. Read the textbook streaming route
 * first, lib/ingest/streamparser.js (POST /streamparser-json): the same
 * pipeline and counters around a streaming JSON library. This file is what
 * the lab adds for speed (docs/ingest.md, "What /good adds and what each
 * addition buys"): request -> compressed counter -> gunzip per layer ->
 * inflated counter and digest -> record sink (lib/parse/record-sink.js),
 * which finds whole records on the main thread and has parse threads
 * JSON.parse them in batches, under one budget for all the app's requests.
 * A small body is read and inflated whole instead (lib/parse/small-body.js).
 */
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { negotiateBody } from './negotiate.js'
import { admitToPipeline } from './admit.js'
import { compressedCounter, inflatedCounter } from './count.js'
import { readWhole, requestBody } from './read.js'
import { decoderStreams, inflateWhole } from './gzip-framing.js'
import { FORMATS } from '../json/records.js'
import { fromZlibError } from '../errors/index.js'
import { RecordSink } from '../parse/record-sink.js'
import { IngestState } from './state.js'
import { bufferedIn, boundOf } from '../metrics/held.js'
import { DecoderMemory } from './decoder-memory.js'

/** POST /good: its place is one of a few pipelines; stages 3 to 7 in ingestStreamed. */
export const streamed = Object.freeze({
  name: 'good',
  formats: FORMATS,
  negotiate: negotiateBody,
  admit: admitToPipeline,
  ingest: ingestStreamed
})

const MIN_CHUNK = 16 * 1024
/** The largest inflate chunk: zlib's output chunk for a request streaming alone. */
export const MAX_CHUNK = 256 * 1024
/** The smallest inflate chunk, for the smallest bodies. */
const SMALL_CHUNK = 4 * 1024
/**
 * Inflated bytes expected per compressed byte when sizing a small body's
 * inflate chunk: a body that inflates more only takes more chunks.
 */
const EXPECTED_RATIO = 8
// Parse batches stay small: the records of a batch are all alive until it is
// tallied, and smaller batches let the parse threads' young generation
// collect them (docs/ingest.md, "Memory flat with the body and the uploads").
export const MAX_BATCH = 64 * 1024

/**
 * Inflate and batch sizes for one more request: large when alone (zlib is
 * faster with large output chunks), smaller as more stream, so that all of
 * them stay within the budget (docs/ingest.md).
 */
function chunkSizeFor (bufferBudget, active) {
  const share = Math.floor(bufferBudget / (4 * Math.max(1, active)))
  return Math.max(MIN_CHUNK, Math.min(MAX_CHUNK, 2 ** Math.floor(Math.log2(Math.max(share, 1)))))
}

/**
 * The inflate chunk for a body of `compressedBytes` (Content-Length, or NaN
 * when chunked): no larger than the body needs. zlib allocates its whole
 * output chunk up front, and for small bodies at a high rate those chunks
 * are most of the garbage the collector must keep up with.
 */
function inflateChunkFor (share, compressedBytes) {
  if (!Number.isSafeInteger(compressedBytes) || compressedBytes < 0) return share
  const wanted = 2 ** Math.ceil(Math.log2(Math.max(1, EXPECTED_RATIO * compressedBytes)))
  return Math.max(SMALL_CHUNK, Math.min(share, wanted))
}

/**
 * Inflate a small body held whole, at most `bound` bytes a layer, in one
 * synchronous call a layer: for a body this small zlib's thread pool costs
 * more than the inflating.
 * @returns {Promise<Buffer|null>} null when a layer inflates past the bound: the body is streamed instead
 */
async function inflateInHand (body, codecs, bound, holding, decoders) {
  const memory = new DecoderMemory(codecs, decoders, { streamed: false })
  try {
    return await inflateWhole(body, codecs, { sync: true, capFor: function inlineBound () { return bound }, holding, memory })
  } catch (err) {
    if (err.code === 'ERR_BUFFER_TOO_LARGE') return null
    throw err
  } finally {
    memory.release()
  }
}

/**
 * A small body arrives in a read or two: read it whole, inflate it at once
 * and, when it inflates within the bound too, hand it to the sink whole
 * (RecordSink#parseWhole). One that inflates past the bound is streamed
 * like any other, from memory.
 * @returns {Promise<{ format: string, tally: object }>}
 */
async function ingestInHand (source, { compressed, inflated, sink, codecs, bound, chunkSize, budget, holding, memory }) {
  const body = await readWhole(source, compressed.count, holding)
  const data = await inflateInHand(body, codecs, bound, holding, memory.source)
  if (data === null) {
    const gunzips = decoderStreams(codecs, { chunkSize }, memory)
    watchPipeline(holding, { gunzips, inflated, sink, chunkSize, budget, memory })
    await pipeline(Readable.from([body]), ...gunzips, inflated, sink)
    return sink.found
  }
  const error = inflated.count(data)
  if (error) throw error
  return sink.parseWhole(data)
}

/** The largest chunk a socket hands the request (libuv reads 64 KiB at a time). */
const SOCKET_CHUNK = 64 * 1024

/**
 * What each stage of the pipeline holds, read at each sample from the
 * pieces themselves (lib/metrics/held.js), with the most it may hold:
 * read, the request's and the body's buffers and the compressed counter's;
 * inflate, each Gunzip's two sides and the inflated counter's; records,
 * send; parse, the batch bytes this request has out at the parse threads.
 * The decoders' own memory (their windows) is what the request was given
 * for them (lib/ingest/decoder-memory.js): in the inflate stage, its bound
 * the most they may be given.
 */
function watchPipeline (holding, { req, body, compressed, gunzips, inflated, sink, chunkSize, budget, memory }) {
  if (body !== undefined) {
    holding.watch('read', function heldReading () { return bufferedIn(req, body, compressed) },
      boundOf(SOCKET_CHUNK, req, body, compressed))
  }
  const chunk = Math.max(SOCKET_CHUNK, chunkSize)
  holding.watch('inflate', function heldInflating () { return bufferedIn(...gunzips, inflated) + memory.held },
    boundOf(chunk, ...gunzips, inflated) + memory.most())
  holding.watch('records', function heldFindingRecords () { return sink.writableLength + sink.heldBytes() },
    sink.heldBound(chunk))
  holding.watch('parse', function heldParsing () { return sink.outBytes }, budget)
  holding.unread.push('zlib\'s output chunk in each decoder', 'the parsed records on the parse threads\' heaps')
}

/**
 * Stages 3 to 7 of POST /good: the body streamed through counters and
 * gunzip into the record sink; a small body read whole (ingestInHand).
 * @param {import('express').Request} req
 * @param {{ codecs: object[], format: string|null }} plan what negotiateBody read from the headers
 * @param {{ streaming: number, holding: import('../metrics/held.js').Holding }} place what admitToPipeline gave:
 *   how many stream now, this one included, and where each stage says what it holds
 * @param {{ opts: object, state: IngestState }} lab normalised app options, and the app's ingest state (lib/ingest/state.js)
 * @returns {Promise<object>} the figures of the summary
 */
async function ingestStreamed (req, plan, { streaming, holding }, { opts, state, decoders }) {
  if (!(state instanceof IngestState)) throw new TypeError('ingestStreamed needs the app\'s ingest state (createIngestState)')
  const compressed = compressedCounter(opts.limits.compressed)
  const inflated = inflatedCounter(opts.limits, compressed)
  const body = requestBody(req, { idleMs: opts.limits.bodyIdleMs })
  const length = Number(req.headers['content-length'])
  const share = chunkSizeFor(opts.ingest.bufferBudget, streaming)
  const chunkSize = inflateChunkFor(share, length)
  const sink = new RecordSink({
    format: plan.format,
    batchBytes: Math.min(share, MAX_BATCH),
    maxValueBytes: opts.limits.record,
    maxDepth: opts.limits.depth,
    maxCost: opts.ingest.parseCost,
    simd: opts.ingest.simd,
    smallBodies: state.smallBodies,
    pool: state.pool,
    budget: state.budget,
    largeRecordGate: state.largeRecordGate
  })
  const memory = new DecoderMemory(plan.codecs, decoders, { streamed: true })
  let found
  try {
    if (state.smallBodies.within(length)) {
      found = await ingestInHand(body, { compressed, inflated, sink, codecs: plan.codecs, bound: state.smallBodies.bound, chunkSize, budget: opts.ingest.bufferBudget, holding, memory })
    } else {
      const gunzips = decoderStreams(plan.codecs, { chunkSize }, memory)
      watchPipeline(holding, { req, body, compressed, gunzips, inflated, sink, chunkSize, budget: opts.ingest.bufferBudget, memory })
      await pipeline(body, compressed, ...gunzips, inflated, sink)
      found = sink.found
    }
  } catch (err) {
    throw fromZlibError(err, compressed.bytes, err.codec ?? plan.codecs[0].name) ?? err
  } finally {
    memory.release()
  }
  return {
    format: found.format,
    tally: found.tally,
    inflatedBytes: inflated.bytes,
    compressedBytes: compressed.bytes,
    sha256: inflated.sha256
  }
}
