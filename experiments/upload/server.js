/**
 * Uploads to disk, two ways: buffered (every chunk kept, `Buffer.concat`,
 * one `writeFile` at the end) and streamed (`pipeline` from the request to
 * a file). Files get server-chosen names (`<uuid>.upload`) in
 * `<dataDir>/uploads/`; no byte of the request ever becomes part of a path.
 *
 * Either way, a failed or abandoned upload leaves no file behind: a client
 * that hangs up mid-body, a body over the limit, or a client that is gone
 * before it could learn the file's name (nobody could ever delete it).
 * An upload is written as `<uuid>.<pid>.part` and renamed once complete, so
 * a process killed mid-write (the memory budget does that on purpose) leaves
 * only parts named after a dead process, which the next lab removes.
 *
 * Every byte counts against the app's disk quota (`lib/limits/disk-quota.js`): the
 * Content-Length is reserved before the body is read, and each chunk is
 * covered before it is kept or written. Uploads older than `upload.maxAgeMs`
 * are removed when a lab starts; `deleteUploads` removes them on request.
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

/** Defaults of the `upload` app option. */
export const UPLOAD_DEFAULTS = Object.freeze({
  /** Largest upload either route accepts, in bytes. */
  limit: 256 * MiB,
  /** Uploads older than this are removed when a lab starts, in ms (0: kept however old). */
  maxAgeMs: HOUR_MS
})

/** Where uploads go, under the data directory. */
const UPLOAD_DIR_NAME = 'uploads'

const UPLOAD_NAME = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.upload$/
/** An upload being written, by the process in its name. */
const PART_NAME = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.(\d+)\.part$/

/**
 * Normalise the `upload` app options.
 * @param {{ limit?: number, maxAgeMs?: number }} [options]
 * @returns {Readonly<{ limit: number, maxAgeMs: number }>}
 * @throws {TypeError} for a limit that is not a positive safe integer, or an age that is not one >= 0
 */
export function normalizeUploadOptions (options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('option upload must be an object')
  const limit = options.limit ?? UPLOAD_DEFAULTS.limit
  if (!Number.isSafeInteger(limit) || limit < 1) throw new TypeError(`option upload.limit must be a positive integer of bytes, got ${limit}`)
  const maxAgeMs = options.maxAgeMs ?? UPLOAD_DEFAULTS.maxAgeMs
  if (!Number.isSafeInteger(maxAgeMs) || maxAgeMs < 0) throw new TypeError(`option upload.maxAgeMs must be an integer of ms >= 0, got ${maxAgeMs}`)
  return Object.freeze({ limit, maxAgeMs })
}

/**
 * An upload experiment's params, with `bytes` held to this server's upload limit,
 * its default too: a server started with a smaller limit would answer every upload 413.
 * @param {ReadonlyArray<object>} schema the experiment's, with a `bytes` entry
 * @param {unknown} raw what the client sent
 * @param {object} [options] normalised app options (`upload.limit`)
 * @returns {Record<string, string|number|null>} a new object, as `normalizeBySchema` makes it
 * @throws {LabError} 400 parameter.invalid naming the field
 */
export function normalizeWithinUploadLimit (schema, raw, options) {
  const limit = normalizeUploadOptions(options?.upload).limit
  const p = normalizeBySchema(schema, raw, { max: { bytes: limit } })
  if (p.bytes > limit) throw badParameter('params.bytes', p.bytes, `a byte size up to this server's upload limit, ${limit} bytes`)
  return p
}

/** The uploads directory of a data directory. */
export function uploadDir (dataDir) {
  return path.join(dataDir, UPLOAD_DIR_NAME)
}

/** Whether `name` is one the upload routes could have chosen (and nothing else: no separators, no dots to climb). */
export function isUploadName (name) {
  return typeof name === 'string' && UPLOAD_NAME.test(name)
}

/**
 * Receive one upload into a new file.
 * @param {import('node:http').IncomingMessage} req
 * @param {import('node:http').ServerResponse} res watched so that a file whose name never reached the client is removed
 * @param {{ mode: 'buffer'|'stream', dir: string, limit: number, quota: import('../../lib/limits/disk-quota.js').DiskQuota, idleMs?: number }} settings
 *   `quota`: the app's disk quota; `idleMs`: a body that sends no byte for this long fails with 408 (0: never)
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

/**
 * The article's buffered upload, wasteful on purpose: every chunk is kept
 * until the body ends, copied once more into one Buffer by `Buffer.concat`,
 * and only then written. Memory grows with body size times uploads in flight.
 */
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
 * The whole body in one Buffer. The chunks become garbage when this
 * returns: kept through the (asynchronous) write, they would double what
 * the article's synchronous write held. Each chunk is covered by the disk
 * quota as it is kept: the room is taken before the write, and a body too
 * big for the disk is refused before all of it is held.
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
    // EEXIST: the file is not ours to remove
    if (err.code !== 'EEXIST') await fs.promises.rm(file, { force: true })
    throw asAborted(err, counter.bytes)
  }
  return counter.bytes
}

