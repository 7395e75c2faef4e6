/**
 * /good's small-body rule, one per app, asked by both of its paths: a body
 * within `ingest.inlineParse` bytes (its Content-Length before it is read,
 * or the bytes inflated so far of one sent without it) is parsed on the
 * main thread, where streams and trips to a thread would cost more than the
 * parse. And where a small document is parsed: here, or on a parse thread
 * that is idle now (`ingest.shareParse`). docs/limits.md, "Small bodies".
 */
import { performance } from 'node:perf_hooks'

/**
 * A document goes to a parse thread only past this size: below it the hop
 * costs the main thread about what it spares (`node scripts/parse-hop.js`
 * measures both).
 */
const HOP_WORTH = 16 * 1024

/**
 * Waiting this long or longer for I/O between two small documents means the
 * main thread had time to spare (mainThreadPaused); a backlog leaves it only
 * the microseconds of a poll that finds work.
 */
const PAUSE_MS = 0.05

/** The rule and the sharing, for one app (lib/ingest/state.js makes it). */
export class SmallBodies {
  /**
   * @param {{ queued: number, idle: object[], run: Function }} pool the app's parse pool (lib/parse/pool.js)
   * @param {{ inlineParse: number, shareParse: 'busy'|'always'|'never' }} ingest normalised `ingest` options
   */
  constructor (pool, { inlineParse, shareParse }) {
    this.pool = pool
    /** The most bytes a small body has. */
    this.bound = inlineParse
    this.mode = shareParse
    /** Small documents sent to an idle parse thread so far, rather than parsed on the main thread. */
    this.documentsShared = 0
    /** The event loop's utilisation when a small document was last placed (mainThreadPaused). */
    this.lastPlaced = performance.eventLoopUtilization()
  }

  /** The rule: whether a body of `bytes` is small (NaN, an unknown length, is not). */
  within (bytes) {
    return Number.isSafeInteger(bytes) && bytes <= this.bound
  }

  /**
   * Whether the event loop waited for I/O since the last small document was
   * placed: then parsing here costs no other request anything. When it went
   * from one request straight to the next, requests are waiting for the
   * main thread, and a parse is worth moving off it.
   * @param {number} idleMs waiting shorter than this is not a pause
   */
  mainThreadPaused (idleMs) {
    const now = performance.eventLoopUtilization()
    const since = performance.eventLoopUtilization(now, this.lastPlaced)
    this.lastPlaced = now
    return since.idle >= idleMs
  }

  /**
   * Whether a document of `bytes` goes to a parse thread. With 'busy', only
   * while requests wait for the main thread, and only to a thread idle now:
   * behind a busy thread it is slower than parsing here, and a lone client's
   * answer comes sooner without the hop. docs/ingest.md compares the modes.
   */
  shareTheParse (bytes) {
    if (bytes <= HOP_WORTH || this.mode === 'never') return false
    if (this.mode === 'busy' && this.mainThreadPaused(PAUSE_MS)) return false
    return this.pool.queued === 0 && this.pool.idle.length > 0
  }

  /**
   * parseDocument on a parse thread: the bytes copied into a buffer of their
   * own and moved there (zlib's Buffer may be a view of a larger one, which a
   * message would copy whole). A thread that fails it answers null, as
   * parseDocument does for anything but a valid document: the caller then
   * scans the document for the verdict.
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
