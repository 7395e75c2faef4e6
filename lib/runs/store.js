/**
 * The runs folder, `<dataDir>/runs/`: one `<id>.json` per run, written atomically (lib/util/atomic-file.js) within the disk
 * quota, the last `keep` kept. Files come and go behind the store's back (another lab process, the bench CLI, a person), so it
 * reads the folder each time it lists or prunes, and keeps only a cache of each file's summary by its size and modification time.
 */
import fs from 'node:fs'
import path from 'node:path'
import { Readable } from 'node:stream'
import { runIdAmbiguous, runInvalid, runNotFound } from '../errors/index.js'
import { writeAtomically } from '../util/atomic-file.js'
import { RECORD_MAX_BYTES, RUN_ID, oversize, readRunRecord } from './format.js'

export function runsDir (dataDir) {
  return path.join(dataDir, 'runs')
}

/** A temporary file of a write that died with its process is removed once this old. */
const STALE_TEMP_MS = 60 * 60 * 1000

/** The id a file name gives, or null for a file that is no record's (a temp file, a stranger). */
function idOf (name) {
  if (!name.endsWith('.json')) return null
  const id = name.slice(0, -'.json'.length)
  return RUN_ID.test(id) ? id : null
}

/** The names in a folder; none when there is no folder yet. */
export async function namesIn (folder) {
  try {
    return await fs.promises.readdir(folder)
  } catch (err) {
    if (err.code === 'ENOENT') return []
    throw err
  }
}

/**
 * Read a record's text as the file of `id`: a record whose own id is another is refused, so a run is served under its file's name
 * alone, never under a second id the file claims (422 run.invalid); `where` names what was read.
 */
export function readRecordAs (text, id, where = id) {
  const record = readRunRecord(text, where)
  if (record.id !== id) throw runInvalid(where, 'id', `is "${record.id}", not "${id}", the name of its file`)
  return record
}

/** Read the record file of `id`: 404 run.not.found (`keep` in its message) for no regular file, 422 run.invalid past the bound. */
export async function readRecordFile (file, id, keep) {
  let text
  try {
    const stat = await fs.promises.lstat(file)
    if (!stat.isFile()) throw runNotFound(id, keep)
    if (stat.size > RECORD_MAX_BYTES) throw runInvalid(id, '(file)', oversize(stat.size))
    text = await fs.promises.readFile(file)
  } catch (err) {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') throw runNotFound(id, keep)
    throw err
  }
  return readRecordAs(text, id)
}

/**
 * What a list shows of a file that it cannot show as a run: its id, size and why (an error that is no `run.invalid`, such as a
 * file it may not read, in its own words).
 */
export function invalidEntry (id, bytes, err) {
  return { id, bytes, invalid: err?.type === 'run.invalid' ? err.message
    : `${id} could not be read: ${String(err?.message ?? err).slice(0, 200)}` }
}

/** What a list shows of a record, from the record. */
export function summarise (id, record, bytes) {
  return {
    id,
    experiment: record.run.experiment,
    title: record.run.title,
    status: record.run.status,
    source: record.run.source,
    startedAt: record.run.startedAt,
    date: new Date(record.run.startedAt).toISOString(),
    node: record.where.node,
    platform: `${record.where.platform}-${record.where.arch}`,
    routes: record.run.routes,
    bytes
  }
}

/**
 * A runs folder: `keep` records kept, the oldest (by the file's time) removed past it; `diskQuota`: the app's, which each write
 * reserves its bytes in (507 disk.quota.exceeded when it does not fit).
 */
