/**
 * Stage 2 of an ingest request (lib/ingest/sequence.js): a place for it,
 * before a byte of its body is read. Each route's way of admitting is part
 * of its lesson:
 * - `admitWithinBudget` (/bad, /express-json): a route that holds the whole
 *   body reserves, in the memory budget (lib/limits/admission.js), what it
 *   will hold. Twice the Content-Length now (the chunks and their one
 *   concatenation), the rest as it learns more; what cannot fit is refused
 *   (413 or 503) before it is allocated.
 * - `admitToPipeline` (/good): one of a few places to stream, waited for in
 *   a queue that gives up when it is stuck (503).
 * - `admitToStream` (/streamparser-json): a stream holds a chunk or two, so
 *   it starts at once; only the garbage it leaves is paced.
 * Each returns a Place: `{ reservation, leave() }`, left once when the
 * request ends, whatever happened.
 */
import { requestAborted, pipelinesBusy } from '../errors/index.js'
import { clientGone } from './read.js'

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
 * A reservation in the memory budget for a route that holds the whole body.
 * @param {{ name: string, holds: string, unguarded?: (opts: object) => boolean }} route
 *   `holds`: what twice the Content-Length is, for the refusal's message; `unguarded`: no budget at
 *   all (/bad with `unsafeBad`: the zip bomb's demonstration needs the worker to die)
 * @returns {Promise<{ reservation: object, leave: () => void }>}
 */
export async function admitWithinBudget (req, plan, route, { opts, admission }) {
  const guarded = admission?.enabled === true && route.unguarded?.(opts) !== true
  const reservation = guarded ? admission.reserve(0, { route: route.name, what: 'this body' }) : UNGUARDED
  const place = { reservation, leave: function releaseReservation () { reservation.release() } }
  const length = Number(req.headers['content-length'])
  if (Number.isSafeInteger(length) && length >= 0) {
    try {
      reservation.grow(2 * length, route.holds)
    } catch (err) {
      place.leave()
      throw err
    }
  }
  return place
}

/**
 * One of /good's places to stream (waitForPipeline), the app's count of
 * requests streaming, and the pace of garbage collection while it streams.
 * `track` registers the request's compressed counter, how a queue tells a
 * pipeline that moves from one that is stuck.
 * @returns {Promise<{ reservation: null, track: (counter: { bytes: number }) => void, leave: () => void }>}
 */
export async function admitToPipeline (req, plan, route, { opts, state, admission }) {
  const leavePipeline = await waitForPipeline(req, state, { queueMs: opts.ingest.queueMs, minRate: opts.limits.minBodyRate })
  state.active++
  const stopWatching = admission?.watchGarbage() ?? function nothingWatched () {}
  let streaming = null
  return {
    reservation: null,
    track: function trackStreaming (counter) {
      streaming = { counter, length: Number(req.headers['content-length']), startedAt: Date.now() }
      state.streaming.add(streaming)
    },
    leave: function leavePlace () {
      if (streaming !== null) state.streaming.delete(streaming)
      stopWatching()
      state.active--
      leavePipeline()
    }
  }
}

/**
 * The textbook route's place: none to wait for. A stream holds a chunk or
 * two, so only the pace of garbage collection is watched while it runs.
 * @returns {Promise<{ reservation: null, leave: () => void }>}
 */
export async function admitToStream (req, plan, route, { admission }) {
  const stopWatching = admission?.watchGarbage() ?? function nothingWatched () {}
  return { reservation: null, leave: stopWatching }
}

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
async function waitForPipeline (req, state, { queueMs, minRate }) {
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
