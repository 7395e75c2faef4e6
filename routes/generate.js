// GET /generate: the seeded test document, gzipped and streamed as it is made, or (`?save=1`) written atomically
// into the data directory within the disk quota; or (`?kind=bomb`) a zip bomb, streamed as made, or (br, zstd)
// made once into the bomb cache. HEAD makes and writes nothing. The mechanics: lib/generate/.
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { pipeline } from 'node:stream/promises'
import express from 'express'
import {
  SAVE_FILE_NAMES,
  createGzipStream,
  downloadFileName,
  normalizeGenerateParams
} from '../lib/generate/items.js'
import { createBomb, prepareBomb } from '../lib/generate/bombs.js'
import { displayPath, writeAtomically } from '../lib/util/atomic-file.js'
import { badParameter, saveBusy } from '../lib/errors/index.js'
import { writes } from '../lib/limits/request-guard.js'

const KINDS = Object.freeze(['items', 'bomb'])
/** Seconds a second save is told to wait (Retry-After). */
const SAVE_RETRY_AFTER_S = 1
/** What a save writes at least, reserved before its first byte: an item is over 400 bytes; gzip shrinks it under 8 times. */
const MIN_ITEM_BYTES = 400
const MAX_GZIP_RATIO = 8

/** The generator route; saves count against the app's disk `quota`. */
export function generateRoute (opts, quota) {
  if (quota === undefined) throw new TypeError('generateRoute needs the app\'s disk quota')
  const router = express.Router({ caseSensitive: true, strict: true })
  // one save at a time, per app: concurrent saves would each write their own temp file of up to 8 GiB
  let saving = false
  const bombs = bombMaker(path.join(opts.dataDir, 'bombs'))

  // a save, and a br or zstd bomb made into the cache, write to disk: the guard's write rules apply
  // to them (lib/limits/request-guard.js).
  // Express 5 sends what an async handler throws (or rejects with) to the error handler
  router.get('/generate', writes(writesToDisk), async function generate (req, res) {
    const kind = req.query.kind ?? 'items'
    if (!KINDS.includes(kind)) throw badParameter('kind', kind, `one of ${KINDS.join(', ')}`)
    if (kind === 'bomb') return streamBomb(req, res, bombs)
    const params = normalizeGenerateParams(req.query, opts.generate)
    if (!params.save) return streamDocument(params, req, res)
    // HEAD has no side effects: it checks the parameters and answers the headers of a save, writing nothing
    if (req.method === 'HEAD') return res.set({ 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' }).end()
    if (saving) throw saveBusy(SAVE_RETRY_AFTER_S)
    saving = true
    try {
      await saveDocument(params, opts.dataDir, quota, res)
    } finally {
      saving = false
    }
  })

  return router
}

/**
 * Whether a request may write, for the guard: a save (any `save` but an explicit no, so a value the route would
 * refuse counts), or a bomb of a codec made into the cache (any but gzip and deflate, for the same reason).
 */
function writesToDisk (req) {
  const save = req.query.save
  if (save !== undefined && save !== '0' && save !== 'false') return true
  return req.query.kind === 'bomb' && req.query.codec !== undefined && req.query.codec !== 'gzip' && req.query.codec !== 'deflate'
}

/** The app's bomb cache: requests for a br or zstd bomb being made wait for that making, not a second. */
function bombMaker (cacheDir) {
  const making = new Map()
  return {
    /** The bomb as it is now: from the cache if made, else the one-off streams (for HEAD, which makes nothing). */
    now: function bombNow (query) { return createBomb(query, { cacheDir }) },
    /** The bomb ready to send: made into the cache first if it must be. */
    ready: async function bombReady (query) {
      const bomb = createBomb(query, { cacheDir })
      if (!bomb.unmade) return bomb
      for (const stream of bomb.streams) stream.destroy()
      const key = bomb.fileName
      let made = making.get(key)
      if (made === undefined) {
        made = prepareBomb(bomb.params, { cacheDir }).finally(function forget () { making.delete(key) })
        making.set(key, made)
      }
      await made
      return createBomb(bomb.params, { cacheDir })
    }
  }
}

/** The document, made as it is sent. */
async function streamDocument (params, req, res) {
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
    if (err.code !== 'ERR_STREAM_PREMATURE_CLOSE') throw err
  }
}

/**
 * A zip bomb, made as sent (gzip, deflate) or once into the cache (br, zstd). The answer names the headers to
 * upload it with (`X-Upload-Content-*`) and what it inflates to; its Content-Type is the codec's file type,
 * never a `Content-Encoding`, or the client would inflate it.
 */
async function streamBomb (req, res, bombs) {
  const bomb = req.method === 'HEAD' ? bombs.now(req.query) : await bombs.ready(req.query)
  res.set({
    'Content-Type': bomb.mediaType,
    'Content-Disposition': `attachment; filename="${bomb.fileName}"`,
    'Cache-Control': 'no-store',
    'X-Bomb-Variant': bomb.params.variant,
    'X-Bomb-Codec': bomb.params.codec,
    'X-Bomb-Inflated-Bytes': String(bomb.inflatedBytes),
    'X-Bomb-Layers': String(bomb.layers),
    'X-Upload-Content-Type': bomb.uploadHeaders['content-type']
  })
  if (bomb.uploadHeaders['content-encoding']) res.set('X-Upload-Content-Encoding', bomb.uploadHeaders['content-encoding'])
  if (bomb.compressedBytes !== null) res.set('Content-Length', String(bomb.compressedBytes))
  if (req.method === 'HEAD') {
    for (const stream of bomb.streams) stream.destroy()
    res.end()
    return
  }
  try {
    await pipeline(...bomb.streams, res)
  } catch (err) {
    // the client hung up: pipeline has already stopped the bomb
    if (err.code !== 'ERR_STREAM_PREMATURE_CLOSE') throw err
  }
}

/** The least a save of these parameters writes, in bytes: level 0 stores, so never less than the JSON. */
function projectedSaveBytes ({ size, bytes, level }) {
  const inflated = bytes ?? size * MIN_ITEM_BYTES
  return level === 0 ? inflated : Math.floor(inflated / MAX_GZIP_RATIO)
}

/** The document written atomically into the data directory, within the disk quota; the answer says where. */
async function saveDocument (params, dataDir, quota, res) {
  const file = SAVE_FILE_NAMES[params.format]
  // A client that hangs up cancels the save: nothing is written for nobody.
  const hangUp = new AbortController()
  function abortOnHangUp () {
    if (!res.writableFinished) hangUp.abort()
  }
  res.once('close', abortOnHangUp)
  const started = performance.now()
  let reservation = null
  try {
    // writeAtomically's temp file is `.<name>.<pid>.<random>.tmp`: the reservation counts it, a walk must not
    const claims = [path.join(dataDir, `.${file}.${process.pid}.`)]
    reservation = await quota.reserve(projectedSaveBytes(params), { claims })
    const { json, gzip } = createGzipStream(params)
    // the meter covers each gzip chunk before the file gets it: past the quota the save stops, its temp file removed
    const written = await writeAtomically(dataDir, file, [json, gzip, reservation.meter()], { signal: hangUp.signal })
    // the file it replaced, if any, stops counting: the quota knows one file per path
    reservation.commit(written.path, written.bytes)
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
    // nobody to tell: the save was cancelled and cleaned up
    if (!hangUp.signal.aborted) throw err
  } finally {
    reservation?.release()
    res.off('close', abortOnHangUp)
  }
}
