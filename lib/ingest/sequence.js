/**
 * One ingest request, top to bottom, for all four ingest routes: the eight stages tabled in
 * lib/ingest/README.md. A route is a plain object naming its stages (IngestRoute); this runs them.
 */
import { overloaded } from '../errors/index.js'
import { watchRequestPeak } from '../metrics/peak.js'
import { msSince, requestEvents } from '../util/lab-events.js'

/**
 * @typedef {object} IngestRoute
 * @property {string} name the route's path without its slash, as events and answers name it
 * @property {readonly string[]} formats the JSON formats it reads
 * @property {Function} negotiate stage 1: `(req, limits, route)` to the plan (`{ codecs, format }`)
 * @property {Function} admit stage 2: `(req, plan, route, lab, holding)`: a place, `ingest` run in it, given back
 * @property {Function} ingest stages 3 to 7: `(req, plan, place, lab)` to a Found; `place.holding` (held.js)
 *   is where each stage says what it holds
 */
/** @typedef {{ format: string, tally: object, inflatedBytes: number, compressedBytes: number, sha256: string }} Found */

/** Stages 1 to 8 for one request: what the route answers (`lab.state`: what /good holds, state.js). */
async function ingest (req, route, lab, holding) {
  const plan = route.negotiate(req, lab.opts.limits, route)
  // a place for the request, stages 3 to 7 (route.ingest) run in it, and the place given back
  const found = await route.admit(req, plan, route, lab, holding)
  return makeSummary(found)
}

/**
 * The Express handler of an ingest route: `ingest` within the bound on requests in flight, announced
 * on the event bus at its start and end, with the process's peak memory over the request in the
 * answer. `lab.held` is the ledger samples read (lib/metrics/held.js).
 */
export function ingestRoute (route, lab) {
  return async function answerIngest (req, res) {
    if (lab.inflight >= lab.opts.limits.inflight) throw overloaded(lab.opts.limits.inflight, 1)
    lab.inflight++
    res.once('close', function leave () { lab.inflight-- })
    const request = requestEvents(lab.events, route.name, req)
    const contentLength = Number(req.headers['content-length'])
    request.start({ compressedBytes: Number.isFinite(contentLength) ? contentLength : null })
    const endPeak = watchRequestPeak(lab.opts.resetPeakPerRequest, lab.readPeak)
    const holding = lab.held.open(request.id, route.name)
    let summary
    try {
      summary = await ingest(req, route, lab, holding)
    } catch (err) {
      holding.close()
      res.locals.memory = endPeak()
      request.failed(err, heldAtPeak(holding))
      throw err
    }
    holding.close()
    res.locals.memory = endPeak()
    const ms = msSince(request.started)
    request.end({
      status: 200,
      compressedBytes: summary.compressedBytes,
      inflatedBytes: summary.inflatedBytes,
      items: summary.items,
      ms,
      peakRss: res.locals.memory.peakRss,
      peakSource: res.locals.memory.peakSource,
      ...heldAtPeak(holding)
    })
    res.json({ route: route.name, summary, ms, memory: res.locals.memory })
  }
}

/** What the request's stages held when their sum was highest, for its end event. */
function heldAtPeak (holding) {
  return { held: holding.peak.held, heldPeak: holding.peak.total, bounds: holding.bounds }
}

/** Stage 8: the answer every route gives, in one fixed key order. */
function makeSummary ({ format, tally, inflatedBytes, compressedBytes, sha256 }) {
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
