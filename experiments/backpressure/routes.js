/**
 * The backpressure experiment's routes: one gzipped NDJSON upload streamed
 * through request -> gunzip -> batcher -> a slow consumer (./stages.js), and
 * its live state, read from the streams and the kernel while it runs.
 *
 *   POST  /backpressure/:token   the upload; query: mode, delayMs, highWaterMark, cap (the
 *                                experiment's schema). 200 { token, consumedBytes, batches, ms }
 *                                once the consumer has taken the last batch
 *   GET   /backpressure/:token   its state now, or at its end (the last few are kept)
 *   PATCH /backpressure/:token   { mode?, delayMs? }: applied from the next batch -> 200 its state
 *   DELETE /backpressure/:token  stops it (a run's time box) -> 200 its state
 *
 * `token` is the run's name for its upload. The upload reserves its stages at
 * their bounds in the lab's memory budget before it reads, and grows the
 * reservation as any stage passes its bound: the budget (413
 * memory.budget.exceeded, 503 memory.busy) and the experiment's cap (413
 * buffer.cap.exceeded) stop the "ignore" mode before the lab's RSS runs away.
 * An ended upload keeps its figures, never its streams.
 */
import zlib from 'node:zlib'
import { performance } from 'node:perf_hooks'
import express from 'express'
import { badParameter, fromZlibError, notFound, requestAborted, toLabError } from '../../lib/errors/index.js'
import { requestBody } from '../../lib/ingest/read.js'
import { msSince, requestEvents } from '../../lib/util/lab-events.js'
import { changedUploadSettings, uploadSettings } from './settings.js'
import { BATCH_BYTES, MAX_LINE, createBatcher, createConsumer, readStages, runPipeline, watchHeld } from './stages.js'
import { readConnectionQueues } from './tcp-queues.js'
import { stopKind } from './result.js'

const ROUTE = 'backpressure'
/** Ended uploads kept for GET, their figures only: a run reads its own final state once. */
const KEEP_ENDED = 8
/** zlib's inflate window and state, beside the stages' buffers. */
const INFLATE_BYTES = 64 * 1024
/** The batcher's line not yet ended and its copy as a batch is cut, past which any stage may hold one batch. */
const CUT_BYTES = 2 * (MAX_LINE + BATCH_BYTES)
/** An upload that held this much at its peak is collected after at its end (docs/backpressure.md). */
const COLLECT_FROM = 16 * 1024 * 1024
const TOKEN = /^[A-Za-z0-9-]{8,64}$/

/**
 * @param {object} opts normalised app options (an upload's settings come with it, in its query)
 * @param {import('node:events').EventEmitter} events the lab's event bus: each upload is a 'request'
 * @param {import('../../lib/limits/admission.js').MemoryAdmission} admission the app's memory budget
 * @returns {import('express').Router}
 */
export function backpressureRoutes (opts, events, admission) {
  if (admission === undefined) throw new TypeError('backpressureRoutes needs the app\'s admission')
  /** token -> upload, oldest first */
  const uploads = new Map()
  const router = express.Router({ caseSensitive: true, strict: true })
  const readJson = express.json({ limit: '1kb' })

  function find (token) {
    const upload = uploads.get(checkToken(token))
    if (upload === undefined) throw notFound('GET', `/backpressure/${token}`)
    return upload
  }

  function prune () {
    for (const [token, upload] of uploads) {
      if (uploads.size <= KEEP_ENDED) break
      if (upload.outcome !== null) uploads.delete(token)
    }
  }

  router.post('/backpressure/:token', async function streamUpload (req, res) {
    const token = checkToken(req.params.token)
    if (uploads.has(token)) throw badParameter('token', token, 'a token no upload has used yet')
    const upload = openUpload(token, uploadSettings(req.query), req, admission)
    uploads.set(token, upload)
    prune()
    const request = requestEvents(events, ROUTE, req)
    request.start()
    const failure = await runUpload(upload, res, admission)
    request.end({ status: failure?.status ?? 200, errorType: failure?.type, ms: upload.endedMs })
    if (failure !== null) throw failure
    res.json({ token, consumedBytes: upload.ended.tally.consumedBytes, batches: upload.ended.tally.batches, ms: upload.endedMs })
  })

  router.get('/backpressure/:token', async function showUpload (req, res) {
    res.set('Cache-Control', 'no-store').json(await uploadState(find(req.params.token)))
  })

  router.patch('/backpressure/:token', readJson, async function changeUpload (req, res) {
    const upload = find(req.params.token)
    Object.assign(upload.settings, changedUploadSettings(upload.settings, req.body))
    res.json(await uploadState(upload))
  })

  router.delete('/backpressure/:token', async function stopUpload (req, res) {
    const upload = find(req.params.token)
    upload.stop()
    res.json(await uploadState(upload))
  })

  return router
}

/**
 * A new upload's streams, their bounds reserved in the lab's memory budget before a byte is read, and
 * their watch. A refused reservation lets the body go and is thrown (413 or 503).
 */
function openUpload (token, settings, req, admission) {
  const hwm = settings.highWaterMark
  const streams = {
    req,
    body: requestBody(req, { highWaterMark: hwm }),
    gunzip: zlib.createGunzip({ highWaterMark: hwm }),
    batcher: createBatcher({ highWaterMark: hwm }),
    consumer: createConsumer({ highWaterMark: hwm, settings })
  }
  const read = function readThisUpload () { return readStages(streams) }
  const base = read().reduce(function sum (total, stage) { return total + stage.bound }, INFLATE_BYTES + CUT_BYTES)
  let reservation
  try {
    reservation = admission.reserve(base, { route: ROUTE, what: 'the backpressure upload\'s buffers' })
  } catch (err) {
    streams.body.destroy()
    throw err
  }
  const held = watchHeld({ read, cap: settings.cap, route: ROUTE, reservation, base })
  return startUpload(token, settings, req, { streams, held, reservation, stoppedAt: null })
}

