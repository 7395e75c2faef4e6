/**
 * POST /upload-buffer and /upload-stream (the mechanics are server.js's) answer { route, bytes, ms, file }; `file` is
 * for DELETE /uploads/:file (or DELETE /uploads, all), which answer { removed, files, bytes, disk }.
 */
import express from 'express'
import { badParameter, uploadNotFound } from '../../lib/errors/index.js'
import { msSince, requestEvents } from '../../lib/util/lab-events.js'
import { deleteUploads, isUploadName, normalizeUploadOptions, receiveUpload, uploadDir } from './server.js'

/** Names listed in a delete's answer, at most: the count says how many went. */
const LISTED_NAMES = 1000

export function uploadRoutes (opts, events, quota, admission) {
  if (quota === undefined) throw new TypeError('uploadRoutes needs the app\'s disk quota')
  const settings = normalizeUploadOptions(opts.upload)
  const common = { dir: uploadDir(opts.dataDir), limit: settings.limit, idleMs: opts.limits.bodyIdleMs, quota }
  const router = express.Router({ caseSensitive: true, strict: true })
  router.post('/upload-buffer', answerWith('upload-buffer', { ...common, mode: 'buffer' }, events, admission))
  router.post('/upload-stream', answerWith('upload-stream', { ...common, mode: 'stream' }, events, null))
  router.delete('/uploads', async function deleteAllUploads (req, res) {
    res.json(deleted(await deleteUploads(opts.dataDir, quota), quota))
  })
  router.delete('/uploads/:file', async function deleteOneUpload (req, res) {
    const { file } = req.params
    // a name the routes could not have chosen is refused, never resolved: it came over the network
    if (!isUploadName(file)) throw badParameter('file', file, 'an upload\'s name as the upload routes answer it: <uuid>.upload')
    const result = await deleteUploads(opts.dataDir, quota, [file])
    if (result.removed.length === 0) throw uploadNotFound(file)
    res.json(deleted(result, quota))
  })
  return router
}

function deleted ({ removed, bytes }, quota) {
  const { used, quota: limit } = quota.snapshot()
  return { removed: removed.length, files: removed.slice(0, LISTED_NAMES), bytes, disk: { used, quota: limit } }
}

/** A buffered upload's peak: its chunks and their Buffer.concat, twice the body (Content-Length, or the limit when chunked). */
function bufferedCost (req, limit) {
  const length = Number(req.headers['content-length'])
  return 2 * (Number.isSafeInteger(length) && length >= 0 && length <= limit ? length : limit)
}

function answerWith (route, settings, events, admission) {
  return async function answerUpload (req, res) {
    const request = requestEvents(events, route, req)
    // reserved before a byte is read: refused (413 or 503) while the body still waits in the socket
    const what = 'this upload, buffered whole,'
    const reservation = admission?.enabled ? admission.reserve(bufferedCost(req, settings.limit), { route, what }) : null
    request.start()
    let saved
    try {
      saved = await receiveUpload(req, res, settings)
    } catch (err) {
      request.failed(err)
      throw err
    } finally {
      reservation?.release()
    }
    const ms = msSince(request.started)
    request.end({ status: 200, ms })
    res.json({ route, bytes: saved.bytes, ms, file: saved.file })
  }
}
