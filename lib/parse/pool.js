/**
 * The parse pool: a few parse threads per app shared by every /good request, and the budget of
 * batch bytes out at them across all requests, so memory stays flat however many upload (a request
 * that finds it spent waits, and backpressure reaches its socket). lib/ingest/state.js makes both.
 * Besides jobs the pool carries a setting every thread gets (`configure`) and a question each
 * answers between jobs (`askEach`): the threads' allocation sampling speaks through them.
 */
import { Worker } from 'node:worker_threads'
import { waitInQueue, leaveQueue } from '../util/semaphore.js'

const THREAD = new URL('./parse-thread.js', import.meta.url)

// A batch's records die once tallied: a small young generation collects them sooner, where V8's default
// would let each thread's grow into most of /good's memory (docs/ingest.md, "Memory flat with the body
// and the uploads").
const PARSE_THREAD_YOUNG_MB = 2
// A backstop to the projection (parse-cost.js): a thread that still runs out ends with
// ERR_WORKER_OUT_OF_MEMORY, its batch is refused and a new thread takes its place. Four times the cost
// allowed: the projection's margin, and the garbage of earlier batches.
const PARSE_THREAD_OLD_MIN_MB = 48

/** The heap limit of a parse thread for a given `ingest.parseCost`, in MiB. */
export function threadHeapMb (parseCost) {
  return Math.max(PARSE_THREAD_OLD_MIN_MB, Math.ceil(4 * parseCost / (1024 * 1024)))
}

const SPARE_BYTES = 1024 * 1024 // most bytes of batch buffers kept for reuse, per pool
const SPARE_LEAST = 16 * 1024 // up to this a batch gets a buffer of its own: freed on the main thread, cheap
const SPARE_STEP = 16 * 1024

/**
 * Batch buffers the parse threads hand back, for the next batches of any request: a buffer freed on
 * another thread costs the main thread a fresh allocation per batch; reused, next to nothing. Each has
 * a quarter more room than its batch, so the next, about as large, fit it.
 */
export class SpareBuffers {
  constructor (most = SPARE_BYTES) {
    this.most = most
    this.buffers = []
    this.bytes = 0
    const spares = this
    this.take = function takeSpare (length) {
      if (length <= SPARE_LEAST) return new Uint8Array(length)
      const buffer = spares.buffers.pop()
      if (buffer !== undefined) {
        spares.bytes -= buffer.byteLength
        if (buffer.byteLength >= length && buffer.byteLength <= 2 * length) return new Uint8Array(buffer, 0, length)
      }
      return new Uint8Array(new ArrayBuffer(Math.ceil(1.25 * length / SPARE_STEP) * SPARE_STEP), 0, length)
    }
  }

  give (buffer) {
    if (buffer.byteLength <= SPARE_LEAST || this.bytes + buffer.byteLength > this.most) return
    this.buffers.push(buffer)
    this.bytes += buffer.byteLength
  }
}

// blocks kept for reuse, per pool: a request alone's (the one it fills and three out at the threads),
// or as many bytes of the smaller blocks of requests streaming together
const SPARE_BLOCKS = 4

/**
 * The blocks /good's sinks fill with inflated bytes (record-sink.js), handed back by the threads that
 * parsed them: reused, a block costs nothing to allocate or collect. A block's size is its request's
 * share of the budget, which shrinks as more stream: a spare up to twice the size asked serves.
 */
export class SpareBlocks {
  constructor (blockBytes = 0) {
    this.most = blockBytes > 0 ? SPARE_BLOCKS * (blockBytes + 2) : 0
    this.buffers = []
    this.bytes = 0
  }

  /** An ArrayBuffer of at least `bytes`: a spare one, or a new one. */
  take (bytes) {
    const buffer = this.buffers.pop()
    if (buffer === undefined) return new ArrayBuffer(bytes)
    this.bytes -= buffer.byteLength
    return buffer.byteLength >= bytes && buffer.byteLength <= 2 * bytes ? buffer : new ArrayBuffer(bytes)
  }

  give (buffer) {
    if (buffer.byteLength === 0 || this.bytes + buffer.byteLength > this.most) return
    this.buffers.push(buffer)
    this.bytes += buffer.byteLength
  }
}

/** A fixed set of parse threads and one FIFO queue; a task whose request is gone leaves the queue. */
class ParsePool {
  constructor (size, heapMb, blockBytes) {
    this.size = size
    this.heapMb = heapMb
    this.queue = []
    this.idle = []
    this.threads = new Set()
    this.nextId = 1
    this.closed = false
    this.spares = new SpareBuffers()
    this.blocks = new SpareBlocks(blockBytes)
    this.setting = null // the message every thread gets when it starts (`configure`)
    this.asked = new Map() // id -> { worker, resolve }: questions not yet answered
    for (let k = 1; k <= size; k++) this.spawn(k)
  }

