/**
 * The streamed ingest behind POST /good. Read the textbook streaming route
 * first, lib/ingest/streamparser.js (POST /streamparser-json): the same
 * pipeline and counters around a streaming JSON library, in one short
 * function. This file is what the lab adds for speed (docs/lessons/ingest.md,
 * "What /good adds and what each addition buys"):
 * request -> compressed counter -> gunzip (per layer) -> inflated counter
 * and digest -> record sink, composed with `pipeline`. The sink finds
 * record boundaries on the main thread and has worker threads JSON.parse
 * batches of whole records (lib/parse/record-sink.js), so memory stays constant:
 * a few batches per request, under one budget shared by all the app's
 * requests (lib/ingest/state.js). Its place to stream is one of a few
 * pipelines, waited for in a queue (lib/ingest/admit.js admitToPipeline).
 */
import { Readable } from 'node:stream'
import { pipeline, finished } from 'node:stream/promises'
import { negotiateBody } from './negotiate.js'
import { admitToPipeline } from './admit.js'
import { readWhole, requestBody } from './read.js'
import { compressedCounter, inflatedCounter } from './count.js'
import { gunzipLayers, inflateWhole } from './gzip-framing.js'
import { detectFormat, FORMATS } from '../json/records.js'
import { finishTally } from '../parse/tally.js'
import { parseDocument } from '../parse/worker.js'
import { fromZlibError } from '../errors/index.js'
import { RecordSink } from '../parse/record-sink.js'
import { IngestState } from './state.js'

/** POST /good: stages 1 and 2 shared (its place is one of a few pipelines), 3 to 7 in ingestStreamed. */
export const streamed = Object.freeze({
  name: 'good',
  formats: FORMATS,
  negotiate: negotiateBody,
  admit: admitToPipeline,
  ingest: ingestStreamed
})

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
 * A small document goes to an idle parse thread only past this size. A hop
 * costs the main thread 35 to 70 us and may delay the answer by up to about
 * 0.2 ms; below 16 KiB of generated JSON it spares the main thread 0.1 ms or
 * less, from 32 KiB 0.3 ms or more (`node scripts/parse-hop.js` measures both).
 */
const HOP_WORTH = 16 * 1024

/**
 * Waiting for I/O this long or longer between two small documents means the
 * main thread had time to spare (shareTheParse). A lone client on loopback
 * leaves it idle for a few hundred microseconds between its requests; a
 * backlog leaves it none, only the microseconds of a poll that finds work.
 */
const PAUSE_MS = 0.05

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
 * Whether a small document is parsed on a parse thread rather than here.
 * The main thread is the one every request needs (sockets, inflate, digest,
 * answers), and a small body's parse is most of its work: parsed here, ten
 * clients' bodies are handled one after another on one core while the parse
 * threads idle. So when requests are waiting for the main thread (it went
 * from one to the next without waiting for I/O: IngestState#mainThreadPaused),
 * a document worth the hop (HOP_WORTH) goes to a parse thread that is idle
 * now, and the main thread reads the next request meanwhile. It never waits
 * in the threads' queue (behind a busy thread it is slower than parsing
 * here), so at most one document per thread is out, each within the inline
 * bound. Otherwise it is parsed here: a lone client's answer comes sooner
 * without the hop: at 64 KB and one connection /good makes 1.26x to 1.48x
 * /bad's req/s parsed here, 0.98x and 1.19x when every document takes a
 * thread (`npm run bench -- ingest --sizes 64KB --concurrency 1 --routes
 * bad,good --repeat 3 --server-flag=--share-parse=MODE`, `never` or `busy`
 * against `always`).
 * @param {IngestState} state
 * @param {number} bytes the document's inflated size
 * @param {'busy'|'always'|'never'} mode `ingest.shareParse`: 'busy' is the rule above
 */
function shareTheParse (state, bytes, mode) {
  if (bytes <= HOP_WORTH || mode === 'never') return false
  if (mode === 'busy' && state.mainThreadPaused(PAUSE_MS)) return false
  return state.pool.queued === 0 && state.pool.idle.length > 0
}

/**
 * parseDocument on a parse thread: the document's bytes copied into a buffer of
 * their own and moved there (a Buffer from zlib may be a view of a larger one,
 * which a message would copy whole). A thread that fails it (it died, or the
 * app is closing) answers null, as parseDocument does for anything but a valid
 * document, and the record sink gives the verdict here.
 */
async function parseThere (state, document) {
  state.documentsShared++
  const bytes = new Uint8Array(document.bytes)
  try {
    return await state.pool.run({ ...document, bytes }, { transferList: [bytes.buffer] })
  } catch {
    return null
  }
}

/**
 * Inflate a small body held whole, making at most `bound` bytes a layer, in
 * one synchronous call a layer: for a body this small, zlib's thread pool
 * costs more than inflating (a stream or `zlib.gunzip` goes there and back
 * twice, and measured 230 us for a 1 KB body that inflates in 50).
 * @returns {Promise<Buffer|null>} null when a layer inflates past the bound: the body is streamed instead
 */
