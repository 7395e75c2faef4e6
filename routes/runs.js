/**
 * /runs: the records of finished runs, as the experiment engine kept them in
 * <dataDir>/runs/ (lib/runs/, docs/runs.md). Reading only: records are written by the
 * engine and the bench, and removed past the last `runs.keep`.
 *
 *   GET /runs      { runs: [{ id, experiment, title, status, source, startedAt, date, node, platform, routes, bytes }], keep }
 *                  newest first; a file that is no record this lab reads is listed as { id, bytes, invalid }
 *   GET /runs/:id  the record, checked (422 run.invalid names the field at fault; 404 run.not.found)
 */
import express from 'express'

/**
 * @param {ReturnType<typeof import('../lib/runs/store.js').createRunStore>} store the app's runs folder
 * @returns {import('express').Router}
 */
export function runRoutes (store) {
  const router = express.Router({ caseSensitive: true, strict: true })

  router.get('/runs', async function listRuns (req, res) {
    res.set('Cache-Control', 'no-store').json({ runs: await store.list(), keep: store.keep })
  })

  router.get('/runs/:id', async function getRun (req, res) {
    const record = await store.read(req.params.id)
    // the record is data: sent as JSON, never as a page, and never sniffed as one
    res.set('Cache-Control', 'no-store').set('X-Content-Type-Options', 'nosniff').json(record)
  })

  return router
}