  /** Start a thread; `number` names it ('parse thread 2'), and the thread that replaces it. */
  spawn (number) {
    const pool = this
    // which of a message's batches the thread is parsing (lib/parse/parse-thread.js)
    const progress = new Int32Array(new SharedArrayBuffer(4))
    const worker = new Worker(THREAD, {
      workerData: { progress: progress.buffer },
      resourceLimits: { maxYoungGenerationSizeMb: PARSE_THREAD_YOUNG_MB, maxOldGenerationSizeMb: this.heapMb }
    })
    worker.current = null
    worker.number = number
    worker.questions = 0 // asked of it: they keep the process alive until answered, as a task does
    worker.on('message', function onAnswer (answer) {
      if (answer.asked !== undefined) {
        pool.answerQuestion(answer)
        return
      }
      const job = worker.current
      worker.current = null
      for (const buffer of answer.buffers ?? []) pool.spares.give(buffer)
      for (const buffer of answer.blocks ?? []) pool.blocks.give(buffer)
      if (job) {
        if (answer.error) job.reject(new Error(`parse thread failed: ${answer.error.message}`))
        else job.resolve(answer.result)
      }
      pool.release(worker)
    })
    function onDeath (reason) {
      pool.threads.delete(worker)
      const job = worker.current
      worker.current = null
      if (job) {
        const error = reason instanceof Error ? reason : new Error(`parse thread exited (${reason})`)
        // for a list of tasks: the one the thread was on
        if (Array.isArray(job.task)) error.taskIndex = Atomics.load(progress, 0)
        job.reject(error)
      }
      const at = pool.idle.indexOf(worker)
      if (at !== -1) pool.idle.splice(at, 1)
      pool.forgetQuestions(worker)
      if (!pool.closed) pool.spawn(number)
    }
    worker.on('error', onDeath)
    worker.on('exit', function onExit (code) { if (pool.threads.has(worker)) onDeath(code) })
    // after the listeners, which ref the port again: an idle thread must not keep the process alive
    worker.unref()
    this.threads.add(worker)
    if (this.setting !== null) worker.postMessage(this.setting)
    this.release(worker)
  }

  /** Send `message` to every thread now, and to each thread started later first of all. */
  configure (message) {
    if (this.closed) return
    this.setting = message
    for (const worker of this.threads) worker.postMessage(message)
  }

  /** Ask every thread `message`, answered `{ asked: id, answer }` between its jobs; a thread that dies answers null. */
  askEach (message) {
    const pool = this
    return Promise.all([...this.threads].map(function ask (worker) {
      return new Promise(function waitForAnswer (resolve) {
        const id = pool.nextId++
        pool.asked.set(id, { worker, resolve })
        worker.questions++
        worker.ref()
        worker.postMessage({ ...message, ask: id })
      })
    }))
  }

  answerQuestion ({ asked: id, answer }) {
    const asked = this.asked.get(id)
    if (asked === undefined) return
    this.asked.delete(id)
    this.questionAnswered(asked.worker)
    asked.resolve({ number: asked.worker.number, answer })
  }

  /** A thread that is gone (null: every thread) answers nothing: its askers get null from it. */
  forgetQuestions (worker) {
    for (const [id, asked] of this.asked) {
      if (worker !== null && asked.worker !== worker) continue
      this.asked.delete(id)
      this.questionAnswered(asked.worker)
      asked.resolve(null)
    }
  }

  questionAnswered (worker) {
    worker.questions--
    if (worker.questions === 0 && worker.current === null) worker.unref()
  }

  get queued () {
    return this.queue.length
  }

  release (worker) {
    const job = this.queue.shift()
    if (job) this.dispatch(worker, job)
    else {
      if (worker.questions === 0) worker.unref()
      this.idle.push(worker)
    }
  }

  dispatch (worker, job) {
    leaveQueue(job)
    worker.ref() // a batch in the works keeps the process alive until its answer
    worker.current = job
    worker.postMessage({ id: job.id, task: job.task }, job.transferList)
  }

  /**
   * Parse one batch, or a list of them (answered with a list; a thread that dies on one rejects with
   * its `taskIndex`), on the next free thread. An aborted `signal` drops a job still queued; one on a
   * thread runs to its end, bounded by the batch's projected cost.
   */
  run (task, { transferList = [], signal } = {}) {
    if (this.closed) return Promise.reject(new Error('parse pool closed'))
    if (signal?.aborted) return Promise.reject(signal.reason)
    const pool = this
    return new Promise(function queueJob (resolve, reject) {
      const job = { id: pool.nextId++, task, transferList, resolve, reject }
      const worker = pool.idle.pop()
      if (worker) pool.dispatch(worker, job)
      else waitInQueue(pool.queue, job, signal, reject)
    })
  }

  async destroy () {
    this.closed = true
    this.setting = null
    this.forgetQuestions(null)
    for (const job of this.queue.splice(0)) {
      leaveQueue(job)
      job.reject(new Error('parse pool closed'))
    }
    await Promise.all([...this.threads].map(function stop (worker) { return worker.terminate() }))
    this.threads.clear()
  }
}

/**
 * A pool of parse threads, started now (their memory counts as idle, not as the first request's);
 * `blockBytes`: the app's `ingest.blockBytes`, which sizes the spare blocks it keeps (none without it).
 */
export function createParsePool (threads, heapMb = PARSE_THREAD_OLD_MIN_MB, blockBytes = 0) {
  return new ParsePool(threads, heapMb, blockBytes)
}

/** Counting semaphore on bytes: acquire before sending a batch, release when its answer is back. */
export class ByteBudget {
  constructor (capacity) {
    this.capacity = capacity
    this.used = 0
    this.waiting = []
  }

  /** Resolves once `bytes` fit (one oversized request goes alone); null when they fit at once. */
  acquire (bytes, signal) {
    if (this.used === 0 || this.used + bytes <= this.capacity) {
      this.used += bytes
      return null
    }
    if (signal?.aborted) return Promise.reject(signal.reason)
    const budget = this
    return new Promise(function waitForBudget (resolve, reject) {
      waitInQueue(budget.waiting, { bytes, resolve }, signal, reject)
    })
  }

  release (bytes) {
    this.used -= bytes
    while (this.waiting.length > 0) {
      const next = this.waiting[0]
      if (this.used !== 0 && this.used + next.bytes > this.capacity) break
      this.waiting.shift()
      leaveQueue(next)
      this.used += next.bytes
      next.resolve()
    }
  }
}
