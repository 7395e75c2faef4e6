/**
 * One ingest request, top to bottom. All four ingest routes (POST /bad,
 * /good, /express-json, /streamparser-json) take the same eight stages:
 *
 *   1. negotiate  the headers and query only: 415, 400, 413 before a byte is read (negotiate.js)
 *   2. admit      a place: the memory budget, or one of /good's pipelines (admit.js)
 *   3. read       the body, whole or streamed (read.js), its bytes counted (count.js)
 *   4. inflate    whole or streamed, each gzip layer framed one way (gzip-framing.js)
 *   5. find records  where the format says they are (lib/json/)
 *   6. parse      JSON.parse, a library, or parse threads (lib/parse/)
 *   7. tally      the figures that prove every record was read (lib/parse/tally.js)
 *   8. answer     the summary every route gives, in one key order (makeSummary, below)
 *
 * Stages 3 to 7 are where the routes differ, and that difference is the
 * lesson, so each route's file holds them in order, one function:
 * `ingestBuffered` (buffered.js: whole, then whole, then one JSON.parse),
 * `ingestStreamed` (streamed.js: a pipeline, records found on the main
 * thread, parsed on threads), `ingestExpressJson` (json-middleware.js:
 * express.json does 3 to 6) and `ingestWithStreamparser` (streamparser.js:
 * a pipeline into a streaming library). A route is a plain object naming its
 * stages; this file runs them and answers.
 */
import { performance } from 'node:perf_hooks'
import { overloaded } from '../errors/index.js'
import { watchRequestPeak } from '../metrics/peak.js'
import { msSince, nextRequestId } from '../util/lab-events.js'

/**
 * @typedef {object} IngestRoute
 * @property {string} name the route's path without its slash, as events and answers name it
 * @property {readonly string[]} formats the JSON formats it reads
 * @property {(req: object, limits: object, route: IngestRoute) => { layers?: number, format: string|null }} negotiate stage 1
 * @property {(req: object, plan: object, route: IngestRoute, lab: object) => Promise<{ reservation: object|null, leave: () => void }>} admit stage 2
 * @property {(req: object, plan: object, place: object, lab: object) => Promise<{ format: string, tally: object,
 *   inflatedBytes: number, compressedBytes: number, sha256: string }>} ingest stages 3 to 7
 */

/**
 * Stages 1 to 8 for one request: what the route answers.
 * @param {import('express').Request} req
 * @param {IngestRoute} route
 * @param {{ opts: object, admission?: object, state?: object }} lab normalised app options, the
 *   app's memory admission, and what /good holds across requests (lib/ingest/state.js)
 * @returns {Promise<object>} the summary
 */
export async function ingest (req, route, lab) {
  const plan = route.negotiate(req, lab.opts.limits, route)
  const place = await route.admit(req, plan, route, lab)
  try {
    return makeSummary(await route.ingest(req, plan, place, lab))
  } finally {
    place.leave()
  }
}

/**
 * The Express handler of an ingest route: `ingest`, inside the lab's bound
 * on requests in flight, announced on the event bus at its start and end,
 * with the process's peak memory over the request in the answer.
 * @param {IngestRoute} route
 * @param {{ opts: object, events: import('node:events').EventEmitter, admission?: object, state?: object,
 *   readPeak?: () => { bytes: number }, inflight: number }} lab shared by the app's ingest routes
 */
export function ingestRoute (route, lab) {
  return async function answerIngest (req, res) {
    if (lab.inflight >= lab.opts.limits.inflight) throw overloaded(lab.opts.limits.inflight, 1)
    lab.inflight++
    res.once('close', function leave () { lab.inflight-- })
    const started = performance.now()
    const id = nextRequestId()
    const contentLength = Number(req.headers['content-length'])
    lab.events.emit('request', {
      phase: 'start',
      id,
      route: route.name,
      time: Date.now(),
      compressedBytes: Number.isFinite(contentLength) ? contentLength : null
    })
    const endPeak = watchRequestPeak(lab.opts.resetPeakPerRequest, lab.readPeak)
    let summary
    try {
      summary = await ingest(req, route, lab)
    } catch (err) {
      res.locals.memory = endPeak()
      lab.events.emit('request', {
        phase: 'end',
        id,
        route: route.name,
        time: Date.now(),
        status: err.status ?? 500,
        errorType: err.type ?? 'internal',
        ms: msSince(started)
      })
      throw err
    }
    res.locals.memory = endPeak()
    const ms = msSince(started)
    lab.events.emit('request', {
      phase: 'end',
      id,
      route: route.name,
      time: Date.now(),
      status: 200,
      compressedBytes: summary.compressedBytes,
      inflatedBytes: summary.inflatedBytes,
      items: summary.items,
      ms,
      peakRss: res.locals.memory.peakRss,
      peakSource: res.locals.memory.peakSource
    })
    res.json({ route: route.name, summary, ms, memory: res.locals.memory })
  }
}

/** Stage 8: the answer every route gives, in one fixed key order. */
export function makeSummary ({ format, tally, inflatedBytes, compressedBytes, sha256 }) {
  return {
    format,
    items: tally.items,
    idSum: tally.idSum,
    numbers: tally.numbers,
    numbersChecksum: tally.numbersChecksum,
    inflatedBytes,
    compressedBytes,
    sha256
  }
}
