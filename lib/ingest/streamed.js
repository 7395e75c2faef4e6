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
 * requests (lib/ingest/state.js).
 */
import { Readable } from 'node:stream'
import { pipeline, finished } from 'node:stream/promises'
import zlib from 'node:zlib'
import { gunzipLayers, paddingError } from './gzip-framing.js'
import {
  negotiateBody, checkContentLength, requestBody, compressedCounter, inflatedCounter, makeSummary, clientGone
} from './common.js'
import { detectFormat } from '../json/records.js'
import { finishTally } from '../parse/tally.js'
import { parseDocument } from '../parse/worker.js'
import { fromZlibError, requestAborted, pipelinesBusy } from '../errors/index.js'
import { RecordSink } from '../parse/record-sink.js'
import { IngestState } from './state.js'

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

/** Seconds a client told the pipelines are busy is asked to wait. */
const RETRY_AFTER_SECONDS = 1

/** Looks at the queue per deadline: how often a waiter samples the pipelines' pace. */
const QUEUE_LOOKS = 10
/**
 * A queue moves only if a pipeline ahead is on course to end within this many
 * deadlines: ten minutes at the default 10 s, an upload in progress rather
 * than a dawdler (a 500 MB body read at 0.9 MB/s or more). Eight 500 MB
 * uploads at once read about 6 MB/s each on the 2-core development machine,
 * 80 s from their end when a waiter's deadline comes: a horizon of six
 * deadlines takes that for a stuck queue (92 of a hundred got 503 in
 * `npm run bench -- ingest`), sixty serves them (24 of 24, `npm run bench --
 * ingest --sizes 500MB --concurrency 100 --routes good --requests 24`;
 * docs/ingest.md, Refusals).
 */
const QUEUE_HORIZON = 60

/**
 * Wait for one of the few places to stream. Past a handful of pipelines two
 * cores get no faster, but every extra one holds its socket, inflate and
 * batch buffers. Waiting requests are not read: their bytes wait in the
 * kernel's socket buffers and the client's, which is backpressure too.
 *
 * A waiter gives up (503 server.busy) when the queue is stuck: no place
 * came free for `queueMs`, and either the pipelines ahead read no faster
 * together than the slowest pace the lab accepts from each of them
 * (`limits.minBodyRate`) or none of them is on course to end within
 * QUEUE_HORIZON deadlines at the pace it has kept. While places come free,
 * or a body ahead is on course to end soon, it keeps its turn (ten 100 MB
 * uploads behind eight pipelines that all end at once, after more than
 * `queueMs`, are all served; eight clients sending large bodies just above
 * the floor do not make the queue wait on them). How many wait is bounded
 * by `limits.inflight`.
 */
async function admit (req, state, { queueMs, minRate }) {
  const gate = state.gate
  // a client gone while its request waited for the handler never sends 'close' again
  if (clientGone(req)) throw requestAborted(0)
  if (gate.held < gate.limit) return gate.acquire()
  const gone = new AbortController()
  const started = Date.now()
  function onClose () {
    if (!req.complete) gone.abort(requestAborted(0))
  }
  const floor = gate.limit * minRate
  const looks = [] // [when, bytes the pipelines had read], the last deadline's worth
  let timer = null
  function lookAtQueue () {
    const now = Date.now()
    const read = state.streamingBytes()
    looks.push([now, read])
    while (looks.length > 2 && looks[1][0] <= now - queueMs) looks.shift()
    const stuckMs = now - Math.max(started, gate.releasedAt)
    const [since, readThen] = looks[0]
    const pace = now > since ? (read - readThen) * 1000 / (now - since) : 0
    const moving = pace > floor && state.soonestEndMs(now) <= QUEUE_HORIZON * queueMs
    if (stuckMs >= queueMs && now - since >= queueMs && !moving) {
      gone.abort(pipelinesBusy(gate.limit, stuckMs, now - started, RETRY_AFTER_SECONDS))
      return
    }
    timer = setTimeout(lookAtQueue, Math.max(1, Math.ceil(queueMs / QUEUE_LOOKS)))
    timer.unref()
  }
  lookAtQueue()
  req.on('close', onClose)
  try {
    const leave = await gate.acquire(gone.signal)
    if (clientGone(req)) {
      leave()
      throw requestAborted(0)
    }
    return leave
  } finally {
    clearTimeout(timer)
    req.removeListener('close', onClose)
  }
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
 * framed as lib/ingest/gzip-framing.js frames every body (members, then nothing or
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
  const data = inflateInHand(body, layers, bound)
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
 * Stream, inflate, parse and summarise a request body.
 * @param {import('express').Request} req
 * @param {object} opts normalised app options
 * @param {{ state: IngestState, admission?: import('../limits/admission.js').MemoryAdmission }} context
 *   state: the app's (lib/ingest/state.js); admission paces garbage collection
 * @returns {Promise<object>} the summary
 */
export async function ingestStreamed (req, opts, { state, admission } = {}) {
  if (!(state instanceof IngestState)) throw new TypeError('ingestStreamed needs the app\'s ingest state (createIngestState)')
  const plan = negotiateBody(req, opts.limits)
  checkContentLength(req, opts.limits.compressed)
  const leave = await admit(req, state, { queueMs: opts.ingest.queueMs, minRate: opts.limits.minBodyRate })
  state.active++
  const stopWatching = admission?.watchGarbage() ?? function nothingWatched () {}
  const compressed = compressedCounter(opts.limits.compressed)
  const length = Number(req.headers['content-length'])
  const streaming = { counter: compressed, length, startedAt: Date.now() }
  state.streaming.add(streaming)
  try {
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
    return makeSummary({
      format: parsed.format,
      tally: parsed.tally,
      inflatedBytes: inflated.bytes,
      compressedBytes: compressed.bytes,
      sha256: inflated.digest()
    })
  } finally {
    state.streaming.delete(streaming)
    stopWatching()
    state.active--
    leave()
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
