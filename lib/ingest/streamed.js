/**
 * POST /good. Read the textbook streaming route first (streamparser.js): the same pipeline and
 * counters around a streaming JSON library. This file is what the lab adds for speed (docs/ingest.md,
 * "What /good adds and what each addition buys"): a record sink (lib/parse/record-sink.js) that finds
 * whole records on the main thread and has parse threads JSON.parse them in batches, under one budget
 * for all requests. A small body is read and inflated whole instead (lib/parse/small-body.js).
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
export const MAX_CHUNK = 256 * 1024 // zlib's output chunk for a request streaming alone
const SMALL_CHUNK = 4 * 1024 // for the smallest bodies
const EXPECTED_RATIO = 8 // sizes a small body's inflate chunk: one that inflates more takes more chunks
// Parse batches stay small: a batch's records are all alive until it is tallied, and smaller batches let
// the threads' young generation collect them (docs/ingest.md, "Memory flat with the body and the uploads").
export const MAX_BATCH = 64 * 1024

/**
 * Inflate and batch sizes for one more request: large when alone (zlib is
 * faster with large output chunks), smaller as more stream, so that all of
 * them stay within the budget (docs/ingest.md).
 */
function chunkSizeFor (bufferBudget, active, most = MAX_CHUNK) {
  const share = Math.floor(bufferBudget / (4 * Math.max(1, active)))
  return Math.max(MIN_CHUNK, Math.min(most, 2 ** Math.floor(Math.log2(Math.max(share, 1)))))
}

/**
 * The inflate chunk for a body of `compressedBytes` (NaN when chunked): no larger than it needs. zlib
 * allocates its output chunk up front, and for small bodies at a high rate those are most of the garbage.
 */
function inflateChunkFor (share, compressedBytes) {
  if (!Number.isSafeInteger(compressedBytes) || compressedBytes < 0) return share
  const wanted = 2 ** Math.ceil(Math.log2(Math.max(1, EXPECTED_RATIO * compressedBytes)))
  return Math.max(SMALL_CHUNK, Math.min(share, wanted))
}

/** A small body inflated whole, a synchronous call a layer; null past `bound`: the body is streamed instead. */
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
 * A small body arrives in a read or two: read it whole, inflate it at once and, within the bound, hand
 * it to the sink whole (RecordSink#parseWhole); past the bound it is streamed like any other, from memory.
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

const SOCKET_CHUNK = 64 * 1024 // the most a socket hands the request at a time (libuv's read)

/**
 * What each stage of the pipeline holds, read at each sample from the pieces themselves, with the most
 * it may hold (lib/metrics/held.js); the decoders' windows are what the request was given for them.
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

/** Stages 3 to 7 of POST /good: the body streamed through counters and decoders into the record sink. */
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
    // each block is the share of those streaming when it is taken: one that started alone shrinks as others join
    blockBytes: function blockShare () {
      return chunkSizeFor(opts.ingest.bufferBudget, 2 * state.pipelines.active, opts.ingest.blockBytes)
    },
    blockMost: opts.ingest.blockBytes,
    streams: function streamingNow () { return state.pipelines.active },
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
  const pieces = { compressed, inflated, sink, chunkSize, budget: opts.ingest.bufferBudget, holding, memory }
  let found
  try {
    if (state.smallBodies.within(length)) {
      found = await ingestInHand(body, { ...pieces, codecs: plan.codecs, bound: state.smallBodies.bound })
    } else {
      const gunzips = decoderStreams(plan.codecs, { chunkSize }, memory)
      watchPipeline(holding, { ...pieces, req, body, gunzips })
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
