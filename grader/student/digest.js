/**
 * What identifies a submission: the sha256 of its file, or of a folder's files, read as regular
 * files only, bounded in size, count and time (submission.js says why), and the limits every
 * look at a submission keeps.
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { notGradedError } from './isolation.js'

/** Folders a folder's digest leaves out: installed packages and version control, not the submission's own code. */
const NOT_HASHED = Object.freeze(['node_modules', '.git'])
const MiB = 2 ** 20

/**
 * The most bytes of a submission the grader reads. A handler and its own modules are kilobytes;
 * 64 MiB leaves room for a vendored module or a sample body while a folder of videos (or a
 * sparse file of terabytes) is refused at once instead of hashed for an hour. The same figure
 * bounds the copy made for the student's user (isolation.js).
 */
export const MAX_SUBMISSION_BYTES = 64 * MiB
/** The most bytes of one file of it: a bundled module is a few MiB. */
export const MAX_FILE_BYTES = 16 * MiB
/** The most files in a folder's digest: past this it is an unpacked archive of something else. */
export const MAX_FILES = 5000
/** How long looking at an entry, or reading a submission, may take: a slow disk or a huge folder gets a refusal, not a hang. */
export const READ_DEADLINE_MS = 15_000

// O_NOFOLLOW: a link in the last place is an error (ELOOP), never followed; O_NONBLOCK: a pipe
// with no writer opens at once (and is then refused) instead of waiting. Neither exists on Windows.
export const READ_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0)
const CHUNK = 64 * 1024

/**
 * The sha256 of a regular file's bytes, as hex, read without following a link, at most
 * MAX_FILE_BYTES and within READ_DEADLINE_MS.
 * @param {string} file
 * @param {{ deadlineMs?: number }} [options]
 * @returns {Promise<string>}
 * @throws {Error} `code` 'NOT_GRADED' with its `reason` (a link, a pipe, a device, too large, too slow);
 *   the open's own error (ENOENT, EACCES) otherwise
 */
export function fileDigest (file, options = {}) {
  const budget = newBudget(options.deadlineMs)
  return withDeadline(digestRegular(file, path.basename(file), budget), budget.ms, `reading ${path.basename(file)}`)
}

/**
 * The digest of a submission: a file's sha256; for a folder, the sha256 of
 * its files' list, one line per file in path order, `<sha256>  <path>` as
 * sha256sum(1) prints it, node_modules and .git left out. A folder's walk
 * follows no link and reads no pipe or device: those are left out and named
 * in `skipped`. At most MAX_SUBMISSION_BYTES and MAX_FILES, within READ_DEADLINE_MS.
 * @param {string} target a file or a folder
 * @param {{ deadlineMs?: number }} [options]
 * @returns {Promise<{ sha256: string, skipped: string[] }>} `skipped`: "lib.js (a symbolic link)", …
 * @throws {Error} `code` 'NOT_GRADED' with its `reason`
 */
export function submissionDigest (target, options = {}) {
  const budget = newBudget(options.deadlineMs)
  return withDeadline(digestTarget(target, budget), budget.ms, `reading ${path.basename(target)}`)
}

async function digestTarget (target, budget) {
  const stat = await fs.promises.lstat(target)
  if (!stat.isDirectory()) return { sha256: await digestRegular(target, path.basename(target), budget), skipped: [] }
  const skipped = []
  const files = await filesUnder(target, '', skipped, budget)
  files.sort()
  const lines = []
  for (const file of files) lines.push(`${await digestRegular(path.join(target, file), file, budget)}  ${file}\n`)
  return { sha256: createHash('sha256').update(lines.join('')).digest('hex'), skipped: skipped.sort() }
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

/** Hash one regular file, counting its bytes against the submission's budget. */
async function digestRegular (file, label, budget) {
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
    let size = 0
    for (;;) {
      overDeadline(budget)
      const { bytesRead } = await handle.read(buffer, 0, CHUNK, null)
      if (bytesRead === 0) break
      size += bytesRead
      budget.bytes += bytesRead
      // counted as read, not from the stat: a file that grows while it is read stops here too
      if (size > MAX_FILE_BYTES) throw notGradedError(tooLarge(label))
      if (budget.bytes > MAX_SUBMISSION_BYTES) throw notGradedError(`not graded: more than ${formatMiB(MAX_SUBMISSION_BYTES)} of files (node_modules and .git left out)`)
      hash.update(buffer.subarray(0, bytesRead))
    }
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

/**
 * `promise`, or a refusal once `ms` have passed. A file system call cannot be cancelled: the one
 * left behind settles later, unheard (and closes what it opened).
 */
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
  return `not graded: ${label} is more than ${formatMiB(MAX_FILE_BYTES)}, the most a file may be`
}

export function formatMiB (bytes) {
  return `${Math.round(bytes / MiB * 10) / 10} MiB`
}
