/**
 * POST /bad and POST /good: the same question, answered by buffering and by
 * streaming. The mechanics live in lib/; here a request meets its ingest.
 */
import express from 'express'
import { performance } from 'node:perf_hooks'
import { ingestBuffered } from '../lib/buffered-ingest.js'
import { ingestStreamed } from '../lib/streamed-ingest.js'
import { watchRequestPeak } from '../lib/peak.js'

/**
 * @param {object} opts normalised app options
 */
export function ingestRoutes (opts) {
  const router = express.Router()
  router.post('/bad', answerWith('bad', ingestBuffered, opts))
  router.post('/good', answerWith('good', ingestStreamed, opts))
  return router
}

function answerWith (route, ingest, opts) {
  return async function answerIngest (req, res) {
    const started = performance.now()
    const endPeak = watchRequestPeak(opts.resetPeakPerRequest)
    let summary
    try {
      summary = await ingest(req, opts)
    } finally {
      res.locals.memory = endPeak()
    }
    res.json({
      route,
      summary,
      ms: Math.round((performance.now() - started) * 10) / 10,
      memory: res.locals.memory
    })
  }
}