export function createRunStore ({ dir, keep, diskQuota = null }) {
  if (typeof dir !== 'string' || dir === '') throw new TypeError('the runs store needs a directory')
  if (!Number.isSafeInteger(keep) || keep < 0) throw new TypeError(`the runs kept must be a whole number, got ${keep}`)
  const folder = path.resolve(dir)
  /** file name -> { mtimeMs, size, summary } */
  const summaries = new Map()

  /** The folder's record files, newest first, with their sizes and times. */
  async function files () {
    const names = await namesIn(folder)
    const found = []
    await Promise.all(names.map(async function look (name) {
      const id = idOf(name)
      try {
        const stat = await fs.promises.lstat(path.join(folder, name))
        if (id !== null && stat.isFile()) found.push({ id, name, size: stat.size, mtimeMs: stat.mtimeMs })
        else if (name.startsWith('.') && name.endsWith('.tmp') && stat.isFile() && Date.now() - stat.mtimeMs > STALE_TEMP_MS) {
          await remove(name)
        }
      } catch {
        // gone between readdir and lstat: nothing to list
      }
    }))
    return found.sort(function newestFirst (a, b) { return b.mtimeMs - a.mtimeMs || (a.id < b.id ? -1 : 1) })
  }

  async function remove (name) {
    const file = path.join(folder, name)
    await fs.promises.rm(file, { force: true })
    diskQuota?.forget(file)
    summaries.delete(name)
  }

  /** Remove the records past the newest `keep`; the ids removed. */
  async function prune () {
    const removed = []
    for (const file of (await files()).slice(keep)) {
      await remove(file.name)
      removed.push(file.id)
    }
    return removed
  }

  /** Write a record's text (record.js `recordText`) as `<id>.json`, then prune; 507 disk.quota.exceeded writes nothing. */
  async function save (id, text) {
    if (!RUN_ID.test(id)) throw new TypeError(`not a run id: ${id}`)
    const name = `${id}.json`
    const bytes = Buffer.byteLength(text)
    const reservation = diskQuota === null ? null : await diskQuota.reserve(bytes, { claims: [path.join(folder, `.${name}.`)] })
    let written
    try {
      const streams = [Readable.from([text])]
      if (reservation !== null) streams.push(reservation.meter())
      written = await writeAtomically(folder, name, streams)
    } catch (err) {
      reservation?.release()
      throw err
    }
    reservation?.commit(written.path, written.bytes)
    await prune()
    return written
  }

  /**
   * Read and check a record, named by its id or by a prefix that begins no other id (the short id a page shows): the record
   * carries its whole id.
   * @throws {LabError} 404 run.not.found, 409 run.id.ambiguous, 422 run.invalid
   */
  async function read (id) {
    try {
      return await readExactly(id)
    } catch (err) {
      if (err?.type !== 'run.not.found' || typeof id !== 'string' || !RUN_ID.test(id)) throw err
      return readExactly(await uniqueIdFor(id))
    }
  }

  async function uniqueIdFor (prefix) {
    const ids = (await namesIn(folder)).map(idOf).filter(function begins (id) { return id !== null && id.startsWith(prefix) })
    if (ids.length === 0) throw runNotFound(prefix, keep)
    if (ids.length > 1) throw runIdAmbiguous(prefix, ids.sort())
    return ids[0]
  }

  async function readExactly (id) {
    if (typeof id !== 'string' || !RUN_ID.test(id)) throw runNotFound(id, keep)
    return readRecordFile(path.join(folder, `${id}.json`), id, keep)
  }

  /**
   * The records in the folder, newest first: what a list shows of each, or, for a file that is no record this lab reads or cannot
   * be read, its id, size and what is wrong with it (`invalid`): one bad file never keeps the others from the list.
   */
  async function list () {
    const out = []
    const present = new Set()
    for (const file of await files()) {
      present.add(file.name)
      const cached = summaries.get(file.name)
      if (cached !== undefined && cached.size === file.size && cached.mtimeMs === file.mtimeMs) {
        out.push(cached.summary)
        continue
      }
      let summary
      try {
        summary = summarise(file.id, await readExactly(file.id), file.size)
      } catch (err) {
        if (err?.type === 'run.not.found') continue
        summary = invalidEntry(file.id, file.size, err)
      }
      summaries.set(file.name, { size: file.size, mtimeMs: file.mtimeMs, summary })
      out.push(summary)
    }
    for (const name of summaries.keys()) if (!present.has(name)) summaries.delete(name)
    return out
  }

  return Object.freeze({ dir: folder, keep, save, read, list, prune })
}