/**
 * A connection reset that arrives after the last body byte (the body was
 * complete, its 'end' not yet read) is still a client that went away: 400
 * request.aborted, not a 500.
 */
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
  return {
    signal: controller.signal,
    release: function release () { socket.removeListener('close', onClose) }
  }
}

/**
 * Delete uploads by name. Names that the upload routes could not have
 * chosen are refused, not resolved: the caller's list came over the network.
 * @param {string} dataDir
 * @param {string[]} names as the routes answered them (`file`)
 * @returns {Promise<number>} how many were removed
 * @throws {TypeError} for a name that is not an upload's
 */
export async function removeUploads (dataDir, names) {
  for (const name of names) {
    if (!isUploadName(name)) throw new TypeError(`not an upload's name: ${String(name).slice(0, 100)}`)
  }
  const dir = uploadDir(dataDir)
  let removed = 0
  for (const name of names) {
    try {
      await fs.promises.unlink(path.join(dir, name))
      removed++
    } catch (err) {
      if (err.code !== 'ENOENT') throw err
    }
  }
  return removed
}

/**
 * The uploads now in a data directory: files the routes made and nobody removed yet, and
 * parts still being written (or left by a process that died writing them).
 * @returns {Promise<string[]>} names
 */
export async function listUploads (dataDir) {
  try {
    return (await fs.promises.readdir(uploadDir(dataDir))).filter(function isUploadFile (name) {
      return isUploadName(name) || PART_NAME.test(name)
    })
  } catch (err) {
    if (err.code === 'ENOENT') return []
    throw err
  }
}

/**
 * Remove the parts of uploads whose process is gone: a worker killed
 * mid-upload (by the memory budget, on purpose) cannot remove its own.
 * Parts of a live process, this one or another lab's on the same data
 * directory, are left alone.
 * @param {string} dataDir
 * @returns {Promise<string[]>} the names removed
 */
export async function removeDeadParts (dataDir) {
  let names
  try {
    names = await fs.promises.readdir(uploadDir(dataDir))
  } catch (err) {
    if (err.code === 'ENOENT') return []
    throw err
  }
  const removed = []
  for (const name of names) {
    const match = PART_NAME.exec(name)
    if (match === null || processAlive(Number(match[1]))) continue
    await fs.promises.rm(path.join(uploadDir(dataDir), name), { force: true })
    removed.push(name)
  }
  return removed
}

/**
 * Remove the uploads of earlier runs: files the upload routes made more than
 * `maxAgeMs` ago (by their modification time). Parts are left to
 * `removeDeadParts`: one a live process is still writing is not old.
 * @param {string} dataDir
 * @param {number} maxAgeMs 0: remove none
 * @param {number} [now] ms since the epoch
 * @returns {Promise<string[]>} the names removed
 */
export async function removeOldUploads (dataDir, maxAgeMs, now = Date.now()) {
  if (maxAgeMs === 0) return []
  const dir = uploadDir(dataDir)
  const removed = []
  for (const name of (await listUploads(dataDir)).filter(isUploadName)) {
    const file = path.join(dir, name)
    try {
      if (now - (await fs.promises.lstat(file)).mtimeMs <= maxAgeMs) continue
      await fs.promises.unlink(file)
      removed.push(name)
    } catch (err) {
      // removed meanwhile by someone else: what we wanted
      if (err.code !== 'ENOENT') throw err
    }
  }
  return removed
}

/**
 * Delete uploads and give their room back to the disk quota: the named
 * ones, or every finished upload (parts being written are left alone).
 * @param {string} dataDir
 * @param {import('../../lib/limits/disk-quota.js').DiskQuota} quota
 * @param {string[]|null} [names] as the routes answered them; null: all
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
    quota.forget(file)
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

function closed (stream) {
  return new Promise(function waitForClose (resolve) {
    if (stream.closed) resolve()
    else stream.once('close', resolve)
  })
}
