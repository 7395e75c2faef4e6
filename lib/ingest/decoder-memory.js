/**
 * Stage 4's own memory (lib/ingest/README.md): what a decoder holds beside its output (brotli's
 * ring buffer, zstd's window, allocated by zlib outside V8), read from the layer's header and
 * reserved before the decoder is given a byte; the inflated and ratio limits never count it. The
 * routes that stream wait for a place in the app's `DecoderBudget`; the routes that buffer count it
 * in their Reservation, refused when it does not fit. Sizes and the bound: docs/limits.md#decoder-memory.
 */
import { decodersBusy } from '../errors/index.js'
import { ByteBudget } from '../parse/pool.js'
import { ZSTD_WINDOW_LOG_MAX } from './zstd-frame.js'
import { KiB, MiB } from '../util/units.js'

/** zlib's inflate (gzip, deflate): its state and its 32 KiB window, rounded up. */
export const INFLATE_BYTES = 48 * KiB
/** brotli's decoder beside its ring buffer: one meta-block's Huffman tables (brotli's decode.c) and its state. */
export const BROTLI_TABLES = 3 * MiB
/** The largest brotli window (RFC 7932, 9.1): WBITS 24, without the large-window extension zlib leaves off. */
export const BROTLI_WBITS_MAX = 24
/** zstd's decoder beside its window: context, input buffer and output slack, as ZSTD_estimateDStreamSize counts. */
export const ZSTD_BESIDE_WINDOW = 512 * KiB

/** A brotli stream's window from its first byte (RFC 7932, 9.1), or null where zlib refuses those bits. */
export function brotliWindow (first) {
  if ((first & 1) === 0) return 2 ** 16
  const n = (first >>> 1) & 7
  if (n !== 0) return 2 ** (17 + n)
  const m = (first >>> 4) & 7
  if (m === 1) return null // the large-window extension
  return 2 ** (m === 0 ? 17 : 8 + m)
}

/** The window of a gzip, deflate or br layer's decoder from its first byte; one zlib refuses counts at the largest. */
export function layerWindow (codec, first) {
  if (codec.name !== 'br' || first === undefined) return 0
  return brotliWindow(first) ?? 2 ** BROTLI_WBITS_MAX
}

/** What a decoder of `codec` holds beside its output for a `window` (brotli: 2^WBITS; zstd: the largest asked). */
export function decoderBytes (codec, window) {
  switch (codec.name) {
    case 'br': return window + BROTLI_TABLES
    case 'zstd': return window + ZSTD_BESIDE_WINDOW
  }
  return INFLATE_BYTES
}

/** The most a decoder of `codec` may hold in the lab, whatever its header says. */
export function worstDecoderBytes (codec) {
  return decoderBytes(codec, codec.name === 'br' ? 2 ** BROTLI_WBITS_MAX : 2 ** ZSTD_WINDOW_LOG_MAX)
}

const LOOKS = 10 // looks per `queueMs` a waiter takes, to tell a stuck wait from a moving one
const RETRY_AFTER_SECONDS = 1

/**
 * What the decoders of the requests that stream hold together, at most `capacity` bytes (a request
 * that needs more goes alone), counted in the memory budget too. A waiter gives up (503
 * server.busy) when the holders are stuck: none gave memory back or decoded a byte for `queueMs`.
 */
export class DecoderBudget {
  constructor (capacity, admission, queueMs) {
    this.places = new ByteBudget(capacity)
    this.admission = admission
    this.queueMs = queueMs
    this.movedAt = 0 // when memory was last given back or a holder decoded a read
  }

  get capacity () {
    return this.places.capacity
  }

  get used () {
    return this.places.used
  }

  get waiting () {
    return this.places.waiting.length
  }

  /** Resolves once `bytes` fit; rejects with the signal's reason, or 503 server.busy when stuck. */
  async take (bytes, signal) {
    const stuck = new AbortController()
    const wait = this.places.acquire(bytes, signal === undefined ? stuck.signal : AbortSignal.any([signal, stuck.signal]))
    if (wait !== null) await this.waitUnlessStuck(wait, stuck)
    this.admission?.count(bytes)
  }

  async waitUnlessStuck (wait, stuck) {
    const budget = this
    const started = Date.now()
    const timer = setInterval(function lookAtBudget () {
      const now = Date.now()
      const stuckMs = now - Math.max(started, budget.movedAt)
      if (stuckMs >= budget.queueMs) stuck.abort(decodersBusy(budget.capacity, stuckMs, now - started, RETRY_AFTER_SECONDS))
    }, Math.max(1, Math.ceil(this.queueMs / LOOKS)))
    timer.unref()
    try {
      await wait
    } finally {
      clearInterval(timer)
    }
  }

  moved () {
    this.movedAt = Date.now()
  }

  give (bytes) {
    this.movedAt = Date.now()
    this.places.release(bytes)
    this.admission?.count(-bytes)
  }
}

/** A request's Reservation in the memory budget as a source of decoder memory: refused, never waited for. */
export function reservationSource (reservation) {
  return {
    take: function reserveDecoder (bytes) { reservation.grow(bytes, 'its decoder\'s window') },
    give: function releaseDecoder (bytes) { reservation.shrink(bytes) },
    moved: function watchNothing () {}
  }
}

const UNCOUNTED = Object.freeze({
  take: function countNothing () {},
  give: function giveNothing () {},
  moved: function watchNothing () {}
})

/**
 * The decoder memory of one request, taken before a decoder is given a byte, given back at `release`.
 * Streamed, the layers' decoders live together and an inner header comes only once outer layers
 * decoded it: until then a layer counts at its worst, so the request takes all it can need at its
 * first header and never waits while holding some; headers then shrink it (a later zstd frame that
 * asks more grows it, and waits). Whole, one decoder lives at a time, counted from start to end.
 * `source` null: counted nowhere (a route run without an app).
 */
export class DecoderMemory {
  constructor (codecs, source, { streamed }) {
    this.source = source ?? UNCOUNTED
    this.needs = codecs.map(function worstOf (codec) { return streamed ? worstDecoderBytes(codec) : 0 })
    this.worst = codecs.reduce(function add (sum, codec) { return sum + worstDecoderBytes(codec) }, 0)
    this.held = 0
    this.released = false
    this.taking = Promise.resolve() // fits wait for one another, so two never take for one shortfall
  }

  /** Layer `layer` needs `bytes` from now on: take what the request lacks, or give back the rest. */
  fit (layer, bytes, signal) {
    const memory = this
    const next = this.taking.then(function fitLayer () {
      memory.needs[layer] = bytes
      return memory.settle(signal)
    })
    // a refusal ends this fit, not the ones after it (the request is ending anyway)
    this.taking = next.catch(function settled () {})
    return next
  }

  async settle (signal) {
    if (this.released) return
    const want = this.needs.reduce(function add (sum, need) { return sum + need }, 0)
    if (want < this.held) {
      this.source.give(this.held - want)
      this.held = want
      return
    }
    const more = want - this.held
    if (more === 0) return
    await this.source.take(more, signal)
    // released while it waited: what was granted goes straight back
    if (this.released) this.source.give(more)
    else this.held += more
  }

  moved () {
    if (this.held > 0) this.source.moved()
  }

  /** The inflate stage's bound in lib/metrics/held.js. */
  most () {
    return this.worst
  }

  /** Give back all the request holds, once, whatever happened. */
  release () {
    if (this.released) return
    this.released = true
    if (this.held > 0) this.source.give(this.held)
    this.held = 0
  }
}
