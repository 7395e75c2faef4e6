/**
 * POST /bad and POST /good: the same question, answered by buffering and by
 * streaming; POST /express-json answers it as most Express apps would, with
 * express.json(). The mechanics live in lib/; here a request meets its ingest.
 */
import express from 'express'
import { performance } from 'node:perf_hooks'
import { ingestBuffered } from '../lib/ingest/buffered.js'
import { ingestStreamed } from '../lib/ingest/streamed.js'
import { createExpressJsonIngest } from '../lib/ingest/json-middleware.js'
import { ingestWithStreamparser } from '../lib/ingest/streamparser.js'
import { watchRequestPeak } from '../lib/metrics/peak.js'
import { msSince, nextRequestId } from '../lib/util/lab-events.js'
import { overloaded } from '../lib/errors/index.js'

/**
 * @param {object} opts normalised app options
 * @param {import('node:events').EventEmitter} events the lab's event bus
 * @param {import('../lib/limits/admission.js').MemoryAdmission} [admission] the app's memory admission
 * @param {{ state: import('../lib/ingest/state.js').IngestState, readPeak?: () => { bytes: number } }} ingest
 *   what the app holds for /good (its threads and budgets), and how it reads the kernel's peak
 */
export function ingestRoutes (opts, events, admission, { state, readPeak } = {}) {
  const router = express.Router({ caseSensitive: true, strict: true })
  const load = { inflight: 0, admission, state, readPeak }
  router.post('/bad', answerWith('bad', ingestBuffered, opts, events, load))
  router.post('/good', answerWith('good', ingestStreamed, opts, events, load))
  // express.json() on this route only, never app-wide: the other routes read their bodies themselves
  router.post('/express-json', answerWith('express-json', createExpressJsonIngest(opts), opts, events, load))
  // the textbook streaming route: what @streamparser/json's README leads to, with the lab's limits
  router.post('/streamparser-json', answerWith('streamparser-json', ingestWithStreamparser, opts, events, load))
  return router
}

function answerWith (route, ingest, opts, events, load) {
  return async function answerIngest (req, res) {
    if (load.inflight >= opts.limits.inflight) throw overloaded(opts.limits.inflight, 1)
    load.inflight++
    res.once('close', function leave () { load.inflight-- })
    const started = performance.now()
    const id = nextRequestId()
    const contentLength = Number(req.headers['content-length'])
    events.emit('request', {
      phase: 'start',
      id,
      route,
      time: Date.now(),
      compressedBytes: Number.isFinite(contentLength) ? contentLength : null
    })
    const endPeak = watchRequestPeak(opts.resetPeakPerRequest, load.readPeak)
    let summary
    try {
      summary = await ingest(req, opts, { admission: load.admission, state: load.state })
    } catch (err) {
      res.locals.memory = endPeak()
      events.emit('request', {
        phase: 'end',
        id,
        route,
        time: Date.now(),
        status: err.status ?? 500,
        errorType: err.type ?? 'internal',
        ms: msSince(started)
      })
      throw err
    }
    res.locals.memory = endPeak()
    const ms = msSince(started)
    events.emit('request', {
      phase: 'end',
      id,
      route,
      time: Date.now(),
      status: 200,
      compressedBytes: summary.compressedBytes,
      inflatedBytes: summary.inflatedBytes,
      items: summary.items,
      ms,
      peakRss: res.locals.memory.peakRss,
      peakSource: res.locals.memory.peakSource
    })
    res.json({
      route,
      summary,
      ms,
      memory: res.locals.memory
    })
  }
}
