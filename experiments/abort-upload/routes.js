/**
 * The abort-upload routes: POST /abort-upload/pipe (the classic req.pipe) and /abort-upload/pipeline answer
 * { route, bytes, file } once the body is on disk; GET /abort-upload shows what is left, DELETE /abort-upload
 * cleans it up. A Content-Length is required: the classic pipe() has no place for a per-chunk quota meter,
 * so the whole body's room is reserved first (the HTTP parser lets no more through).
 */
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import express from 'express'
import { badParameter, requestAborted, uploadTooLarge } from '../../lib/errors/index.js'
import { requestEvents } from '../../lib/util/lab-events.js'
import { closed, normalizeUploadOptions } from '../upload/server.js'
import { createLeftovers, leftoverDir, leftoverName, removeDeadLeftovers } from './leftovers.js'

/** The router; its `close()` closes every descriptor the pipe route holds. */
export function abortUploadRoutes (opts, events, quota) {
  if (quota === undefined) throw new TypeError('abortUploadRoutes needs the app\'s disk quota')
  const dir = leftoverDir(opts.dataDir)
  const limit = normalizeUploadOptions(opts.upload).limit
  const leftovers = createLeftovers(dir)
  const deadRemoved = removeDeadLeftovers(dir).catch(function reportDeadLeft (err) {
    console.warn(`streamlab: could not remove what an earlier lab left in ${dir}: ${err.message}`)
  })

  /** The lab's side of both routes: the checks, the name, the room on disk, the events. */
  async function beginUpload (req, res, route) {
    const length = contentLength(req, limit)
    const file = path.join(dir, leftoverName(randomUUID(), route))
    // together: until the route pipes, what arrives waits in the request, and a client that hangs
    // up meanwhile takes it with it (the file is then left empty)
    const [reserved, made] = await Promise.allSettled([
      quota.reserve(length, { claims: [file] }),
      deadRemoved.then(function makeDir () { return fs.promises.mkdir(dir, { recursive: true }) })
    ])
    if (reserved.status === 'rejected') throw reserved.reason
    const reservation = reserved.value
    if (made.status === 'rejected') {
      reservation.release()
      throw made.reason
    }
    const request = requestEvents(events, `abort-upload/${route}`, req)
    request.start()
    const settle = leftovers.begin(route, file)
    return {
      file,
      length,
      reservation,
      /** The request is over: answered, failed (`err`), or the client is gone and the route has done all it does about it. */
      end: function endUpload (err) {
        settle()
        const answered = err === undefined && res.writableFinished
        if (answered) request.end({ status: res.statusCode })
        else request.end({ status: err?.status ?? 400, errorType: err?.type ?? 'request.aborted' })
      }
    }
  }

  const router = express.Router({ caseSensitive: true, strict: true })

  router.post('/abort-upload/pipe', async function saveWithPipe (req, res, next) {
    const upload = await beginUpload(req, res, 'pipe')
    const out = fs.createWriteStream(upload.file, { flags: 'wx' })
    leftovers.watch(out, upload.file)
    // The classic way, and the lesson: when the client aborts, `req` errors and closes, and
    // nothing ends or destroys `out`. Its descriptor stays open and the half-written file stays.
    req.pipe(out)
    out.on('finish', function answerPiped () {
      upload.reservation.commit(upload.file, out.bytesWritten)
      res.json({ route: 'pipe', bytes: out.bytesWritten, file: path.basename(upload.file) })
    })
    // without a listener a write error would take the whole lab down
    out.on('error', function writeFailed (err) {
      upload.reservation.release()
      if (!res.headersSent) next(err)
    })
    closed(res).then(function pipeOver () {
      // the file stays on disk, whatever was written: it counts against the quota until DELETE /abort-upload
      if (!res.writableFinished) upload.reservation.commit(upload.file, upload.length)
      upload.end()
    })
  })

  router.post('/abort-upload/pipeline', async function saveWithPipeline (req, res) {
    const upload = await beginUpload(req, res, 'pipeline')
    const out = fs.createWriteStream(upload.file, { flags: 'wx' })
    try {
      await pipeline(req, out)
    } catch (err) {
      upload.reservation.release()
      // pipeline() destroyed both streams. On Node 20 it rejects before the descriptor is closed:
      // wait for it, or the rm could come first and leave the descriptor on an unlinked file
      await closed(out)
      if (err.code !== 'EEXIST') await fs.promises.rm(upload.file, { force: true })
      // a client gone before the pipeline began shows as a premature close, not a reset
      const gone = err.code === 'ECONNRESET' || err.code === 'ERR_STREAM_PREMATURE_CLOSE'
      const failure = gone ? requestAborted(out.bytesWritten) : err
      upload.end(failure)
      throw failure
    }
    upload.reservation.commit(upload.file, out.bytesWritten)
    res.json({ route: 'pipeline', bytes: out.bytesWritten, file: path.basename(upload.file) })
    // once the answer is out: until then it is not known to have reached the client
    closed(res).then(function pipelineOver () { upload.end() })
  })

  router.get('/abort-upload', async function showLeftovers (req, res) {
    res.set('Cache-Control', 'no-store').json(await leftovers.inspect())
  })

  router.delete('/abort-upload', async function cleanUpLeftovers (req, res) {
    res.json(await leftovers.cleanUp(quota))
  })

  router.close = leftovers.closeAll
  return router
}

/** @throws {LabError} 400 parameter.invalid naming content-length, 413 entity.too.large */
function contentLength (req, limit) {
  const text = req.headers['content-length']
  const length = Number(text)
  if (text === undefined || !/^\d{1,16}$/.test(text) || !Number.isSafeInteger(length)) {
    throw badParameter('content-length', text, `a Content-Length header (0 to ${limit} bytes): the route reserves the body's room first`)
  }
  if (length > limit) throw uploadTooLarge(limit, length)
  return length
}
