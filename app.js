// The app factory, above the layers it mounts: routes/ and the experiments (through experiments/index.js) over
// lib/. Whoever creates an app calls app.close(); nothing it holds lives at module level. README: lib/http/README.md.
import express from 'express'
import { normalizeOptions } from './lib/config/options.js'
import { notFound, serverClosing } from './lib/errors/index.js'
import { sendError } from './lib/http/send-error.js'
import { methodGuard } from './lib/limits/method-guard.js'
import { createSampler } from './lib/metrics/sampler.js'
import { createHeldLedger } from './lib/metrics/held.js'
import { createSiteSampling } from './lib/metrics/alloc-sites.js'
import { normalizeHubOptions } from './lib/metrics/hub-options.js'
import { INGEST_STAGES } from './lib/ingest/stage-names.js'
import { createDatabase } from './lib/db/database.js'
import { normalizeDatabaseOptions } from './lib/db/options.js'
import { createIngestState } from './lib/ingest/state.js'
import { DecoderBudget } from './lib/ingest/decoder-memory.js'
import { createPeakReader, watchPeak } from './lib/metrics/peak.js'
import { createLabEvents } from './lib/util/lab-events.js'
import { createDiskQuota } from './lib/limits/disk-quota.js'
import { createAdmission } from './lib/limits/admission.js'
import { requestGuard } from './lib/limits/request-guard.js'
import { createRunKeys } from './lib/limits/run-keys.js'
import { bodyDeadline } from './lib/limits/body-deadline.js'
import { generateRoute } from './routes/generate.js'
import { ingestRoutes } from './routes/ingest.js'
import { metricsRoutes } from './routes/metrics.js'
import { experimentRoutes } from './routes/experiments.js'
import { runRoutes } from './routes/runs.js'
import { dashboardRoutes } from './routes/dashboard.js'
import { databaseRoutes } from './routes/db.js'
import {
  abortUploadRoutes, backpressureRoutes, chunkSizeRoutes, normalizeUploadOptions, removeDeadParts, removeOldUploads, uploadRoutes
} from './experiments/index.js'

/** Seconds a request that reached a closing app is told to wait (the supervisor's next worker answers it). */
const CLOSING_RETRY_AFTER_SECONDS = 1

/** The lab's Express app (options: lib/config/options.js); its `close()` stops what it started, twice safely. */
export function createApp (options) {
  const opts = normalizeOptions(options)
  const app = express()
  app.disable('x-powered-by')
  // a path is served as its route spells it, or not at all: `/GENERATE` and `/generate/` are not
  // `/generate`. Express 5 reads these when it makes the app's router, at the first app.use();
  // every router a route file makes says the same (test/route-guard.test.js checks them all)
  app.set('case sensitive routing', true)
  app.set('strict routing', true)
  app.locals.options = opts
  const events = createLabEvents()
  app.locals.events = events
  /** What close() stops, last started first. */
  const closers = []
  const closing = { promise: null }
  try {
    wireApp(app, opts, closers, closing)
  } catch (err) {
    // a part refused its options after others started: stop those, as close() would
    closeAll(closers).catch(function ignoreCloseFailure () {})
    throw err
  }

  /** Stop everything the app started, last started first (not the server: its creator's); safe to call twice. */
  app.close = function closeApp () {
    if (closing.promise === null) closing.promise = closeAll(closers)
    return closing.promise
  }
  return app
}

/** Run the closers one after another, newest first; one that fails does not keep the rest running. */
async function closeAll (closers) {
  const failures = []
  for (const close of closers.toReversed()) {
    try {
      await close()
    } catch (err) {
      failures.push(err)
    }
  }
  if (failures.length === 1) throw failures[0]
  if (failures.length > 1) throw new AggregateError(failures, 'the app did not close cleanly')
}

