/**
 * The abort-upload run: per route and count, a client process aborts every upload mid-body; the leftovers are
 * counted right after and after a GC and a wait, then cleaned up. pipeline() runs first, or what pipe() leaves
 * would sit in the process while it is measured; the run and every cell start clean.
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

const CLIENT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'client.js')

/** Aborted uploads per route before the cells: the first ones leave the heap up with code and caches, once. */
const WARM_UPLOADS = 50
/** Uploads the client keeps in flight at once. */
const IN_FLIGHT = 100
/** A client waits this long after its last byte before it hangs up, so that the route has begun to read what it sent. */
const SETTLE_MS = 100
/** How long the server may take to finish with every aborted upload of a cell. */
const SETTLE_TIMEOUT_MS = 30_000
const POLL_MS = 50
const REQUEST_TIMEOUT_MS = 10_000

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
      const cell = `${progress.done} of ${uploads} uploads aborted`
      ctx.progress({ done: done + progress.done, total, stage: 'load', route: where, cell })
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
  const stillOpen = `${later.fds.open - before.fds.open} descriptors still open`
  ctx.progress({ done: done + uploads, total, stage: 'clean', route: where, cell: stillOpen })
  const cleaned = await lab.cleanUp()
  const after = await lab.inspect()
  return summariseCell({ route, uploads, results: load.results, before, right, later, cleaned, after, memoryBefore, memoryLater, server })
}

/** `uploads` uploads to `route`, each aborted mid-body by the client; resolves once the route has done all it does about each. */
async function abortSome (ctx, lab, { route, uploads, abortAfter, onProgress }) {
  const { signal } = ctx
  const { requests } = await lab.inspect(signal)
  const url = `${ctx.baseUrl}/abort-upload/${route}`
  const job = { url, uploads, bytes: ctx.params.bytes, abortAfter, inFlight: IN_FLIGHT, settleMs: SETTLE_MS }
  const load = await runChildJob(CLIENT, job, { signal, onSpawn: ctx.trackProcess, onProgress })
  await lab.settled(route, requests[route].settled + uploads, signal)
  return load
}

/** The experiment's own routes on this server, over HTTP as any client would use them. */
function labClient (baseUrl) {
  async function call (method, signal) {
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS)
    // the run's key: beyond loopback, the clean-up (a DELETE) needs it as another machine would need the token
    const either = signal ? AbortSignal.any([signal, timeout]) : timeout
    const res = await fetch(`${baseUrl}/abort-upload`, { method, headers: runKeyHeaders(), signal: either })
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
          throw new Error(`/${route} settled ${state.requests[route].settled} of ${count} uploads in ${SETTLE_TIMEOUT_MS / 1000} s`)
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
