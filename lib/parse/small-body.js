/**
 * /good's small-body rule, one per app, asked by both of its paths: a body within `ingest.inlineParse`
 * bytes (its Content-Length, or the bytes inflated so far without one) is parsed on the main thread,
 * where streams and trips to a thread cost more than the parse; here, or on a parse thread idle now
 * (`ingest.shareParse`). docs/limits.md, "Small bodies".
 */
import { performance } from 'node:perf_hooks'

// Past this a document may go to a thread: below it the hop costs the main thread about what it spares
// (`node scripts/parse-hop.js` measures both).
const HOP_WORTH = 16 * 1024
// Waiting this long for I/O between two small documents means the main thread had time to spare; a
// backlog leaves it only the microseconds of a poll that finds work.
const PAUSE_MS = 0.05

/** The rule and the sharing, for one app (lib/ingest/state.js makes it). */
export class SmallBodies {
  /** `pool`: the app's parse pool; `inlineParse`, `shareParse`: normalised `ingest` options. */
  constructor (pool, { inlineParse, shareParse }) {
    this.pool = pool
    this.bound = inlineParse
    this.mode = shareParse
    this.documentsShared = 0 // sent to an idle parse thread rather than parsed here
    this.lastPlaced = performance.eventLoopUtilization() // when a small document was last placed
  }

  /** The rule: whether a body of `bytes` is small (NaN, an unknown length, is not). */
  within (bytes) {
    return Number.isSafeInteger(bytes) && bytes <= this.bound
  }

  /**
   * Whether the event loop waited for I/O (`idleMs` or more) since the last small document was placed:
   * then parsing here costs no other request anything; if not, requests wait for the main thread.
   */
  mainThreadPaused (idleMs) {
    const now = performance.eventLoopUtilization()
    const since = performance.eventLoopUtilization(now, this.lastPlaced)
    this.lastPlaced = now
    return since.idle >= idleMs
  }

  /**
   * Whether a document of `bytes` goes to a parse thread. With 'busy', only while requests wait for the
   * main thread, and only to a thread idle now: behind a busy one it is slower, and a lone client's
   * answer comes sooner without the hop. docs/ingest.md compares the modes.
   */
  shareTheParse (bytes) {
    if (bytes <= HOP_WORTH || this.mode === 'never') return false
    if (this.mode === 'busy' && this.mainThreadPaused(PAUSE_MS)) return false
    return this.pool.queued === 0 && this.pool.idle.length > 0
  }

  /**
   * parseDocument on a parse thread: the bytes copied into a buffer of their own and moved (zlib's
   * Buffer may view a larger one, which a message would copy whole). A failed thread answers null,
   * as parseDocument does for anything but a valid document: the caller then scans for the verdict.
   */
  async parseThere (document) {
    this.documentsShared++
    const bytes = new Uint8Array(document.bytes)
    try {
      return await this.pool.run({ ...document, bytes }, { transferList: [bytes.buffer] })
    } catch {
      return null
    }
  }
}
