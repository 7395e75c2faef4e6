/**
 * A sampled peak RSS, for where the kernel keeps no resettable one (macOS, Windows, portable mode: lib/util/platform.js). A
 * worker thread reads the process's RSS every few milliseconds and keeps the highest it saw since the last reset in shared
 * memory. It is a thread, not a timer on the main thread, because the peaks worth catching happen while the main thread is busy:
 * /bad's JSON.parse of a large body holds the event loop for seconds, and no timer of the main thread would fire until it was
 * over. More: README.md, "peak-sampler.js".
 */
import { Worker } from 'node:worker_threads'

/** ms between two samples while someone watches. */
const SAMPLE_EVERY_MS = 5
/** ms unwatched after which the thread ends (a watch after that starts another). */
const IDLE_EXIT_MS = 1000

// the shared words: [peak bytes, watchers, stop]
const PEAK = 0
const WATCHERS = 1
const STOP = 2

/**
 * The thread: sample while watched, sleep on the watchers word while not (Atomics.wait wakes when the first watcher arrives, or
 * the sampler stops).
 */
const THREAD_SOURCE = `
const { workerData } = require('node:worker_threads')
const shared = new BigInt64Array(workerData.buffer)
const every = workerData.every
const sleeper = new Int32Array(new SharedArrayBuffer(4))
let idleSince = Date.now()
for (;;) {
  if (Atomics.load(shared, ${STOP}) !== 0n) break
  if (Atomics.load(shared, ${WATCHERS}) === 0n) {
    // nobody watching for a while: end, so an idle lab keeps no thread (the next watch starts one)
    if (Date.now() - idleSince > workerData.idleMs) break
    Atomics.wait(sleeper, 0, 0, 20)
    continue
  }
  idleSince = Date.now()
  const rss = BigInt(process.memoryUsage.rss())
  for (;;) {
    const peak = Atomics.load(shared, ${PEAK})
    if (rss <= peak || Atomics.compareExchange(shared, ${PEAK}, peak, rss) === peak) break
  }
  Atomics.wait(sleeper, 0, 0, every)
}
`

/**
 * One per app. `watch()` starts sampling (the thread is made at the first watch) and returns the function that stops it;
 * `reset()` starts a new peak from the RSS now; `read()` is the highest RSS seen since, the RSS now included.
 */
export class PeakSampler {
  constructor ({ everyMs = SAMPLE_EVERY_MS } = {}) {
    if (!Number.isSafeInteger(everyMs) || everyMs < 1 || everyMs > 1000) {
      throw new TypeError(`peak sampler interval must be an integer from 1 to 1000 ms, got ${everyMs}`)
    }
    this.everyMs = everyMs
    this.shared = new BigInt64Array(new SharedArrayBuffer(3 * 8))
    this.worker = null
    this.closed = false
    this.reset()
  }

  watch () {
    if (this.closed) return function nothingWatched () {}
    Atomics.add(this.shared, WATCHERS, 1n)
    if (this.worker === null) this.startThread()
    this.note()
    const sampler = this
    let done = false
    return function stopWatching () {
      if (done) return
      done = true
      sampler.note()
      Atomics.sub(sampler.shared, WATCHERS, 1n)
    }
  }

  startThread () {
    const sampler = this
    const worker = new Worker(THREAD_SOURCE, {
      eval: true, workerData: { buffer: this.shared.buffer, every: this.everyMs, idleMs: IDLE_EXIT_MS }
    })
    worker.unref()
    worker.on('exit', function threadEnded () {
      if (sampler.worker !== worker) return
      sampler.worker = null
      // it ended idle just as a watch came: that watch needs a thread
      if (!sampler.closed && Atomics.load(sampler.shared, WATCHERS) > 0n) sampler.startThread()
    })
    this.worker = worker
  }

  /** Start a new peak from the RSS now. */
  reset () {
    Atomics.store(this.shared, PEAK, BigInt(process.memoryUsage.rss()))
  }

  /** Fold the RSS now into the peak (the main thread's own sample). */
  note () {
    const rss = BigInt(process.memoryUsage.rss())
    for (;;) {
      const peak = Atomics.load(this.shared, PEAK)
      if (rss <= peak || Atomics.compareExchange(this.shared, PEAK, peak, rss) === peak) return
    }
  }

  read () {
    this.note()
    return Number(Atomics.load(this.shared, PEAK))
  }

  async close () {
    if (this.closed) return
    this.closed = true
    Atomics.store(this.shared, STOP, 1n)
    const worker = this.worker
    this.worker = null
    if (worker !== null) await worker.terminate()
  }
}
