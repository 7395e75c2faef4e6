/** What identifies a submission (its file's or folder's sha256, read as regular files only) and the limits every look keeps. */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { MOST_SOURCE_BYTES } from '../process/allocation-sites.js'
import { READ_FLAGS } from '../process/regular-file.js'
import { notGradedError } from './isolation.js'
import { MiB, formatMemory } from '../../lib/util/units.js'

/** Folders a folder's digest leaves out: installed packages and version control, not the submission's own code. */
const NOT_HASHED = Object.freeze(['node_modules', '.git'])

/** The most bytes of a submission the grader reads: room for a vendored module, a folder of videos refused at once. */
export const MAX_SUBMISSION_BYTES = 64 * MiB
/** The most bytes of one file of it: a bundled module is a few MiB. */
export const MAX_FILE_BYTES = 16 * MiB
/** The most files in a folder's digest: past this it is an unpacked archive of something else. */
export const MAX_FILES = 5000
/** How long looking at an entry or reading a submission may take: a slow disk or huge folder is refused, not hung on. */
export const READ_DEADLINE_MS = 15_000

export { READ_FLAGS }
const CHUNK = 64 * 1024
/** The modules a submission's code runs from: what its allocation sites can name. */
const SOURCE_FILE = /\.(?:js|mjs|cjs)$/

/** The hex sha256 of a regular file, bounded in size and time; `code` 'NOT_GRADED' with a `reason`, else the open's error. */
export function fileDigest (file, options = {}) {
  const budget = newBudget(options.deadlineMs)
  return withDeadline(digestRegular(file, path.basename(file), budget, null), budget.ms, `reading ${path.basename(file)}`)
}

/**
 * A file's sha256; a folder's is that of its `<sha256>  <path>` lines (sha256sum(1)), node_modules and .git left out,
 * links and special files in `skipped`. Its modules' bytes are kept in `sources`: absolute path -> bytes.
 */
export function submissionDigest (target, options = {}) {
  const budget = newBudget(options.deadlineMs)
  return withDeadline(digestTarget(target, budget), budget.ms, `reading ${path.basename(target)}`)
}

async function digestTarget (target, budget) {
  const top = path.resolve(target)
  const stat = await fs.promises.lstat(top)
  const sources = new Map()
  if (!stat.isDirectory()) return { sha256: await digestRegular(top, path.basename(top), budget, sources), skipped: [], sources }
  const skipped = []
  const files = await filesUnder(top, '', skipped, budget)
  files.sort()
  const lines = []
  for (const file of files) lines.push(`${await digestRegular(path.join(top, file), file, budget, sources)}  ${file}\n`)
  return { sha256: createHash('sha256').update(lines.join('')).digest('hex'), skipped: skipped.sort(), sources }
}

/** Every regular file under `dir`, as paths relative to it with forward slashes; links and special files go to `skipped`. */
async function filesUnder (dir, prefix, skipped, budget) {
  const out = []
  const entries = await fs.promises.readdir(path.join(dir, prefix), { withFileTypes: true })
  for (const entry of entries) {
    overDeadline(budget)
    const rel = prefix === '' ? entry.name : `${prefix}/${entry.name}`
    if (entry.isDirectory()) {
      if (!NOT_HASHED.includes(entry.name)) out.push(...await filesUnder(dir, rel, skipped, budget))
    } else if (entry.isFile()) {
      out.push(rel)
      if (++budget.files > MAX_FILES) throw notGradedError(`not graded: more than ${MAX_FILES} files (node_modules and .git left out)`)
    } else {
      skipped.push(`${rel} (${kindOf(entry)})`)
    }
  }
  return out
}

/** Hash one regular file against the submission's budget; a small enough module is kept in `sources` (null: none). */
async function digestRegular (file, label, budget, sources) {
  overDeadline(budget)
  let handle
  try {
    handle = await fs.promises.open(file, READ_FLAGS)
  } catch (err) {
    if (err.code === 'ELOOP' || err.code === 'EMLINK') throw notGradedError(`not graded: ${label} is a symbolic link, not a regular file`)
    throw err
  }
  try {
    const stat = await handle.stat()
    if (!stat.isFile()) throw notGradedError(`not graded: ${label} is ${kindOf(stat)}, not a regular file`)
    const hash = createHash('sha256')
    const buffer = Buffer.allocUnsafe(CHUNK)
    const kept = sources !== null && SOURCE_FILE.test(file) && stat.size <= MOST_SOURCE_BYTES ? [] : null
    let size = 0
    for (;;) {
      overDeadline(budget)
      const { bytesRead } = await handle.read(buffer, 0, CHUNK, null)
      if (bytesRead === 0) break
      size += bytesRead
      budget.bytes += bytesRead
      // counted as read, not from the stat: a file that grows while it is read stops here too
      if (size > MAX_FILE_BYTES) throw notGradedError(tooLarge(label))
      const most = formatMemory(MAX_SUBMISSION_BYTES)
      const why = `not graded: more than ${most} of files (node_modules and .git left out)`
      if (budget.bytes > MAX_SUBMISSION_BYTES) throw notGradedError(why)
      hash.update(buffer.subarray(0, bytesRead))
      kept?.push(Buffer.from(buffer.subarray(0, bytesRead)))
    }
    // a module that grew past the bound while it was read is hashed, not kept
    if (kept !== null && size <= MOST_SOURCE_BYTES) sources.set(file, Buffer.concat(kept))
    return hash.digest('hex')
  } finally {
    await handle.close()
  }
}

function newBudget (deadlineMs = READ_DEADLINE_MS) {
  return { ms: deadlineMs, deadline: Date.now() + deadlineMs, bytes: 0, files: 0 }
}

/** Stop a read that has outlived its deadline: abandoned by withDeadline, it must not go on working. */
function overDeadline (budget) {
  if (Date.now() >= budget.deadline) throw notGradedError(`not graded: reading it took longer than ${budget.ms / 1000} s`)
}

/** `promise`, or a refusal after `ms`: a file system call cannot be cancelled, so the one left behind settles unheard. */
export function withDeadline (promise, ms, what) {
  let timer
  const late = new Promise(function timeout (resolve, reject) {
    timer = setTimeout(function tooLate () { reject(notGradedError(`not graded: ${what} took longer than ${ms / 1000} s`)) }, ms)
  })
  promise.catch(function settledUnheard () {})
  return Promise.race([promise, late]).finally(function clear () { clearTimeout(timer) })
}

/** What an entry is, in words, from a Stats or a Dirent. */
export function kindOf (entry) {
  if (entry.isSymbolicLink()) return 'a symbolic link'
  if (entry.isFIFO()) return 'a named pipe'
  if (entry.isSocket()) return 'a socket'
  if (entry.isCharacterDevice()) return 'a character device'
  if (entry.isBlockDevice()) return 'a block device'
  if (entry.isDirectory()) return 'a folder'
  return 'not a file or a folder'
}

export function tooLarge (label) {
  return `not graded: ${label} is more than ${formatMemory(MAX_FILE_BYTES)}, the most a file may be`
}
