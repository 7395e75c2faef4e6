/**
 * Stage 4's own memory (lib/ingest/README.md): what a decoder holds beside
 * its output, read from the layer's header and reserved before the decoder
 * is given a byte. The inflated-bytes and ratio limits count what a decoder
 * puts out, never the decoder itself: brotli's ring buffer (up to 16 MiB)
 * and zstd's window (up to 8 MiB here) are allocated by zlib, outside V8,
 * from the first bits of the stream. docs/limits.md ("Decoder memory") gives
 * the bound this keeps and the command that measures it.
 *
 * Two sources of that memory, one per kind of route:
 * - `DecoderBudget` (one per app, `ingest.decoderBudget`): the routes that
 *   stream (/good, /streamparser-json) wait for a place in it, as they wait
 *   for a pipeline; a waiting request's body is not read.
 * - a request's Reservation in the memory budget (/bad, /express-json): the
 *   decoder is part of what the route holds, refused (413 or 503) when it
 *   does not fit, as the body is.
 */
import { decodersBusy } from '../errors/index.js'
import { ByteBudget } from '../parse/pool.js'
import { ZSTD_WINDOW_LOG_MAX } from './zstd-frame.js'
import { KiB, MiB } from '../util/units.js'

/** zlib's inflate (gzip, deflate): its state (about 7 KiB) and its 32 KiB window (windowBits 15), rounded up. */
export const INFLATE_BYTES = 48 * KiB
/**
 * brotli's decoder beside its ring buffer: the Huffman tables of one meta-block at most (256 trees
 * each of literals, commands and distances: about 2.7 MiB in brotli's decode.c) and its state.
 */
export const BROTLI_TABLES = 3 * MiB
/** The largest brotli window (RFC 7932, 9.1): WBITS 24 without the large-window extension, which zlib leaves off. */
export const BROTLI_WBITS_MAX = 24
/**
 * zstd's decoder beside its window: its context (about 95 KiB) and its input buffer and the two
 * blocks of slack on its output buffer (128 KiB each at most), as ZSTD_estimateDStreamSize counts them.
 */
export const ZSTD_BESIDE_WINDOW = 512 * KiB

/**
 * The window a brotli stream asks for, from its first byte (RFC 7932, 9.1: WBITS in its first 1, 4
 * or 7 bits), or null where those bits are not a window zlib decodes (the decoder then refuses them).
 * @param {number} first the stream's first byte
 * @returns {number|null} bytes: 2^WBITS
 */
export function brotliWindow (first) {
  if ((first & 1) === 0) return 2 ** 16
  const n = (first >>> 1) & 7
  if (n !== 0) return 2 ** (17 + n)
  const m = (first >>> 4) & 7
  if (m === 1) return null // the large-window extension
  return 2 ** (m === 0 ? 17 : 8 + m)
}

/**
 * What a decoder of `codec` holds, beside its output, for a stream whose window is `window` bytes.
 * @param {import('./codecs.js').Codec} codec
 * @param {number} [window] brotli: 2^WBITS; zstd: the largest window a frame asked so far; unused for gzip and deflate
 * @returns {number} bytes
 */
export function decoderBytes (codec, window) {
  switch (codec.name) {
    case 'br': return window + BROTLI_TABLES
    case 'zstd': return window + ZSTD_BESIDE_WINDOW
  }
  return INFLATE_BYTES
}

/**
 * The most a decoder of `codec` may hold in the lab, whatever its header says.
 * @param {import('./codecs.js').Codec} codec
 */
export function worstDecoderBytes (codec) {
  return decoderBytes(codec, codec.name === 'br' ? 2 ** BROTLI_WBITS_MAX : 2 ** ZSTD_WINDOW_LOG_MAX)
}

/** Looks per `queueMs` a waiter takes at the budget, to tell a stuck wait from a moving one. */
const LOOKS = 10
/** Seconds a client told the decoders are busy is asked to wait. */
const RETRY_AFTER_SECONDS = 1

