/**
 * The abort-upload run: per route and number of uploads, a client process
 * that aborts every upload mid-body, then the server's leftovers counted
 * (GET /abort-upload) right after and again after a GC and a wait, the
 * memory after a GC, and the clean-up (DELETE /abort-upload).
 *
 * pipeline() runs first: what pipe() leaves (descriptors, kernel buffers)
 * would otherwise be in the process while pipeline() is measured. Every cell
 * starts clean, and so does the run: whatever an earlier run or a curl left
 * in the folder is closed and removed first (its figures are in the result).
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { labCollector } from '../../lib/util/lab-gc.js'
import { runChildJob } from '../../lib/experiments/load.js'
import { runKeyHeaders } from '../../lib/limits/run-keys.js'
import { sweepLevels } from '../../lib/experiments/params.js'
import { abortUploadCharts, abortUploadVerdicts, publishedBeside, summariseCell } from './result.js'

/** The steps of a sweep, up to the number of uploads asked for. */
export const UPLOAD_STEPS = Object.freeze([10, 50, 100, 200, 500])

/** The client process: forked, never imported. */
const CLIENT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'client.js')

/** Aborted uploads per route before the cells: the first hundred or so leave the heap a few MiB up with code and caches, once. */
const WARM_UPLOADS = 50
/** Uploads the client keeps in flight at once. */
const IN_FLIGHT = 100
/**
 * After its last byte has left, each client waits this long before it hangs up, so that the
 * route has begun to read: bytes still waiting in the request when the client goes are lost
 * with it (the route reserves disk room first), and the file is left shorter or empty.
 */
const SETTLE_MS = 100
/** How long the server may take to finish with every aborted upload of a cell. */
const SETTLE_TIMEOUT_MS = 30_000
const POLL_MS = 50
const REQUEST_TIMEOUT_MS = 10_000

/**
 * Run it.
 * @param {{ params: object, signal: AbortSignal, baseUrl: string, progress: Function, measure: Function, trackProcess: Function }} ctx
 */
export async function run (ctx) {
  const { params: p, signal, baseUrl } = ctx
  const routes = p.route === 'both' ? ['pipeline', 'pipe'] : [p.route]
  const levels = sweepLevels(p.sweep, UPLOAD_STEPS, p.uploads)
  const total = routes.length * levels.reduce(function add (sum, n) { return sum + n }, 0)
  const abortAfter = Math.floor(p.bytes * p.abortAt / 100)
  const lab = labClient(baseUrl)
  const collect = labCollector()
  ctx.progress({ done: 0, total, stage: 'clean' })
  const earlier = await lab.cleanUp()
  try {
    // a few aborted uploads per route first: the first ones pay for code, sockets and the fetch client, not the experiment's
    for (const route of routes) {
      ctx.progress({ done: 0, total, stage: 'warm-up', route: `abort-upload/${route}` })
      await abortSome(ctx, lab, { route, uploads: WARM_UPLOADS, abortAfter })
    }
  } finally {
    await lab.cleanUp()
  }
  const cells = []
  let done = 0
  for (const route of routes) {
    for (const uploads of levels) {
      signal.throwIfAborted()
      try {
        cells.push(await runCell(ctx, lab, collect, { route, uploads, abortAfter, done, total }))
      } catch (err) {
        // cancelled or failed mid-cell: what the cell left must not outlive it
        await lab.cleanUp().catch(function cleanUpFailed () {})
        throw err
      }
      done += uploads
    }
  }
  return {
    input: { bytes: p.bytes, abortAtBytes: abortAfter, abortAt: p.abortAt },
    earlierLeftovers: earlier,
    gc: collect !== null,
    cells,
    charts: abortUploadCharts(cells),
    published: publishedBeside(cells),
    verdicts: abortUploadVerdicts(cells)
  }
}

async function runCell (ctx, lab, collect, { route, uploads, abortAfter, done, total }) {
  const { params: p, signal } = ctx
  const where = `abort-upload/${route}`
  const before = await lab.inspect()
  const memoryBefore = memoryAfterGc(collect)
  const endMeasure = ctx.measure()
  const load = await abortSome(ctx, lab, {
    route,
    uploads,
    abortAfter,
    onProgress: function relayProgress (progress) {
      ctx.progress({ done: done + progress.done, total, stage: 'load', route: where, cell: `${progress.done} of ${uploads} uploads aborted` })
    }
  })
  const server = endMeasure()
  const right = await lab.inspect()
  ctx.progress({
    done: done + uploads,
    total,
    stage: 'wait',
    route: where,
    cell: `${right.fds.open - before.fds.open} descriptors open, ${right.files - before.files} files left: a GC, then ${p.waitSeconds} s`
  })
  await sleep(p.waitSeconds * 1000, undefined, { signal })
  // memory after the wait: what the aborts left, not the last ones' error handling still in flight
  const memoryLater = memoryAfterGc(collect)
  const later = await lab.inspect()
  ctx.progress({ done: done + uploads, total, stage: 'clean', route: where, cell: `${later.fds.open - before.fds.open} descriptors still open` })
  const cleaned = await lab.cleanUp()
  const after = await lab.inspect()
  return summariseCell({ route, uploads, results: load.results, before, right, later, cleaned, after, memoryBefore, memoryLater, server })
}

/**
 * `uploads` uploads to `route`, each aborted mid-body by the client process; resolves once
 * the route has done all it does about each of them (the clients are long gone by then).
 */
async function abortSome (ctx, lab, { route, uploads, abortAfter, onProgress }) {
  const { signal } = ctx
  const { requests } = await lab.inspect(signal)
  const load = await runChildJob(CLIENT, {
    url: `${ctx.baseUrl}/abort-upload/${route}`, uploads, bytes: ctx.params.bytes, abortAfter, inFlight: IN_FLIGHT, settleMs: SETTLE_MS
  }, { signal, onSpawn: ctx.trackProcess, onProgress })
  await lab.settled(route, requests[route].settled + uploads, signal)
  return load
}

/** The experiment's own routes on this server, over HTTP as any client would use them. */
function labClient (baseUrl) {
  async function call (method, signal) {
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS)
    // the run's key: beyond loopback, the clean-up (a DELETE) needs it as another machine would need the token
    const res = await fetch(`${baseUrl}/abort-upload`, { method, headers: runKeyHeaders(), signal: signal ? AbortSignal.any([signal, timeout]) : timeout })
    const body = await res.json()
    if (res.status !== 200) throw new Error(`${method} /abort-upload answered ${res.status}: ${JSON.stringify(body.error ?? body)}`)
    return body
  }
  return Object.freeze({
    inspect: function inspect (signal) { return call('GET', signal) },
    /** Never with the run's signal: a cancelled run must still clean up. */
    cleanUp: function cleanUp () { return call('DELETE') },
    /** Wait until `count` uploads of `route` have settled on the server. */
    settled: async function settled (route, count, signal) {
      const deadline = Date.now() + SETTLE_TIMEOUT_MS
      for (;;) {
        const state = await call('GET', signal)
        if (state.requests[route].settled >= count) return state
        if (Date.now() > deadline) {
          throw new Error(`the ${route} route settled ${state.requests[route].settled} of ${count} uploads within ${SETTLE_TIMEOUT_MS / 1000} s`)
        }
        await sleep(POLL_MS, undefined, { signal })
      }
    }
  })
}

/** Heap and RSS after a full collection where one can be had. */
function memoryAfterGc (collect) {
  collect?.()
  const { heapUsed, rss } = process.memoryUsage()
  return { heapUsed, rss }
}
