/**
 * What an aborted upload leaves in `<dataDir>/abort-upload/`: descriptors still open on its files, the half-written
 * files and their bytes, and the clean-up. Why descriptors are counted from /proc/self/fd (else from this module's
 * records) and why a record holds a WeakRef to its stream: experiments/README.md#abort-upload.
 */
import fs from 'node:fs'
import { procAvailable } from '../../lib/util/platform.js'
import path from 'node:path'
import { processAlive } from '../../lib/util/process-alive.js'

const DIR_NAME = 'abort-upload'

/** Leaked descriptors held at once, far above what one run leaves; past it the oldest is closed (`evicted`): no EMFILE here. */
const MAX_HELD = 2000

/** `<uuid>.<pid>.<route>`: the process that wrote it, so a successor removes what a dead one left. */
const FILE_NAME = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.(\d+)\.(pipe|pipeline)$/
const PROC_FD = '/proc/self/fd'
/** File names listed in an answer, at most: the counts say how many there are. */
const LISTED = 100

export function leftoverDir (dataDir) {
  return path.join(dataDir, DIR_NAME)
}

/** A new file name for an upload to `route`, written by this process. */
export function leftoverName (id, route) {
  return `${id}.${process.pid}.${route}`
}

/** Descriptors of this process open on files under `dir`, from /proc/self/fd; null where there is none. */
function procFdsUnder (dir) {
  if (!procAvailable()) return null
  let fds
  try {
    fds = fs.readdirSync(PROC_FD)
  } catch {
    return null
  }
  const prefix = path.resolve(dir) + path.sep
  let open = 0
  for (const fd of fds) {
    try {
      // an unlinked file reads "<path> (deleted)": still under the folder, still open
      if (fs.readlinkSync(path.join(PROC_FD, fd)).startsWith(prefix)) open++
    } catch {
      // closed between the listing and the read (the listing's own descriptor is one)
    }
  }
  return open
}

/** Requests of file kinds in flight, as getActiveResourcesInfo() names them. */
function activeFsRequests () {
  return process.getActiveResourcesInfo().filter(function isFs (name) { return name === 'FSReqCallback' || name === 'FileHandle' })
    .length
}

/** The files in `dir` that the routes wrote: { name, route, pid, bytes }. */
async function listLeftoverFiles (dir) {
  let names
  try {
    names = await fs.promises.readdir(dir)
  } catch (err) {
    if (err.code === 'ENOENT') return []
    throw err
  }
  const files = []
  for (const name of names) {
    const match = FILE_NAME.exec(name)
    if (match === null) continue
    try {
      const { size } = await fs.promises.lstat(path.join(dir, name))
      files.push({ name, route: match[2], pid: Number(match[1]), bytes: size })
    } catch (err) {
      // removed meanwhile: not left any more
      if (err.code !== 'ENOENT') throw err
    }
  }
  return files
}

/** Remove the files of processes that are gone: a worker killed with leftovers open cannot, its successor does. */
export async function removeDeadLeftovers (dir) {
  const removed = []
  for (const file of await listLeftoverFiles(dir)) {
    if (processAlive(file.pid)) continue
    await fs.promises.rm(path.join(dir, file.name), { force: true })
    removed.push(file.name)
  }
  return removed
}