/** Start the app's parts and mount its routes; each part that must be stopped leaves its closer in `closers`. */
function wireApp (app, opts, closers, closing) {
  const events = app.locals.events
  // the parse threads start now, so their memory counts as idle, not as the first request's
  const ingest = createIngestState(opts)
  app.locals.ingest = ingest
  closers.push(function closeIngest () { return ingest.close() })
  // /proc/self/status kept open for the ingest routes' peak at the end of each request
  const peakReader = createPeakReader()
  closers.push(function closePeakReader () { peakReader.close() })
  // nothing starts here: the pool (and the embedded PGlite process) on the first /db request
  const dbOpts = normalizeDatabaseOptions(opts.database, opts)
  const database = createDatabase(dbOpts)
  app.locals.database = database
  closers.push(function closeDatabase () { return database.close() })

  // parts of uploads a killed worker was writing: it could not remove them, its successor does
  app.locals.partsRemoved = removeDeadParts(opts.dataDir).catch(function reportPartsLeft (err) {
    console.warn(`streamlab: could not remove the parts of interrupted uploads: ${err.message}`)
    return []
  })
  // uploads of earlier runs go too; the quota's walk counts what the clean-ups leave
  const maxAgeMs = normalizeUploadOptions(opts.upload).maxAgeMs
  app.locals.oldUploadsRemoved = removeOldUploads(opts.dataDir, maxAgeMs).catch(function reportOldUploadsLeft (err) {
    console.warn(`streamlab: could not remove the uploads of earlier runs: ${err.message}`)
    return []
  })
  const cleanUps = Promise.all([app.locals.partsRemoved, app.locals.oldUploadsRemoved])
  const diskQuota = createDiskQuota({ dir: opts.dataDir, quota: opts.diskQuota, after: cleanUps })
  app.locals.diskQuota = diskQuota
  // the clean-ups' file operations, and the quota's first walk after them, end before close() resolves
  closers.push(function waitForStartUpWalks () { return diskQuota.ready })

  // a closing app takes nothing new: its threads and database are going
  app.use(function refuseWhenClosing (req, res, next) {
    if (closing.promise !== null) next(serverClosing(CLOSING_RETRY_AFTER_SECONDS))
    else next()
  })
  // first of all: only the person at the keyboard drives the lab, and the experiments' own load,
  // which holds a key its run was issued (lib/limits/run-keys.js)
  const runKeys = createRunKeys()
  app.locals.runKeys = runKeys
  app.use(requestGuard(opts.guard, runKeys))
  app.use(samplePeakWhileServing)
  // then: every body, whichever route reads it (or none), is bounded in time
  app.use(bodyDeadline(opts.limits))
  app.use(generateRoute(opts, diskQuota))
  // every route that holds a whole body or result reserves it within the budget first
  const admission = createAdmission({ budget: opts.memoryBudget })
  app.locals.admission = admission
  closers.push(function closeAdmission () { admission.close() })
  // what each ingest request holds, by stage: the routes write it, the sampler reads it into each sample
  const held = createHeldLedger(INGEST_STAGES)
  // the streaming routes' decoders (their windows) wait for room in one budget, counted in the memory budget too
  const decoders = new DecoderBudget(opts.ingest.decoderBudget, admission.enabled ? admission : null, opts.ingest.queueMs)
  app.locals.decoders = decoders
  app.use(ingestRoutes(opts, events, admission, { state: ingest, readPeak: peakReader.read, held, decoders }))
  // routes the caller brings (the grader's POST /student, grader/lab/lab-child.js): behind the guard and
  // the body deadline like every route, and before the lab's own API, which they may answer first
  if (opts.extraRoutes !== undefined) {
    if (typeof opts.extraRoutes !== 'function') throw new TypeError('option extraRoutes must be an Express router or middleware')
    app.use(opts.extraRoutes)
  }
  // allocation sites of the main thread and the parse threads, sampled only while the sampler samples and they are wanted
  const mode = normalizeHubOptions(opts.metrics).allocationSampling
  const allocationSites = createSiteSampling({ mode, events, pool: ingest.pool, held })
  app.locals.allocationSites = allocationSites
  closers.push(function closeAllocationSites () { allocationSites.close() })
  // samples only while something subscribes (/metrics clients, experiments)
  const sampler = createSampler({ held, allocationSites })
  app.locals.sampler = sampler
  closers.push(function closeSampler () { sampler.close() })
  const metrics = metricsRoutes(opts, events, sampler, { admission, diskQuota, decoders, allocationSites })
  closers.push(function closeMetrics () { metrics.close() })
  app.use(metrics)
  // each run's record goes to <dataDir>/runs/, within the disk quota; GET /runs serves them
  const experiments = experimentRoutes(opts, events, { runKeys, sampler, diskQuota, allocationSites })
  closers.push(function closeExperiments () { return experiments.close() })
  app.locals.runRecorder = experiments.recorder
  app.use(experiments)
  app.use(runRoutes(experiments.recorder.store))
  app.use(uploadRoutes(opts, events, diskQuota, admission))
  app.use(abortUploadRoutes(opts, events, diskQuota))
  app.use(backpressureRoutes(opts, events, admission))
  app.use(chunkSizeRoutes(opts))
  app.use(databaseRoutes(dbOpts, database, admission))
  // last of the routes: the page's static files answer only what the API did not
  app.use(dashboardRoutes())

  app.use(methodGuard(app))
  app.use(function routeNotFound (req, res, next) {
    next(notFound(req.method, req.path))
  })
  app.use(sendError)
}

/** Where the peak is sampled (no /proc, portable mode), any request in flight keeps the sampler sampling. */
function samplePeakWhileServing (req, res, next) {
  const stopWatching = watchPeak()
  res.once('close', stopWatching)
  next()
}
