/**
 * The allocation sites a process the grader measures wrote about itself (grader/student/ sites-writer.js): read from the files it
 * writes, checked as untrusted input, and mapped back to the files the grader was given. The process wrote them, so they point at
 * a line and are never a figure: the graded code shares the process and could forge or hide them.
 */
import fs from 'node:fs'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { readSite, siteKey } from '../../lib/allocation/site.js'
import { readRegularSync } from './regular-file.js'

const POLL_MS = 50
/** Past this, a table is not read: a writer's own tables are a few hundred sites. */
const MOST_BYTES = 4 * 1024 * 1024
const MOST_SITES = 5000
/** A file of the graded code larger than this is not kept for its lines' code. */
export const MOST_SOURCE_BYTES = 1024 * 1024

/**
 * The tables in `files()` written at or after `since` (the writers' clock is this machine's), waiting up to `timeoutMs` for at
 * least one; [] when none came.
 */
export async function readSiteTables (files, since, timeoutMs) {
  const until = Date.now() + timeoutMs
  for (;;) {
    const tables = files().map(readTable).filter(function fresh (t) { return t !== null && t.at >= since })
    if (tables.length > 0 || Date.now() >= until) return tables
    await sleep(POLL_MS)
  }
}

/** A table the process wrote, in a folder it may write: a pipe or a link put in its place is refused unread. */
function readTable (file) {
  const bytes = readRegularSync(file, MOST_BYTES)
  if (bytes === null) return null
  let doc
  try {
    doc = JSON.parse(bytes.toString('utf8'))
  } catch {
    return null
  }
  if (doc === null || typeof doc !== 'object' || !Number.isFinite(doc.at) || !Array.isArray(doc.sites)
    || doc.sites.length > MOST_SITES) return null
  return { pid: Number.isSafeInteger(doc.pid) ? doc.pid : null, at: doc.at, sites: doc.sites.map(readSite).filter(pointsAtALine) }
}

/** A site read (lib/allocation/site.js) that names a file and a line: the only kind a card can point at. */
function pointsAtALine (site) {
  return site !== null && site.file !== null && site.line > 0
}

/**
 * Each site's bytes allocated between two readings of the same writers (`before` may be empty), what it held at the second, its
 * file mapped by `place` (null: not the graded code's file).
 */
export function sitesBetween (before, after, place) {
  const earlier = new Map()
  for (const table of before) {
    for (const site of table.sites) earlier.set(keyOf(table.pid, site), site.allocatedBytes)
  }
  const sites = []
  for (const table of after) {
    for (const site of table.sites) {
      const file = place(site.file)
      if (file === null) continue
      const allocatedBytes = site.allocatedBytes - (earlier.get(keyOf(table.pid, site)) ?? 0)
      if (allocatedBytes <= 0 && !(site.heldBytes > 0)) continue
      sites.push({ file, line: site.line, column: Number.isSafeInteger(site.column) ? site.column : null,
        functionName: site.functionName, kind: site.kind, allocatedBytes: Math.max(0, allocatedBytes), heldBytes: site.heldBytes })
    }
  }
  return sites
}

function keyOf (pid, site) {
  return `${pid}\u0000${siteKey(site)}`
}

/**
 * A `place` for sitesBetween: a site's file inside `seen` (the submission's file or folder as the process saw it, or its real
 * path, project-relative files resolved from `root`) becomes the same file under `given` (as the grader was given it); any other
 * file is not the submission's. A site's file is a name, compared as text: the file system is never asked about it.
 */
export function placeInSubmission ({ root, seen, given }) {
  const bases = [...new Set([path.resolve(seen), realOrSame(seen)])]
  return function place (file) {
    if (file.startsWith('node:')) return null
    const absolute = path.resolve(root, file)
    for (const base of bases) {
      const relative = path.relative(base, absolute)
      if (relative === '') return given
      if (!relative.startsWith('..') && !path.isAbsolute(relative)) return path.join(given, relative)
    }
    return null
  }
}

/**
 * A `place` for a service's sites: its own files are any outside Node's internals, the node_modules folders and the lab's own
 * code (`labRoot`'s lib/ and grader/).
 */
export function placeInService (labRoot) {
  const lab = [path.join(labRoot, 'lib') + path.sep, path.join(labRoot, 'grader') + path.sep]
  return function place (file) {
    if (file.startsWith('node:')) return null
    const absolute = path.resolve(labRoot, file)
    if (absolute.split(path.sep).includes('node_modules')) return null
    if (lab.some(function ours (folder) { return absolute.startsWith(folder) })) return null
    return absolute
  }
}

/**
 * A `source` for a submission's sites: the bytes its digest kept (grader/student/digest.js `sources`), read once, as regular
 * files inside it, before its process started (absolute path -> bytes). Any other name (a link, a pipe, a file outside it, one
 * too large) has none.
 */
export function sourceInSnapshot (sources) {
  return function source (file) {
    return sources.get(file) ?? null
  }
}

/**
 * A `source` for a service's sites: a service runs as the grader's user and reads what it likes, so its files are read from disk,
 * as regular files alone (regular-file.js), at most `maxBytes`.
 */
export function sourceOnDisk (maxBytes) {
  return function source (file) {
    return readRegularSync(file, maxBytes)
  }
}

/** How long a reading waits for a table written after it began: many writes' worth (WRITE_MS). */
const READ_TIMEOUT_MS = 3000

/** What a check reads of a sampled process: `mark()` before a load, `since(mark)` after it. */
export class SiteReader {
  #files
  #place
  #source

  /**
   *   `files`: where the process's tables are now; `place`: a site's file as the grader knows it, or null;
   *   `source`: the bytes the grader holds of a placed file, or null (sourceInSnapshot, sourceOnDisk)
   */
  constructor ({ files, place, source }) {
    this.#files = files
    this.#place = place
    this.#source = source
  }

  /**
   * The bytes of a site's file (as `since` placed it), from what the grader holds: never a read of a path the process chose, as
   * the grader's user, that could block.
   */
  source (file) {
    return this.#source(file)
  }

  /** The tables as they stand now (written after this call began); [] when none came. */
  mark () {
    return readSiteTables(this.#files, Date.now(), READ_TIMEOUT_MS)
  }

  /** The graded code's sites since `mark`: what each allocated in between, what it holds now; null when it wrote no table. */
  async since (mark) {
    const after = await readSiteTables(this.#files, Date.now(), READ_TIMEOUT_MS)
    if (after.length === 0) return null
    return sitesBetween(mark, after, this.#place)
  }
}

function realOrSame (file) {
  try {
    return fs.realpathSync(file)
  } catch {
    return file
  }
}
