/**
 * The app factory: tests build it with options and listen on port 0;
 * only `server.js` listens on a real port.
 */
import express from 'express'
import { normalizeOptions } from './options.js'
import { notFound, toLabError } from './errors.js'
import { methodGuard } from './method-guard.js'
import { generateRoute } from '../routes/generate.js'
import { ingestRoutes } from '../routes/ingest.js'
import { metricsRoutes } from '../routes/metrics.js'
import { createSampler } from './sampler.js'
import { experimentRoutes } from '../routes/experiments.js'
import { uploadRoutes } from '../routes/upload.js'
import { chunkSizeRoutes } from '../routes/chunk-size.js'
import { dashboardRoutes } from '../routes/dashboard.js'
import { databaseRoutes } from '../routes/db.js'
import { createDatabase } from './db/database.js'
import { normalizeDatabaseOptions } from './db/options.js'
import { getParsePool, threadHeapMb } from './parse-pool.js'
import { createLabEvents } from './lab-events.js'
import { normalizeUploadOptions, removeDeadParts, removeOldUploads } from './upload.js'
import { createDiskQuota } from './disk-quota.js'
import { discardRestOfBody } from './ingest-common.js'
import { createAdmission } from './admission.js'
import { requestGuard } from './request-guard.js'
import { bodyDeadline } from './body-deadline.js'
import { abortUploadRoutes } from '../experiments/index.js'

/**
 * Build the lab's Express app.
 * @param {object} [options] see `lib/options.js`
 */
export function createApp (options) {
  const opts = normalizeOptions(options)
  const app = express()
  app.disable('x-powered-by')
  app.locals.options = opts
  const events = createLabEvents()
  app.locals.events = events
  // start the parse threads now, so their memory counts as idle, not as the first request's
  getParsePool(opts.parseThreads, threadHeapMb(opts.ingest.parseCost))
  // nothing starts here: the pool (and the embedded PGlite process) on the first /db request.
  // Whoever stops the server calls app.locals.database.close().
  const dbOpts = normalizeDatabaseOptions(opts.database, opts)
  const database = createDatabase(dbOpts)
  app.locals.database = database

  // parts of uploads a killed worker was writing: it could not remove them, its successor does
  app.locals.partsRemoved = removeDeadParts(opts.dataDir).catch(function reportPartsLeft (err) {
    console.warn(`streamlab: could not remove the parts of interrupted uploads: ${err.message}`)
    return []
  })
  // uploads of earlier runs go too; the quota's walk counts what the clean-ups leave
  app.locals.oldUploadsRemoved = removeOldUploads(opts.dataDir, normalizeUploadOptions(opts.upload).maxAgeMs).catch(function reportOldUploadsLeft (err) {
    console.warn(`streamlab: could not remove the uploads of earlier runs: ${err.message}`)
    return []
  })
  const diskQuota = createDiskQuota({ dir: opts.dataDir, quota: opts.diskQuota, after: Promise.all([app.locals.partsRemoved, app.locals.oldUploadsRemoved]) })
  app.locals.diskQuota = diskQuota

  // first of all: only the person at the keyboard drives the lab
  app.use(requestGuard(opts.guard))
  // then: every body, whichever route reads it (or none), is bounded in time
  app.use(bodyDeadline(opts.limits))
  app.use(generateRoute(opts, diskQuota))
  // every route that holds a whole body or result reserves it within the budget first
  const admission = createAdmission({ budget: opts.memoryBudget })
  app.locals.admission = admission
  app.use(ingestRoutes(opts, events, admission))
  // routes the caller brings (the grader's POST /student, grader/lab-child.js): behind the guard and
  // the body deadline like every route, and before the lab's own API, which they may answer first
  if (opts.extraRoutes !== undefined) {
    if (typeof opts.extraRoutes !== 'function') throw new TypeError('option extraRoutes must be an Express router or middleware')
    app.use(opts.extraRoutes)
  }
  // samples only while something subscribes (/metrics clients, experiments)
  const sampler = createSampler()
  app.locals.sampler = sampler
  app.use(metricsRoutes(opts, events, sampler, { admission, diskQuota }))
  app.use(experimentRoutes(opts, events))
  app.use(uploadRoutes(opts, events, diskQuota, admission))
  app.use(abortUploadRoutes(opts, events, diskQuota))
  app.use(chunkSizeRoutes(opts))
  app.use(databaseRoutes(dbOpts, database, admission))
  // last of the routes: the page's static files answer only what the API did not
  app.use(dashboardRoutes())

  app.use(methodGuard(app))
  app.use(function routeNotFound (req, res, next) {
    next(notFound(req.method, req.path))
  })
  app.use(function sendError (err, req, res, next) {
    const labError = toLabError(err)
    if (labError.status === 500) console.error(err)
    if (res.headersSent) {
      res.destroy(err)
      return
    }
    res.status(labError.status).set(labError.headers ?? {}).json(labError.toJSON())
    // a body refused before it was read: read and drop the rest, within bounds, so the answer gets through
    discardRestOfBody(req)
  })
  return app
}