/** The records of one app's routes: descriptors the pipe route's streams hold, files of uploads in flight, requests per route. */
export function createLeftovers (dir) {
  /** fd -> { fd, file, dev, ino, stream: WeakRef } for pipe streams not closed */
  const held = new Map()
  /** files of uploads whose request is not over: neither counted as leaks nor removed */
  const inFlight = new Set()
  const requests = { pipe: { started: 0, settled: 0 }, pipeline: { started: 0, settled: 0 } }
  let evicted = 0

  /** Remember the descriptor a stream opens, until the stream closes it (ending the stream is the route's business). */
  function watch (stream, file) {
    stream.once('open', function remember (fd) {
      let stat
      try {
        // now, while the number is surely this file's: the clean-up compares it again
        stat = fs.fstatSync(fd)
      } catch {
        return
      }
      held.set(fd, { fd, file, dev: stat.dev, ino: stat.ino, stream: new WeakRef(stream) })
      stream.once('close', function forgetClosed () { held.delete(fd) })
      if (held.size > MAX_HELD) evictOldest()
    })
  }

  function evictOldest () {
    for (const record of held.values()) {
      if (inFlight.has(record.file)) continue
      held.delete(record.fd)
      evicted++
      closeRecord(record).catch(function reportEvictFailure (err) {
        console.warn(`streamlab: could not close a leaked descriptor of ${record.file}: ${err.message}`)
      })
      return
    }
  }

  /** An upload begins: its file is not a leftover while its request lasts. */
  function begin (route, file) {
    requests[route].started++
    inFlight.add(file)
    let settled = false
    return function settle () {
      if (settled) return
      settled = true
      inFlight.delete(file)
      requests[route].settled++
    }
  }

  /** Records of descriptors left open by uploads that are over. */
  function leaked () {
    return [...held.values()].filter(function over (record) { return !inFlight.has(record.file) })
  }

  /** What is left now. */
  async function inspect () {
    const all = await listLeftoverFiles(dir)
    const files = all.filter(function over (f) { return !inFlight.has(path.join(dir, f.name)) })
    const writing = all.filter(function current (f) { return inFlight.has(path.join(dir, f.name)) })
    const fromProc = procFdsUnder(dir)
    const byRoute = {}
    for (const route of Object.keys(requests)) {
      const mine = files.filter(function ofRoute (f) { return f.route === route })
      byRoute[route] = { files: mine.length, bytes: sum(mine) }
    }
    return {
      fds: fromProc === null
        ? { open: leaked().filter(stillOurs).length, source: 'the pipe route\'s records' }
        : { open: fromProc, source: PROC_FD },
      held: leaked().length,
      // the stream was garbage-collected, its descriptor was not: in the classic code nobody could close it now
      orphaned: leaked().filter(function collected (record) { return record.stream.deref() === undefined }).length,
      evicted,
      files: files.length,
      bytes: sum(files),
      byRoute,
      names: files.slice(0, LISTED).map(function fileName (f) { return f.name }),
      requests: structuredClone(requests),
      inFlight: inFlight.size,
      // the files of uploads in flight, as far as they are written: not leftovers (yet)
      writing: { files: writing.length, bytes: sum(writing) },
      activeFsRequests: activeFsRequests()
    }
  }

  /** Close the descriptors the pipe route left open, then remove (and forget in the quota) the files of uploads that are over. */
  async function cleanUp (quota) {
    let closed = 0
    let notOurs = 0
    for (const record of leaked()) {
      held.delete(record.fd)
      if (await closeRecord(record)) closed++
      else notOurs++
    }
    let removed = 0
    let bytes = 0
    for (const f of await listLeftoverFiles(dir)) {
      const file = path.join(dir, f.name)
      if (inFlight.has(file)) continue
      try {
        await fs.promises.unlink(file)
        removed++
        bytes += f.bytes
      } catch (err) {
        if (err.code !== 'ENOENT') throw err
      }
      quota.forget(file)
    }
    return { closed, notOurs, removed, bytes }
  }

  /** Every descriptor still held, uploads in flight included: for an app that closes. */
  async function closeAll () {
    for (const record of [...held.values()]) {
      held.delete(record.fd)
      await closeRecord(record)
    }
  }

  return Object.freeze({ dir, watch, begin, inspect, cleanUp, closeAll })
}

/**
 * Close one leaked descriptor: through its stream while it lives (it must not close the number again later), else by
 * number once fstat says the number still names its file; false when it names another now (left alone).
 */
async function closeRecord (record) {
  const stream = record.stream.deref()
  if (stream !== undefined) {
    if (stream.closed) return true
    await new Promise(function destroyStream (resolve) {
      stream.once('close', resolve)
      stream.destroy()
    })
    return true
  }
  if (!stillOurs(record)) return false
  try {
    fs.closeSync(record.fd)
  } catch (err) {
    if (err.code !== 'EBADF') throw err
  }
  return true
}

function stillOurs (record) {
  try {
    const stat = fs.fstatSync(record.fd)
    return stat.dev === record.dev && stat.ino === record.ino
  } catch {
    return false
  }
}

function sum (files) {
  return files.reduce(function add (total, f) { return total + f.bytes }, 0)
}
