/** Copies the student's user may read, not write: regular files and folders only, 0755 and 0644 whatever the umask. */
import fs from 'node:fs'
import path from 'node:path'
import { NOT_COPIED, notGradedError } from './isolation.js'

/** The most files, and bytes, of a submission copied for its user: a handler's code is kilobytes. */
const COPY_MAX_FILES = 10_000
const COPY_MAX_BYTES = 64 * 2 ** 20
const FOLDER_MODE = 0o755
const FILE_MODE = 0o644

/** Copy `from` (a file or folder) to `to`; `skip(file, entry)` leaves out a path and all under it; past the bounds, NOT_GRADED. */
export function copyReadable (from, to, { skip = function none () { return false }, maxFiles = Infinity, maxBytes = Infinity } = {}) {
  const copied = { files: 0, bytes: 0 }
  const stat = fs.lstatSync(from)
  if (stat.isFile()) copyFile(from, to, stat.size, copied, { maxFiles, maxBytes })
  else if (stat.isDirectory()) copyFolder(from, to, copied, { skip, maxFiles, maxBytes })
  return copied
}

function copyFolder (from, to, copied, limits) {
  // it may be there: a submission that is the lab's root goes into the copy's
  fs.mkdirSync(to, { recursive: true })
  fs.chmodSync(to, FOLDER_MODE)
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name)
    if (limits.skip(source, entry)) continue
    if (entry.isDirectory()) copyFolder(source, path.join(to, entry.name), copied, limits)
    else if (entry.isFile()) copyFile(source, path.join(to, entry.name), null, copied, limits)
  }
}

function copyFile (from, to, size, copied, { maxFiles, maxBytes }) {
  copied.files++
  copied.bytes += size ?? fs.statSync(from).size
  if (copied.files > maxFiles || copied.bytes > maxBytes) {
    throw notGradedError(`not graded: the submission is too large to copy for its user (over ${maxFiles} files or ` +
      `${maxBytes / 2 ** 20} MiB)`)
  }
  // a clone where the file system has them: no bytes written
  fs.copyFileSync(from, to, fs.constants.COPYFILE_FICLONE)
  fs.chmodSync(to, FILE_MODE)
}

/** Make `folder` and each folder above it up to `top` searchable and readable by all. */
export function readableFolders (top, folder) {
  const below = path.relative(top, folder).split(path.sep).filter(Boolean)
  let at = top
  for (const name of below) {
    at = path.join(at, name)
    if (!fs.existsSync(at)) fs.mkdirSync(at)
    fs.chmodSync(at, FOLDER_MODE)
  }
}

/** Copy a submission (a file, or a folder without node_modules and .git) into `dir`; NOT_GRADED when too large. */
export function copySubmission (scope, handler, dir) {
  const target = path.join(dir, path.basename(scope))
  fs.chmodSync(dir, FOLDER_MODE)
  copyReadable(scope, target, { skip: notSubmission, maxFiles: COPY_MAX_FILES, maxBytes: COPY_MAX_BYTES })
  return { scope: target, handler: path.join(target, path.relative(scope, handler)) }
}

/** What copySubmission leaves out of a folder: its packages and history. */
export function notSubmission (file) {
  return NOT_COPIED.includes(path.basename(file))
}

/** The bounds copySubmission holds a submission to, for a copy made elsewhere (lab-copy.js). */
export const SUBMISSION_LIMITS = Object.freeze({ maxFiles: COPY_MAX_FILES, maxBytes: COPY_MAX_BYTES })
