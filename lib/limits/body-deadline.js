// Every request body is bounded in time, whoever reads it: idle past `bodyIdleMs`, or slower than
// `minBodyRate` over `bodyRateWindowMs`, is 408. One watch per request; how it is armed, claimed and
// clocked: README.md.
import { bodyTimeout, bodyTooSlow } from '../errors/index.js'

/** The watch of each request, so that its reader can claim it. */
const watches = new WeakMap()

/** Ticks per idle timeout or rate window: the error is at most a fifth late. */
const TICKS_PER_LIMIT = 5
const MIN_TICK_MS = 10
const MAX_TICK_MS = 1000

/** The app-level middleware: arms the watch on every request with a body (`limits` normalised). */
export function bodyDeadline (limits) {
  const settings = Object.freeze({ idleMs: limits.bodyIdleMs, minRate: limits.minBodyRate, windowMs: limits.bodyRateWindowMs })
  return function watchRequestBody (req, res, next) {
    if (hasBody(req) && !req.complete) armBodyWatch(req, res, settings)
    next()
  }
}

/**
 * Claim the request's watch for a reader of its body: on expiry `onExpire` gets the 408 (the answer is marked
 * `Connection: close`). With no watch armed, one is armed with `settings`. Returns the call that gives it back.
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

/** Arm the watch on a request, once; null when every limit is 0. */
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
