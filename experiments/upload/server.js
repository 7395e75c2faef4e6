/**
 * Uploads to disk, buffered (every chunk kept, `Buffer.concat`, one `writeFile`) and streamed
 * (`pipeline` to a file), under server-chosen names in `<dataDir>/uploads/`. A failed or abandoned
 * upload leaves no file; a process killed mid-write leaves only `<uuid>.<pid>.part` files that the
 * next lab removes. Every byte counts against the disk quota. Design: experiments/README.md#upload.
 */
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { Transform, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { badParameter, requestAborted, uploadTooLarge } from '../../lib/errors/index.js'
import { normalizeBySchema } from '../../lib/experiments/params.js'
import { requestBody } from '../../lib/ingest/read.js'
import { processAlive } from '../../lib/util/process-alive.js'
import { MiB } from '../../lib/util/units.js'

const HOUR_MS = 60 * 60 * 1000

/** Defaults of the `upload` app option: the largest upload in bytes; the age in ms past which a lab's start removes one (0: never). */
export const UPLOAD_DEFAULTS = Object.freeze({ limit: 256 * MiB, maxAgeMs: HOUR_MS })

const UPLOAD_DIR_NAME = 'uploads'
const UPLOAD_NAME = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.upload$/
/** An upload being written, by the process in its name. */
const PART_NAME = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.(\d+)\.part$/

/** @throws {TypeError} for a limit that is not a positive safe integer, or an age that is not one >= 0 */
export function normalizeUploadOptions (options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('option upload must be an object')
  const limit = options.limit ?? UPLOAD_DEFAULTS.limit
  if (!Number.isSafeInteger(limit) || limit < 1) throw new TypeError(`option upload.limit: a positive integer of bytes, got ${limit}`)
  const maxAgeMs = options.maxAgeMs ?? UPLOAD_DEFAULTS.maxAgeMs
  if (!Number.isSafeInteger(maxAgeMs) || maxAgeMs < 0) throw new TypeError(`option upload.maxAgeMs: an integer of ms >= 0, got ${maxAgeMs}`)
  return Object.freeze({ limit, maxAgeMs })
}

/**
 * An upload experiment's params, with `bytes` (and its default) held to this server's upload limit:
 * a server started with a smaller limit would answer every upload 413.
 */
export function normalizeWithinUploadLimit (schema, raw, options) {
  const limit = normalizeUploadOptions(options?.upload).limit
  const p = normalizeBySchema(schema, raw, { max: { bytes: limit } })
  if (p.bytes > limit) throw badParameter('params.bytes', p.bytes, `a byte size up to this server's upload limit, ${limit} bytes`)
  return p
}

export function uploadDir (dataDir) {
  return path.join(dataDir, UPLOAD_DIR_NAME)
}

/** Whether `name` is one the upload routes could have chosen (and nothing else: no separators, no dots to climb). */
export function isUploadName (name) {
  return typeof name === 'string' && UPLOAD_NAME.test(name)
}

/**
 * Receive one upload into a new file; `res` is watched so that a file whose name never reached the client is removed.
 * @returns {Promise<{ file: string, bytes: number }>} the file's name (not its path) and size
 * @throws {LabError} 413 entity.too.large, 507 disk.quota.exceeded, 400 request.aborted, 408 request.timeout
 */
export async function receiveUpload (req, res, { mode, dir, limit, quota, idleMs = 0 }) {
  const length = Number(req.headers['content-length'])
  if (Number.isFinite(length) && length > limit) throw uploadTooLarge(limit, length)
  // listen to the body before the first await: a client that hangs up meanwhile must still be noticed
  const source = requestBody(req, { idleMs })
  const id = randomUUID()
  const name = `${id}.upload`
  const file = path.join(dir, name)
  const part = path.join(dir, `${id}.${process.pid}.part`)
  let reservation
  try {
    // the whole body's room before its first byte: refused now, nothing is written
    reservation = await quota.reserve(Number.isFinite(length) ? length : 0, { claims: [part] })
    await fs.promises.mkdir(dir, { recursive: true })
  } catch (err) {
    reservation?.release()
    source.destroy()
    throw err
  }
  let saved = false
  res.once('close', function removeUnclaimed () {
    // the answer never went out: the client cannot know the name, so nobody would delete the file
    if (saved && !res.writableFinished) removeQuietly(file, quota)
  })
  try {
    const bytes = mode === 'buffer'
      ? await saveBuffered(req, source, part, limit, reservation)
      : await saveStreamed(source, part, limit, reservation)
    try {
      await fs.promises.rename(part, file)
    } catch (err) {
      await fs.promises.rm(part, { force: true })
      throw err
    }
    reservation.commit(file, bytes)
    saved = true
    if (res.destroyed) {
      // gone while the file was written: 'close' came before `saved` was set
      await fs.promises.rm(file, { force: true })
      quota.forget(file)
      throw requestAborted(bytes)
    }
    return { file: name, bytes }
  } finally {
    // a failed upload left nothing on disk: its room is free again (a no-op once committed)
    reservation.release()
  }
}

/** The article's buffered upload, wasteful on purpose: memory grows with body size times uploads in flight. */
async function saveBuffered (req, source, file, limit, reservation) {
  const body = await readWholeBody(source, limit, reservation)
  const gone = abortWhenClosed(req)
  try {
    // `wx`: the name is new; never write over a file someone else made
    await fs.promises.writeFile(file, body, { flag: 'wx', signal: gone.signal })
  } catch (err) {
    // EEXIST: the file is not ours to remove
    if (err.code !== 'EEXIST') await fs.promises.rm(file, { force: true })
    throw gone.signal.aborted ? requestAborted(body.length) : err
  } finally {
    gone.release()
  }
  return body.length
}

/**
 * The whole body in one Buffer; the chunks become garbage on return (kept through the asynchronous
 * write, they would double what the article's synchronous write held). The quota covers each chunk as it is kept.
 */
async function readWholeBody (source, limit, reservation) {
  const chunks = []
  let received = 0
  const collect = new Writable({
    write: function keepChunk (chunk, encoding, callback) {
      chunks.push(chunk)
      received += chunk.length
      callback()
    }
  })
  try {
    await pipeline(source, limitCounter(limit), reservation.meter(), collect)
  } catch (err) {
    throw asAborted(err, received)
  }
  return Buffer.concat(chunks, received)
}

/** The streamed upload: a chunk at a time from the socket to the file, with backpressure both ways. */
async function saveStreamed (source, file, limit, reservation) {
  const counter = limitCounter(limit)
  const out = fs.createWriteStream(file, { flags: 'wx' })
  try {
    // the meter covers a chunk before it reaches the file: the one that would pass the quota is never written
    await pipeline(source, counter, reservation.meter(), out)
  } catch (err) {
    // wait for the descriptor to close, or a late open could recreate the file after rm
    out.destroy()
    await closed(out)
    if (err.code !== 'EEXIST') await fs.promises.rm(file, { force: true })
    throw asAborted(err, counter.bytes)
  }
  return counter.bytes
}

/** A reset after the last body byte (its 'end' not yet read) is still a client that went away: 400, not 500. */
function asAborted (err, received) {
  return err?.code === 'ECONNRESET' ? requestAborted(received) : err
}

/** Counts bytes and fails the pipeline on the chunk that passes the limit, before it is kept or written. */
function limitCounter (limit) {
  const counter = new Transform({
    transform: function countChunk (chunk, encoding, callback) {
      counter.bytes += chunk.length
      if (counter.bytes > limit) callback(uploadTooLarge(limit, counter.bytes))
      else callback(null, chunk)
    }
  })
  counter.bytes = 0
  return counter
}

/** An AbortController that aborts when the client hangs up; `release()` removes the listener. */
function abortWhenClosed (req) {
  const controller = new AbortController()
  function onClose () {
    controller.abort(requestAborted(0))
  }
  const socket = req.socket
  if (socket.destroyed) controller.abort(requestAborted(0))
  else socket.once('close', onClose)
  return { signal: controller.signal, release: function release () { socket.removeListener('close', onClose) } }
}

/** Delete uploads by name (as the routes answered them); how many were removed. */
export async function removeUploads (dataDir, names) {
  return (await deleteUploads(dataDir, null, names)).removed.length
}

/** The names in the uploads directory, none when it does not exist yet. */
async function readUploadDir (dataDir) {
  try {
    return await fs.promises.readdir(uploadDir(dataDir))
  } catch (err) {
    if (err.code === 'ENOENT') return []
    throw err
  }
}

/** Files the routes made and nobody removed yet, and parts being written (or left by a process that died writing them). */
export async function listUploads (dataDir) {
  return (await readUploadDir(dataDir)).filter(function isUploadFile (name) {
    return isUploadName(name) || PART_NAME.test(name)
  })
}

/**
 * Remove the parts of uploads whose process is gone (a worker the memory budget killed mid-upload
 * cannot remove its own). Parts of a live process, this lab's or another's, are left alone.
 * @returns {Promise<string[]>} the names removed
 */
export async function removeDeadParts (dataDir) {
  const removed = []
  for (const name of await readUploadDir(dataDir)) {
    const match = PART_NAME.exec(name)
    if (match === null || processAlive(Number(match[1]))) continue
    await fs.promises.rm(path.join(uploadDir(dataDir), name), { force: true })
    removed.push(name)
  }
  return removed
}

/**
 * Remove finished uploads modified more than `maxAgeMs` ago (0: none). Parts are left to
 * `removeDeadParts`: one a live process is still writing is not old.
 * @returns {Promise<string[]>} the names removed
 */
export async function removeOldUploads (dataDir, maxAgeMs, now = Date.now()) {
  if (maxAgeMs === 0) return []
  const old = []
  for (const name of (await listUploads(dataDir)).filter(isUploadName)) {
    const stat = await fs.promises.lstat(path.join(uploadDir(dataDir), name)).catch(function removedMeanwhile (err) {
      if (err.code === 'ENOENT') return null
      throw err
    })
    if (stat !== null && now - stat.mtimeMs > maxAgeMs) old.push(name)
  }
  return (await deleteUploads(dataDir, null, old)).removed
}

/**
 * Delete the named uploads, or every finished one (null), and give their room back to the quota (when one is given).
 * Names the routes could not have chosen are refused, not resolved: the list came over the network.
 * @returns {Promise<{ removed: string[], bytes: number }>} the names removed and their bytes
 * @throws {TypeError} for a name that is not an upload's
 */
export async function deleteUploads (dataDir, quota, names = null) {
  const chosen = names ?? (await listUploads(dataDir)).filter(isUploadName)
  for (const name of chosen) {
    if (!isUploadName(name)) throw new TypeError(`not an upload's name: ${String(name).slice(0, 100)}`)
  }
  const dir = uploadDir(dataDir)
  const removed = []
  let bytes = 0
  for (const name of chosen) {
    const file = path.join(dir, name)
    try {
      const { size } = await fs.promises.lstat(file)
      await fs.promises.unlink(file)
      bytes += size
      removed.push(name)
    } catch (err) {
      if (err.code !== 'ENOENT') throw err
    }
    // gone either way: if someone else removed it, the quota must stop counting it too
    quota?.forget(file)
  }
  return { removed, bytes }
}

function removeQuietly (file, quota) {
  fs.promises.rm(file, { force: true }).then(function forgetRemoved () {
    quota.forget(file)
  }, function reportRemoveFailure (err) {
    console.error(`could not remove unclaimed upload ${file}: ${err.message}`)
  })
}

/** A stream's (or a response's) 'close', or now if it has closed already. */
export function closed (stream) {
  return new Promise(function waitForClose (resolve) {
    if (stream.closed) resolve()
    else stream.once('close', resolve)
  })
}