/**
 * What the decoders of the requests that stream hold together, at most `capacity` bytes (a request
 * whose decoders need more goes alone); each place is counted in the memory budget too, so that the
 * routes that buffer see it. A waiter gives up (503 server.busy) when the decoders that hold it are
 * stuck, as /good's queue does: none gave memory back or decoded a byte for `queueMs`. One per app
 * (app.js makes it).
 */
export class DecoderBudget {
  /**
   * @param {number} capacity `ingest.decoderBudget`
   * @param {{ count: (bytes: number) => void }|null} admission the app's memory admission, or null
   * @param {number} queueMs `ingest.queueMs`
   */
  constructor (capacity, admission, queueMs) {
    this.places = new ByteBudget(capacity)
    this.admission = admission
    this.queueMs = queueMs
    /** When memory was last given back, or a decoder holding some last decoded a read (Date.now()). */
    this.movedAt = 0
  }

  get capacity () {
    return this.places.capacity
  }

  /** Bytes the decoders of the requests that stream hold now. */
  get used () {
    return this.places.used
  }

  /** Requests waiting for a place for their decoders. */
  get waiting () {
    return this.places.waiting.length
  }

  /**
   * @param {number} bytes
   * @param {AbortSignal} [signal] ends the wait (the request is gone)
   * @returns {Promise<void>} once `bytes` fit; rejects with the signal's reason, or 503 server.busy when stuck
   */
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

  /** A decoder holding some of the budget decoded a read: the budget is not stuck. */
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
 * The decoder memory of one request: what each layer's decoder needs, taken from a source before the
 * decoder is given a byte and given back once the request is done (`release`).
 *
 * Streamed, the layers' decoders are alive together and an inner layer's header comes only once the
 * outer layers have decoded it: until its header is read a layer counts at its worst, so what the
 * request takes at its first header is all it can need (it never waits for more while holding some,
 * and cannot hold a place another request waits for while it waits itself); headers then shrink it.
 * A zstd layer's later frame may ask a larger window than the first: that one grows it, and waits.
 * Whole, one decoder is alive at a time: each layer is counted when it starts and let go when it ends.
 */
export class DecoderMemory {
  /**
   * @param {import('./codecs.js').Codec[]} codecs the layers, in decoding order
   * @param {{ take: (bytes: number, signal?: AbortSignal) => (Promise<void>|void), give: (bytes: number) => void, moved: () => void }|null} source
   *   null: counted nowhere (a route run without an app, as the specs of its parts do)
   * @param {{ streamed: boolean }} how `streamed`: the layers' decoders are alive together
   */
  constructor (codecs, source, { streamed }) {
    this.source = source ?? UNCOUNTED
    /** What each layer's decoder needs: its worst until its header is read (streamed), else 0. */
    this.needs = codecs.map(function worstOf (codec) { return streamed ? worstDecoderBytes(codec) : 0 })
    /** The most the request's decoders may be given: each layer at its worst. */
    this.worst = codecs.reduce(function add (sum, codec) { return sum + worstDecoderBytes(codec) }, 0)
    /** Bytes taken from the source and not given back. */
    this.held = 0
    this.released = false
    /** Taking in progress: fits wait for one another, so that two never take for the same shortfall. */
    this.taking = Promise.resolve()
  }

  /**
   * Layer `layer`'s decoder needs `bytes` from now on: take what the request lacks (waiting for it,
   * or refused, as the source does) or give back what it no longer needs.
   * @param {AbortSignal} [signal] ends a wait (the request's pipeline was destroyed)
   * @returns {Promise<void>}
   */
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

  /** One of the request's decoders decoded a read: what it holds is in use, not stuck. */
  moved () {
    if (this.held > 0) this.source.moved()
  }

  /** The most the request's decoders may be given (the inflate stage's bound in lib/metrics/held.js). */
  most () {
    return this.worst
  }

  /** Give back all the request holds: once it is done, whatever happened. Safe to call twice. */
  release () {
    if (this.released) return
    this.released = true
    if (this.held > 0) this.source.give(this.held)
    this.held = 0
  }
}
