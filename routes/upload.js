/**
 * POST /upload-buffer and POST /upload-stream: the same upload saved to
 * disk by buffering it whole and by streaming it. The mechanics live in
 * lib/upload.js; here a request meets them.
 *
 * Both answer { route, bytes, ms, file }: `file` is the server-chosen name
 * in <dataDir>/uploads/, for whoever ran the upload to delete.
 */
import express from 'express'
import { performance } from 'node:perf_hooks'
import { msSince, nextRequestId } from '../lib/lab-events.js'
import { normalizeUploadOptions, receiveUpload, uploadDir } from '../lib/upload.js'

/**
 * @param {object} opts normalised app options (`dataDir`, `limits.bodyIdleMs`, and `upload: { limit }`)
 * @param {import('node:events').EventEmitter} events the lab's event bus
 * @returns {import('express').Router}
 */
export function uploadRoutes (opts, events) {
  const settings = normalizeUploadOptions(opts.upload)
  const common = { dir: uploadDir(opts.dataDir), limit: settings.limit, idleMs: opts.limits.bodyIdleMs }
  const router = express.Router()
  router.post('/upload-buffer', answerWith('upload-buffer', { ...common, mode: 'buffer' }, events))
  router.post('/upload-stream', answerWith('upload-stream', { ...common, mode: 'stream' }, events))
  return router
}

function answerWith (route, settings, events) {
  return async function answerUpload (req, res) {
    const started = performance.now()
    const id = nextRequestId()
    events.emit('request', { phase: 'start', id, route, time: Date.now() })
    let saved
    try {
      saved = await receiveUpload(req, res, settings)
    } catch (err) {
      events.emit('request', {
        phase: 'end', id, route, time: Date.now(), status: err.status ?? 500, errorType: err.type ?? 'internal', ms: msSince(started)
      })
      throw err
    }
    const ms = msSince(started)
    events.emit('request', { phase: 'end', id, route, time: Date.now(), status: 200, ms })
    res.json({ route, bytes: saved.bytes, ms, file: saved.file })
  }
}
