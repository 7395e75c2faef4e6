/**
 * POST /bad and POST /good: the same question, answered by buffering and by
 * streaming; POST /express-json answers it as most Express apps would, with
 * express.json(), and POST /streamparser-json as a reader of a streaming
 * library's README would. Every request takes the same eight stages
 * (lib/ingest/README.md); each route names its own.
 */
import express from 'express'
import { ingestRoute } from '../lib/ingest/sequence.js'
import { INGEST_STAGES } from '../lib/ingest/stage-names.js'
import { createHeldLedger } from '../lib/metrics/held.js'
import { buffered } from '../lib/ingest/buffered.js'
import { streamed } from '../lib/ingest/streamed.js'
import { expressJsonRoute } from '../lib/ingest/json-middleware.js'
import { streamparser } from '../lib/ingest/streamparser.js'

/**
 * The ingest routes. `ingest`: what the app holds for /good (threads, budgets), how it reads the kernel's peak,
 * the ledger of what each request holds by stage, and the budget the streaming decoders wait for (none: uncounted).
 */
export function ingestRoutes (opts, events, admission, { state, readPeak, held = createHeldLedger(INGEST_STAGES), decoders = null } = {}) {
  const router = express.Router({ caseSensitive: true, strict: true })
  const lab = { opts, events, admission, state, readPeak, held, decoders, inflight: 0 }
  router.post('/bad', ingestRoute(buffered, lab))
  router.post('/good', ingestRoute(streamed, lab))
  // express.json() on this route only, never app-wide: the other routes read their bodies themselves
  router.post('/express-json', ingestRoute(expressJsonRoute(opts), lab))
  // the textbook streaming route: what @streamparser/json's README leads to, with the lab's limits
  router.post('/streamparser-json', ingestRoute(streamparser, lab))
  return router
}
