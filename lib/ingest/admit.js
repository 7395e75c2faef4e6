/**
 * Stage 2, admit (lib/ingest/README.md): a place for the request before a
 * byte of its body is read. Each `admit*` takes the place, runs stages 3 to
 * 7 in it (`route.ingest`) and gives it back, whatever happened; nothing
 * else changes a place. Each route's way of admitting is part of its lesson:
 * - `admitWithinBudget` (/bad, /express-json): a reservation in the memory
 *   budget (lib/limits/admission.js) of what the route will hold, twice the
 *   Content-Length to start with; what cannot fit is refused (413 or 503)
 *   before it is allocated.
 * - `admitToPipeline` (/good): one of a few places to stream
 *   (`PipelinePlaces`), waited for in a queue that gives up when it is stuck.
 * - `admitToStream` (/streamparser-json): none to wait for, since a stream
 *   holds a chunk or two; only the pace of garbage collection is watched.
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
 * A reservation in the memory budget for a route that holds the whole body,
 * held while the route ingests it.
 * @param {import('express').Request} req
 * @param {object} plan what stage 1 read from the headers
 * @param {{ name: string, holds: string, unguarded?: (opts: object) => boolean, ingest: Function }} route
 *   `holds`: what twice the Content-Length is, for the refusal's message; `unguarded`: no budget at
 *   all (/bad with `unsafeBad`: the zip bomb's demonstration needs the worker to die)
 * @param {{ opts: object, admission?: object }} lab
 * @param {import('../metrics/held.js').Holding} holding what the request holds, by stage: passed on in the place
 * @returns {Promise<object>} what `route.ingest` found
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
 * One of /good's places to stream, held while the route streams: the queue
 * (waitForPipeline), the count of requests streaming, how far each has read,
 * and the pace of garbage collection meanwhile. The route is told how many
 * stream now, this one included (`streaming`), to size its buffers.
 * @param {{ opts: object, state: { pipelines: PipelinePlaces }, admission?: object }} lab
 * @returns {Promise<object>} what `route.ingest` found
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

/**
 * The textbook route's place: none to wait for, only the pace of garbage
 * collection watched while it runs.
 * @param {{ admission?: object }} lab
 * @returns {Promise<object>} what `route.ingest` found
 */
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
 * /good's places to stream, one set per app (lib/ingest/state.js holds it),
 * changed by admitToPipeline only. Past a handful of pipelines two cores get
 * no faster, but every extra one holds its socket, inflate and batch buffers.
 */
export class PipelinePlaces {
  /** @param {number} limit `ingest.activePipelines` */
  constructor (limit) {
    this.gate = new Semaphore(limit)
    /** Requests streaming now. */
    this.active = 0
    /**
     * The requests streaming now, as `{ socket, base, length, startedAt }`: the socket's bytes read
     * when the place was taken, Content-Length (or NaN), Date.now() then. How a queue tells moving from stuck.
     */
    this.streaming = new Set()
  }

  /** Requests waiting for a place. */
  get queued () {
    return this.gate.waiting.length
  }

  /**
   * Body bytes the requests streaming now have read since they took their place, together,
   * counted on their connections (`socket.bytesRead`), as lib/limits/body-deadline.js counts them.
   */
  streamingBytes () {
    let bytes = 0
    for (const stream of this.streaming) bytes += bytesRead(stream)
    return bytes
  }

  /**
   * The soonest a request streaming now is on course to end, in ms from `now`, at the pace it has
   * kept since it started: Infinity when none has a Content-Length and bytes read.
   */
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

/** Bytes a streaming request's connection has read since it took its place. */
function bytesRead ({ socket, base }) {
  const read = socket?.bytesRead
  return Number.isFinite(read) ? Math.max(0, read - base) : 0
}

/** Seconds a client told the pipelines are busy is asked to wait. */
const RETRY_AFTER_SECONDS = 1

/** Looks at the queue per deadline: how often a waiter samples the pipelines' pace. */
const QUEUE_LOOKS = 10
/**
 * A queue moves only if a pipeline ahead is on course to end within this
 * many deadlines: an upload in progress rather than a dawdler. Large uploads
 * at once each read slowly, far from their end when a waiter's deadline
 * comes, and a short horizon takes that for a stuck queue (docs/ingest.md,
 * "Refusals: the budget, and /good's queue").
 */
const QUEUE_HORIZON = 60

/**
 * Wait for one of the few places to stream. Waiting requests are not read:
 * their bytes wait in the kernel's socket buffers and the client's, which
 * is backpressure too. A waiter gives up (503 server.busy) when the queue
 * is stuck: no place came free for `queueMs`, and the pipelines ahead
 * either read no faster together than `limits.minBodyRate` each, or none
 * is on course to end within QUEUE_HORIZON deadlines. How many wait is
 * bounded by `limits.inflight`.
 * @returns {Promise<() => void>} gives the place back
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
