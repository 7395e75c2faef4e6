/**
 * Stage 2, admit (lib/ingest/README.md): a place for the request before a byte of its body is read.
 * Each `admit*` takes the place, runs stages 3 to 7 in it (`route.ingest`) and gives it back,
 * whatever happened. `admitWithinBudget` (/bad, /express-json): a reservation in the memory budget,
 * refused (413 or 503) before it is allocated; `admitToPipeline` (/good): one of a few places to
 * stream, in a queue that gives up when stuck; `admitToStream` (/streamparser-json): none to wait for.
 */
import { requestAborted, pipelinesBusy } from '../errors/index.js'
import { Semaphore } from '../util/semaphore.js'
import { clientGone } from './client-gone.js'

/** A Reservation that admits everything: /bad with `unsafeBad`, or a lab without a budget. */
const UNGUARDED = Object.freeze({
  bytes: 0,
  grow: function admitAll () {},
  tryGrow: function admitAll () { return null },
  shrink: function keepNothing () {},
  release: function releaseNothing () {},
  room: function unlimited () { return Infinity }
})

/**
 * A reservation in the memory budget of twice the Content-Length to start, held while the route
 * ingests. `route.holds` names it in a refusal; `route.unguarded` (/bad with `unsafeBad`): no budget,
 * since the zip bomb's demonstration needs the worker to die.
 */
export async function admitWithinBudget (req, plan, route, lab, holding) {
  const { opts, admission } = lab
  const guarded = admission?.enabled === true && route.unguarded?.(opts) !== true
  const reservation = guarded ? admission.reserve(0, { route: route.name, what: 'this body' }) : UNGUARDED
  try {
    const length = Number(req.headers['content-length'])
    if (Number.isSafeInteger(length) && length >= 0) reservation.grow(2 * length, route.holds)
    return await route.ingest(req, plan, { reservation, holding }, lab)
  } finally {
    reservation.release()
  }
}

/**
 * One of /good's places to stream, held while the route streams; the route is told how many stream
 * now, this one included (`streaming`), to size its buffers.
 */
export async function admitToPipeline (req, plan, route, lab, holding) {
  const places = lab.state.pipelines
  const leavePipeline = await waitForPipeline(req, places, { queueMs: lab.opts.ingest.queueMs, minRate: lab.opts.limits.minBodyRate })
  places.active++
  const stopWatching = lab.admission?.watchGarbage() ?? nothingWatched
  const streaming = {
    socket: req.socket,
    base: req.socket?.bytesRead ?? 0,
    length: Number(req.headers['content-length']),
    startedAt: Date.now()
  }
  places.streaming.add(streaming)
  try {
    return await route.ingest(req, plan, { reservation: null, streaming: places.active, holding }, lab)
  } finally {
    places.streaming.delete(streaming)
    stopWatching()
    places.active--
    leavePipeline()
  }
}

/** The textbook route's place: none to wait for, only the pace of garbage collection watched. */
export async function admitToStream (req, plan, route, lab, holding) {
  const stopWatching = lab.admission?.watchGarbage() ?? nothingWatched
  try {
    return await route.ingest(req, plan, { reservation: null, holding }, lab)
  } finally {
    stopWatching()
  }
}

function nothingWatched () {}

/**
 * /good's places to stream, one set per app (state.js), changed by admitToPipeline only. Past a
 * handful two cores get no faster, but each extra one holds its socket, inflate and batch buffers.
 */
export class PipelinePlaces {
  constructor (limit) { // `ingest.activePipelines`
    this.gate = new Semaphore(limit)
    this.active = 0
    // the requests streaming, as { socket, base: its bytesRead at the start, length: Content-Length, startedAt }
    this.streaming = new Set()
  }

  get queued () {
    return this.gate.waiting.length
  }

  /** Body bytes the requests streaming have read since they took their place (as body-deadline.js counts). */
  streamingBytes () {
    let bytes = 0
    for (const stream of this.streaming) bytes += bytesRead(stream)
    return bytes
  }

  /** The soonest a streaming request is on course to end, in ms, at its pace so far (Infinity: none known). */
  soonestEndMs (now = Date.now()) {
    let soonest = Infinity
    for (const stream of this.streaming) {
      const ms = now - stream.startedAt
      const read = bytesRead(stream)
      if (!Number.isSafeInteger(stream.length) || read <= 0 || ms <= 0) continue
      soonest = Math.min(soonest, Math.max(0, stream.length - read) * ms / read)
    }
    return soonest
  }
}

function bytesRead ({ socket, base }) {
  const read = socket?.bytesRead
  return Number.isFinite(read) ? Math.max(0, read - base) : 0
}

const RETRY_AFTER_SECONDS = 1
const QUEUE_LOOKS = 10 // how often a waiter samples the pipelines' pace, per deadline
// A queue moves only if a pipeline ahead is on course to end within this many deadlines: many large
// uploads each read slowly, and a short horizon takes that for a stuck queue (docs/ingest.md,
// "Refusals: the budget, and /good's queue").
const QUEUE_HORIZON = 60

/**
 * Wait for one of the places to stream. Waiting requests are not read: their bytes wait in the
 * socket buffers, which is backpressure too. A waiter gives up (503 server.busy) when no place came
 * free for `queueMs` and the pipelines ahead read no faster than `minRate` each, or none is on course
 * to end within QUEUE_HORIZON deadlines. How many wait is bounded by `limits.inflight`.
 */
async function waitForPipeline (req, places, { queueMs, minRate }) {
  const gate = places.gate
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
    const read = places.streamingBytes()
    looks.push([now, read])
    while (looks.length > 2 && looks[1][0] <= now - queueMs) looks.shift()
    const stuckMs = now - Math.max(started, gate.releasedAt)
    const [since, readThen] = looks[0]
    const pace = now > since ? (read - readThen) * 1000 / (now - since) : 0
    const moving = pace > floor && places.soonestEndMs(now) <= QUEUE_HORIZON * queueMs
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
