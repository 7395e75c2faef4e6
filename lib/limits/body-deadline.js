/**
 * Every request body is bounded in time, whoever reads it: a body that
 * sends nothing for `limits.bodyIdleMs`, or less than `limits.minBodyRate`
 * bytes/s averaged over the last `limits.bodyRateWindowMs`, fails with 408.
 * An idle timer alone (nginx's client_body_timeout) lets a client that sends
 * one byte a second hold a request, and whatever the request holds (a /good
 * pipeline, an upload's file), for as long as the body lasts.
 *
 * One watch per request. The app arms it for every request that has a body
 * (`bodyDeadline`, mounted first by `app.js`); whoever reads the body
 * claims it (`guardBody`, which `requestBody()` in lib/ingest/read.js
 * calls), so that on expiry the reader's stream fails and the route answers
 * as it answers any body error. A body nobody claimed (`express.json` on
 * POST /experiments, a body Node drains after the answer) is answered here:
 * 408 JSON if nothing was sent yet, and the connection is closed either way.
 *
 * The clock only runs while the server is reading. A request whose buffer is
 * full (its reader is applying backpressure, or it waits unread for a /good
 * pipeline) is not the client's fault; neither is an event loop held up by
 * /bad parsing a large body, so one tick never counts more than twice its
 * length. Bytes are counted on the connection (`socket.bytesRead`): what
 * arrives with the headers is not counted, chunked framing is.
 */
import { bodyTimeout, bodyTooSlow } from '../errors/index.js'

/** The watch of each request, so that its reader can claim it. */
const watches = new WeakMap()

/** Ticks per idle timeout or rate window: the error is at most a fifth late. */
const TICKS_PER_LIMIT = 5
const MIN_TICK_MS = 10
const MAX_TICK_MS = 1000

/**
 * The app-level middleware: arms the watch on every request with a body.
 * @param {{ bodyIdleMs: number, minBodyRate: number, bodyRateWindowMs: number }} limits normalised `limits`
 */
export function bodyDeadline (limits) {
  const settings = Object.freeze({ idleMs: limits.bodyIdleMs, minRate: limits.minBodyRate, windowMs: limits.bodyRateWindowMs })
  return function watchRequestBody (req, res, next) {
    if (hasBody(req) && !req.complete) armBodyWatch(req, res, settings)
    next()
  }
}

/**
 * Claim the request's watch for a reader of its body: on expiry `onExpire`
 * gets the 408 error (and the answer is marked `Connection: close`). With no
 * watch armed (no app middleware), one is armed with `settings`.
 * @param {{ idleMs?: number, minRate?: number, windowMs?: number }} settings used only when no watch is armed
 * @returns {() => void} gives the claim back (and stops a watch armed here)
 */
export function guardBody (req, settings, onExpire) {
  const armed = watches.get(req)
  const watch = armed ?? armBodyWatch(req, req.res ?? null, settings)
  if (watch === null) return function nothingToRelease () {}
  watch.handler = onExpire
  return function releaseBodyWatch () {
    if (watch.handler === onExpire) watch.handler = null
    if (armed === undefined) watch.stop()
  }
}

/** A body follows the headers: Content-Length above 0, or a Transfer-Encoding. */
function hasBody (req) {
  if (req.headers['transfer-encoding'] !== undefined) return true
  const length = Number(req.headers['content-length'])
  return Number.isFinite(length) && length > 0
}

/**
 * Arm the watch on a request, once.
 * @returns {BodyWatch|null} null when every limit is 0
 */
function armBodyWatch (req, res, { idleMs = 0, minRate = 0, windowMs = 0 }) {
  const known = watches.get(req)
  if (known !== undefined) return known
  if (!(idleMs > 0) && !(minRate > 0 && windowMs > 0)) return null
  const watch = new BodyWatch(req, res, { idleMs, minRate: windowMs > 0 ? minRate : 0, windowMs })
  watches.set(req, watch)
  return watch
}

/** See the module comment. */
class BodyWatch {
  /** The reader's expiry handler, or null: then the watch answers itself. */
  handler = null
  #req
  #res
  #limits
  #timer = null
  #base
  #lastTick
  #lastBytes = 0
  /** ms the server was reading, and of those, ms since a byte arrived. */
  #active = 0
  #idle = 0
  /** { active, bytes } per tick, spanning at least the rate window. */
  #samples = [{ active: 0, bytes: 0 }]
  #tickMs
  #onGone

  constructor (req, res, limits) {
    this.#req = req
    this.#res = res
    this.#limits = limits
    this.#base = req.socket?.bytesRead ?? 0
    this.#lastTick = performance.now()
    const shortest = Math.min(limits.idleMs > 0 ? limits.idleMs : Infinity, limits.minRate > 0 ? limits.windowMs : Infinity)
    this.#tickMs = Math.max(MIN_TICK_MS, Math.min(MAX_TICK_MS, Math.floor(shortest / TICKS_PER_LIMIT)))
    const watch = this
    this.#onGone = function bodyDone () { watch.stop() }
    req.once('end', this.#onGone)
    req.once('close', this.#onGone)
    this.#timer = setInterval(function checkBody () { watch.#tick() }, this.#tickMs)
    this.#timer.unref()
  }

  /** Stop watching: the body ended, the request closed, or the watch expired. */
  stop () {
    if (this.#timer === null) return
    clearInterval(this.#timer)
    this.#timer = null
    this.#req.removeListener('end', this.#onGone)
    this.#req.removeListener('close', this.#onGone)
  }

  /** Body bytes read since the watch was armed (see the module comment). */
  #received () {
    const read = this.#req.socket?.bytesRead
    return Number.isFinite(read) ? Math.max(this.#lastBytes, read - this.#base) : this.#lastBytes
  }

  #tick () {
    const req = this.#req
    if (req.complete || req.destroyed) {
      this.stop()
      return
    }
    const now = performance.now()
    const elapsed = Math.min(now - this.#lastTick, 2 * this.#tickMs)
    this.#lastTick = now
    const bytes = this.#received()
    // a full buffer: the parser has stopped reading the socket until the reader takes some
    const blocked = req.readableLength >= req.readableHighWaterMark
    if (bytes > this.#lastBytes || blocked) this.#idle = 0
    else this.#idle += elapsed
    this.#lastBytes = bytes
    if (blocked) return
    this.#active += elapsed

    const { idleMs, minRate, windowMs } = this.#limits
    if (idleMs > 0 && this.#idle >= idleMs) {
      this.#expire(bodyTimeout(idleMs, bytes))
      return
    }
    if (minRate <= 0) return
    const samples = this.#samples
    samples.push({ active: this.#active, bytes })
    while (samples.length > 2 && samples[1].active <= this.#active - windowMs) samples.shift()
    if (this.#active < windowMs) return
    const from = samples[0]
    const rate = (bytes - from.bytes) * 1000 / (this.#active - from.active)
    if (rate < minRate) this.#expire(bodyTooSlow(minRate, rate, bytes, Math.round(this.#active), windowMs))
  }

  #expire (error) {
    this.stop()
    const res = this.#res
    if (res !== null && !res.headersSent) res.setHeader('Connection', 'close')
    if (this.handler !== null) {
      // the reader's stream fails with it, and the route answers as for any body error
      this.handler(error)
      return
    }
    if (res === null || res.headersSent) {
      // answered already (Node is draining the body after the response): only the connection is left
      this.#req.socket?.destroy()
      return
    }
    const body = JSON.stringify(error.toJSON())
    res.writeHead(error.status, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      Connection: 'close'
    })
    res.end(body)
  }
}
