/**
 * /runs: the records of finished runs, as the experiment engine kept them in
 * <dataDir>/runs/ (lib/runs/, docs/runs.md), then the lessons' runs, read-only, from
 * docs/figures/<name>.run.json as `lesson-<name>` (lib/runs/lessons.js). Reading only:
 * records are written by the engine and the bench, and removed past the last `runs.keep`.
 *
 *   GET /runs      { runs: [{ id, experiment, title, status, source, startedAt, date, node, platform, routes, bytes }], keep }
 *                  newest first, then the lessons' (`lesson: true`); a file that is no record this lab
 *                  reads is listed as { id, bytes, invalid }
 *   GET /runs/:id  the record, checked (422 run.invalid names the field at fault; 404 run.not.found); a
 *                  prefix that begins one id alone (the short id a page shows) serves that record, several: 409
 */
import express from 'express'
import { createLessonRuns } from '../lib/runs/lessons.js'

/** The /runs routes over the app's runs folder, and the lessons' runs (specs may point elsewhere). */
export function runRoutes (store, lessons = createLessonRuns()) {
  const router = express.Router({ caseSensitive: true, strict: true })

  router.get('/runs', async function listRuns (req, res) {
    const [runs, lessonRuns] = await Promise.all([store.list(), lessons.list()])
    res.set('Cache-Control', 'no-store').json({ runs: [...runs, ...lessonRuns], keep: store.keep })
  })

  router.get('/runs/:id', async function getRun (req, res) {
    const id = req.params.id
    const record = lessons.has(id) ? await lessons.read(id) : await store.read(id)
    // the record is data: sent as JSON, never as a page, and never sniffed as one
    res.set('Cache-Control', 'no-store').set('X-Content-Type-Options', 'nosniff').json(record)
  })

  return router
}