async function inflateInHand (body, layers, bound) {
  try {
    return await inflateWhole(body, layers, { sync: true, capFor: function inlineBound () { return bound } })
  } catch (err) {
    if (err.code === 'ERR_BUFFER_TOO_LARGE') return null
    throw err
  }
}

/**
 * A body whose Content-Length is within the inline bound arrives in a read
 * or two: read it whole, inflate it at once and, when it inflates within
 * the bound too, parse it (here, or on an idle parse thread when it is
 * worth the hop: shareTheParse). A valid document
 * within the limits is parsed whole (parseDocument); anything else goes
 * through the record sink, so every refusal is the one a streamed body gets.
 * A body that inflates past the bound is streamed like any other, from memory.
 * @returns {Promise<{ format: string, tally: object }>}
 */
async function ingestInHand (source, { state, compressed, inflated, sink, layers, bound, chunkSize, limits, maxCost, shareParse }) {
  const body = await readWhole(source, compressed.count)
  const data = await inflateInHand(body, layers, bound)
  if (data === null) {
    await pipeline(Readable.from([body]), ...gunzipLayers(layers, { chunkSize }), inflated, sink)
    return { format: sink.format, tally: sink.result }
  }
  const error = inflated.count(data)
  if (error) throw error
  const format = sink.format ?? detectFormat(data)
  if (format !== 'ndjson') {
    const document = { kind: 'document', bytes: data, format, maxDepth: limits.depth, maxCost, maxValueBytes: limits.record }
    const answer = shareTheParse(state, data.byteLength, shareParse) ? await parseThere(state, document) : parseDocument(document)
    if (answer !== null) return { format, tally: finishTally(answer.tally) }
  }
  sink.format = format
  sink.end(data)
  await finished(sink)
  return { format, tally: sink.result }
}

/**
 * Stages 3 to 7 of POST /good: the body streamed through counters and
 * gunzip into the record sink, which finds whole records on the main thread
 * and has the parse threads JSON.parse them in batches; a small body is read
 * whole and parsed at once (ingestInHand).
 * @param {import('express').Request} req
 * @param {{ layers: number, format: string|null }} plan what negotiateBody read from the headers
 * @param {{ track: (counter: object) => void }} place one of the pipelines (admitToPipeline)
 * @param {{ opts: object, state: IngestState }} lab normalised app options, and the app's ingest state (lib/ingest/state.js)
 * @returns {Promise<object>} the figures of the summary
 */
export async function ingestStreamed (req, plan, place, { opts, state }) {
  if (!(state instanceof IngestState)) throw new TypeError('ingestStreamed needs the app\'s ingest state (createIngestState)')
  const compressed = compressedCounter(opts.limits.compressed)
  place.track(compressed)
  const length = Number(req.headers['content-length'])
  const share = chunkSizeFor(opts.ingest.bufferBudget, state.active)
  const chunkSize = inflateChunkFor(share, length)
  const inflated = inflatedCounter(opts.limits, compressed)
  const sink = new RecordSink({
    format: plan.format,
    batchBytes: Math.min(share, MAX_BATCH),
    maxValueBytes: opts.limits.record,
    maxDepth: opts.limits.depth,
    maxCost: opts.ingest.parseCost,
    inlineBytes: opts.ingest.inlineParse,
    pool: state.pool,
    budget: state.budget,
    largeRecordGate: state.largeRecordGate
  })
  const body = requestBody(req, { idleMs: opts.limits.bodyIdleMs })
  let parsed
  try {
    if (Number.isSafeInteger(length) && length <= opts.ingest.inlineParse) {
      parsed = await ingestInHand(body, {
        state,
        compressed, inflated, sink, layers: plan.layers, bound: opts.ingest.inlineParse, chunkSize, limits: opts.limits, maxCost: opts.ingest.parseCost, shareParse: opts.ingest.shareParse
      })
    } else {
      await pipeline(body, compressed, ...gunzipLayers(plan.layers, { chunkSize }), inflated, sink)
      parsed = { format: sink.format, tally: sink.result }
    }
  } catch (err) {
    throw fromZlibError(err, compressed.bytes) ?? err
  }
  return {
    format: parsed.format,
    tally: parsed.tally,
    inflatedBytes: inflated.bytes,
    compressedBytes: compressed.bytes,
    sha256: inflated.digest()
  }
}

/**
 * What /good holds right now: requests in flight and batch bytes out at the workers.
 * @param {IngestState} state the app's (`app.locals.ingest`)
 */
export function streamedIngestState (state) {
  if (!(state instanceof IngestState)) throw new TypeError('streamedIngestState needs the app\'s ingest state (app.locals.ingest)')
  return state.snapshot()
}
