/**
 * GET /generate: the seeded test document, gzipped as it is made and streamed with
 * backpressure, or (`?save=1`) written atomically into the data directory.
 * The mechanics live in `generators/items.js` and `lib/atomic-file.js`.
 */
import { performance } from 'node:perf_hooks'
import { pipeline } from 'node:stream/promises'
import express from 'express'
import {
  SAVE_FILE_NAMES,
  createGzipStream,
  downloadFileName,
  normalizeGenerateParams
} from '../generators/items.js'
import { displayPath, writeAtomically } from '../lib/atomic-file.js'

/**
 * The generator route.
 * @param {ReturnType<typeof import('../lib/options.js').normalizeOptions>} opts normalised app options
 * @returns {import('express').Router}
 */
export function generateRoute (opts) {
  const router = express.Router()

  router.get('/generate', function generate (req, res, next) {
    let params
    try {
      params = normalizeGenerateParams(req.query, opts.generate)
    } catch (err) {
      next(err)
      return
    }
    if (params.save) return saveDocument(params, opts.dataDir, res, next)
    return streamDocument(params, req, res, next)
  })

  return router
}

async function streamDocument (params, req, res, next) {
  res.set({
    'Content-Type': 'application/gzip',
    'Content-Disposition': `attachment; filename="${downloadFileName(params)}"`,
    'Cache-Control': 'no-store'
  })
  if (req.method === 'HEAD') {
    res.end()
    return
  }
  const { json, gzip } = createGzipStream(params)
  try {
    await pipeline(json, gzip, res)
  } catch (err) {
    // The client hung up: pipeline has already destroyed the generator, so work stops here.
    if (err.code === 'ERR_STREAM_PREMATURE_CLOSE') return
    next(err)
  }
}

async function saveDocument (params, dataDir, res, next) {
  const file = SAVE_FILE_NAMES[params.format]
  const { json, gzip } = createGzipStream(params)
  // A client that hangs up cancels the save: nothing is written for nobody.
  const hangUp = new AbortController()
  function abortOnHangUp () {
    if (!res.writableFinished) hangUp.abort()
  }
  res.once('close', abortOnHangUp)
  const started = performance.now()
  try {
    const written = await writeAtomically(dataDir, file, [json, gzip], { signal: hangUp.signal })
    res.set('Cache-Control', 'no-store').json({
      path: displayPath(written.path),
      file,
      format: params.format,
      seed: params.seed,
      level: params.level,
      items: json.items,
      inflatedBytes: json.bytes,
      compressedBytes: written.bytes,
      ms: Math.round(performance.now() - started)
    })
  } catch (err) {
    if (hangUp.signal.aborted) return
    next(err)
  } finally {
    res.off('close', abortOnHangUp)
  }
}