/**
 * The upload's streams run to their end, its figures kept and its buffers let go: null, or the lab
 * error that stopped it (a client gone, the cap, the budget, a bad body).
 */
async function runUpload (upload, res, admission) {
  const { streams, held, reservation } = upload.live
  const stopWatching = admission.watchGarbage()
  // a client gone while the consumer drains what was read: nothing would notice but this
  res.once('close', function clientGone () {
    if (res.writableFinished || streams.consumer.destroyed || upload.live === null) return
    upload.live.stoppedAt = upload.live.held.look()
    streams.consumer.destroy(requestAborted(streams.gunzip.bytesWritten))
  })
  const cause = await runPipeline(streams, upload.settings, held.check)
  const failure = cause === null ? null : labFailure(cause, streams.gunzip.bytesWritten)
  // the figures first, then the buffers dropped: only then is the memory free to give back
  end(upload, failure)
  dropBuffers(streams)
  reservation.release()
  stopWatching()
  // what it held is garbage now: collected once the handler has let go of its streams
  if (upload.ended.peaks.held >= COLLECT_FROM) setImmediate(function collectWhatItHeld () { admission.collectNow() })
  return failure
}

/** What stopped the pipeline as the lab's error: zlib's codes named as a bad body, anything else as it maps. */
function labFailure (cause, compressedBytes) {
  return cause?.code?.startsWith?.('Z_') ? fromZlibError(cause, compressedBytes) : toLabError(cause)
}

/**
 * An upload while it runs: its streams, their watch and reservation in `live`, which its end
 * replaces with `ended`, the figures GET shows from then on.
 */
function startUpload (token, settings, req, live) {
  const upload = {
    token,
    settings,
    started: performance.now(),
    ports: { serverPort: req.socket.localPort, clientPort: req.socket.remotePort },
    live,
    ended: null,
    outcome: null,
    endedMs: null,
    // a socket the server does not read from does not see its client's reset: the run says so here
    // reads `live` only: a closure over the streams would keep them for as long as the upload is kept
    stop: function stopUpload () {
      if (upload.live === null) return
      const { body, gunzip, consumer } = upload.live.streams
      const stopped = requestAborted(gunzip.bytesWritten)
      // what it held when stopped: destroyed, its streams let go of their buffers
      upload.live.stoppedAt ??= upload.live.held.look()
      // the body, if it is still read; the consumer, which may hold a cap's worth to work through
      body.destroy(stopped)
      consumer.destroy(stopped)
    }
  }
  return upload
}

/** The upload is over: how, when, and its figures. Its streams are let go, so the memory they held can be. */
function end (upload, failure) {
  const { streams, held } = upload.live
  upload.endedMs = msSince(upload.started)
  upload.ended = {
    final: upload.live.stoppedAt ?? held.look(),
    peaks: held.peaks(),
    tally: { ...streams.consumer.tally },
    inflatedBytes: streams.batcher.inflatedBytes,
    compressedBytes: streams.gunzip.bytesWritten
  }
  upload.live = null
  upload.outcome = failure === null
    ? { stoppedBy: 'end', error: null }
    : { stoppedBy: failure.type === 'request.aborted' ? 'client' : stopKind(failure.type), error: failure.toJSON().error }
}

/**
 * Every stream of an ended upload destroyed: a Writable or Transform whose write is left
 * waiting keeps its queue, which destroy() lets go of in ./stages.js.
 */
function dropBuffers ({ body, gunzip, batcher, consumer }) {
  for (const stream of [body, gunzip, batcher, consumer]) {
    if (!stream.destroyed) stream.destroy()
  }
}

/**
 * An upload's state, as GET /backpressure/:token answers it (docs/backpressure.md):
 *   { token, ms, settings, stages: [{ name, bytes, bound }], held, consumer, inflatedBytes,
 *     compressedBytes, kernel, rss, peaks, outcome }
 * Once it has ended, `stages` and `held` are as the end found them, and `kernel` is not read.
 */
async function uploadState (upload) {
  const live = upload.live
  const figures = live === null ? upload.ended : null
  const { stages, held } = figures?.final ?? live.held.look()
  const kernel = figures !== null
    ? { source: null, serverReceiveQueue: null, clientSendQueue: null }
    : await readConnectionQueues(upload.ports)
  // the kernel's queues read, the upload may have ended meanwhile
  const now = upload.live === null ? upload.ended : null
  const tally = now?.tally ?? live.streams.consumer.tally
  return {
    token: upload.token,
    ms: now !== null ? upload.endedMs : msSince(upload.started),
    settings: { ...upload.settings },
    stages,
    held,
    consumer: { batches: tally.batches, queuedBatches: tally.writtenBatches - tally.batches, consumedBytes: tally.consumedBytes },
    inflatedBytes: now?.inflatedBytes ?? live.streams.batcher.inflatedBytes,
    compressedBytes: now?.compressedBytes ?? live.streams.gunzip.bytesWritten,
    kernel: { source: kernel.source, serverReceiveQueue: kernel.serverReceiveQueue, clientSendQueue: kernel.clientSendQueue },
    rss: process.memoryUsage.rss(),
    peaks: now?.peaks ?? live.held.peaks(),
    outcome: upload.outcome
  }
}

function checkToken (token) {
  if (typeof token !== 'string' || !TOKEN.test(token)) {
    throw badParameter('token', String(token).slice(0, 100), '8 to 64 letters, digits or hyphens')
  }
  return token
}
