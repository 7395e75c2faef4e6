/**
 * Stage 3, read (lib/ingest/README.md): the body streamed (`requestBody`) or kept whole (`readWhole`),
 * bounded in time (lib/limits/body-deadline.js); a vanished client is an abort, and a body the lab
 * stops reading is drained for a while so that its client still reads the answer.
 */
import { Readable } from 'node:stream'
import { requestAborted } from '../errors/index.js'
import { guardBody } from '../limits/body-deadline.js'
import { clientGone } from './client-gone.js'
import { listen } from '../util/listen.js'

/**
 * The request body as a stream `pipeline` may destroy without destroying the socket: the rest is read
 * and discarded, so the client still gets its JSON error. A stall or a slow body fails with 408 by the
 * request's one watch (body-deadline.js) the app arms; these options count only where none is armed.
 * `highWaterMark`: what the stream buffers before the request is paused.
 */
export function requestBody (req, { idleMs = 0, minRate = 0, rateWindowMs = 0, highWaterMark = 64 * 1024 } = {}) {
  let received = 0
  let releaseDeadline = null
  function armDeadline () {
    releaseDeadline = guardBody(req, { idleMs, minRate, windowMs: rateWindowMs }, function bodyDeadlinePassed (err) {
      source.destroy(err)
    })
  }
  const source = new Readable({
    highWaterMark,
    read: function readRequest () {
      req.resume()
    },
    destroy: function releaseRequest (err, callback) {
      cleanup()
      if (!req.complete) discardRestOfBody(req)
      callback(err)
    }
  })
  function onData (chunk) {
    received += chunk.length
    if (!source.push(chunk)) req.pause()
  }
  function onEnd () {
    cleanup()
    source.push(null)
  }
  function onClose () {
    if (!req.complete) source.destroy(requestAborted(received))
  }
  function onError (err) {
    // a reset after the last byte arrived, before 'end' was read, is an abort too
    const aborted = !req.complete || err.code === 'ECONNRESET' || err.message === 'aborted'
    source.destroy(aborted ? requestAborted(received) : err)
  }
  function cleanup () {
    if (releaseDeadline) releaseDeadline()
    releaseDeadline = null
    stopListening()
  }
  const stopListening = listen(req, { data: onData, end: onEnd, close: onClose, error: onError })
  armDeadline()
  // a client gone before its request got here (queued for a pipeline, say) sends no more 'close'
  if (clientGone(req)) process.nextTick(function alreadyGone () { source.destroy(requestAborted(received)) })
  return source
}

// how much of an abandoned body the lab reads and drops, at most: bytes, time in all, and a gap
const DRAIN = Object.freeze({ bytes: 64 * 1024 * 1024, ms: 10_000, idleMs: 2000 })

const discarding = new WeakSet()

/**
 * Read and discard the rest of an abandoned body so the client, still sending, reads its error answer;
 * only up to DRAIN: a client that sends without end, or stops, must not keep the lab reading. Called by
 * the body stream when its pipeline fails, and by the error handler for a body refused unread.
 */
export function discardRestOfBody (req) {
  if (req.complete || discarding.has(req)) return
  discarding.add(req)
  let drained = 0
  function stopDraining () {
    cleanup()
    if (!req.complete) req.socket?.destroy()
  }
  const total = setTimeout(stopDraining, DRAIN.ms)
  const idle = setTimeout(stopDraining, DRAIN.idleMs)
  total.unref()
  idle.unref()
  function onData (chunk) {
    drained += chunk.length
    if (drained > DRAIN.bytes) stopDraining()
    else idle.refresh()
  }
  function cleanup () {
    clearTimeout(total)
    clearTimeout(idle)
    stopListening()
  }
  const stopListening = listen(req, { data: onData, end: cleanup, close: cleanup })
  req.resume()
}

/**
 * Read a body to its end and keep it, checking each chunk with `count` (which may reserve per chunk);
 * a refused chunk destroys `source` with the error. Events rather than `pipeline`: one source read
 * whole needs no composing, and for a read or two pipeline's set-up costs more than the rest. The
 * chunks and their join are alive at the end: twice the body, what a route that reads whole reserves.
 * `holding` is told the chunks kept and the source's buffer, then the one Buffer.
 */
export function readWhole (source, count, holding) {
  return new Promise(function read (resolve, reject) {
    const pieces = []
    let kept = 0
    holding?.watch('read', function keptSoFar () { return kept + source.readableLength })
    source.on('data', function keep (chunk) {
      const error = count(chunk)
      if (error) {
        source.destroy(error)
        return
      }
      pieces.push(chunk)
      kept += chunk.length
    })
    source.once('end', function ended () {
      const body = pieces.length === 1 ? pieces[0] : Buffer.concat(pieces)
      holding?.set('read', body.length)
      resolve(body)
    })
    source.once('error', reject)
  })
}
