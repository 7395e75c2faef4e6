/**
 * Copies the student's user may read and not write: regular files and
 * folders only (a link, a pipe or a device is left out, never followed),
 * folders 0755 and files 0644 whatever the umask, owned by the grader. What
 * a submission runs from when its user cannot read it (copySubmission), and
 * what the lab's code reaches that user through (lab-copy.js).
 */
import fs from 'node:fs'
import path from 'node:path'
import { NOT_COPIED, notGradedError } from './isolation.js'

/** The most files, and bytes, of a submission copied for its user: a handler's code is kilobytes. */
const COPY_MAX_FILES = 10_000
const COPY_MAX_BYTES = 64 * 2 ** 20
const FOLDER_MODE = 0o755
const FILE_MODE = 0o644

/**
 * Copy `from` (a file or a folder) to `to`, whose parent exists.
 * @param {string} from
 * @param {string} to
 * @param {{ skip?: (file: string, entry: fs.Dirent) => boolean, maxFiles?: number, maxBytes?: number }} [options]
 *   `skip`: a path below `from` left out, with all under it (a file or a folder); past `maxFiles` or `maxBytes`,
 *   a `NOT_GRADED` error
 * @returns {{ files: number, bytes: number }} what was copied
 */
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
    throw notGradedError(`not graded: the submission is too large to copy for its user (over ${maxFiles} files or ${maxBytes / 2 ** 20} MiB)`)
  }
  // a clone where the file system has them: no bytes written
  fs.copyFileSync(from, to, fs.constants.COPYFILE_FICLONE)
  fs.chmodSync(to, FILE_MODE)
}

/**
 * Make `folder` and each folder above it up to `top` (which exists) searchable and readable by all.
 * @param {string} top
 * @param {string} folder at or below `top`
 */
export function readableFolders (top, folder) {
  const below = path.relative(top, folder).split(path.sep).filter(Boolean)
  let at = top
  for (const name of below) {
    at = path.join(at, name)
    if (!fs.existsSync(at)) fs.mkdirSync(at)
    fs.chmodSync(at, FOLDER_MODE)
  }
}

/**
 * Copy a submission (a file alone, or a folder without node_modules and
 * .git) into `dir`: what the student's user runs when it cannot read the original.
 * @param {string} scope the submission's file or folder
 * @param {string} handler the module graded, inside `scope` or `scope` itself
 * @param {string} dir an empty folder of the grader's
 * @returns {{ scope: string, handler: string }} the copy's
 * @throws {Error} `code` 'NOT_GRADED' when it is too large to copy
 */
export function copySubmission (scope, handler, dir) {
  const target = path.join(dir, path.basename(scope))
  fs.chmodSync(dir, FOLDER_MODE)
  copyReadable(scope, target, { skip: notSubmission, maxFiles: COPY_MAX_FILES, maxBytes: COPY_MAX_BYTES })
  return { scope: target, handler: path.join(target, path.relative(scope, handler)) }
}

/**
 * What copySubmission leaves out of a folder: its packages and history.
 * @param {string} file
 */
export function notSubmission (file) {
  return NOT_COPIED.includes(path.basename(file))
}

/** The bounds copySubmission holds a submission to, for a copy made elsewhere (lab-copy.js). */
export const SUBMISSION_LIMITS = Object.freeze({ maxFiles: COPY_MAX_FILES, maxBytes: COPY_MAX_BYTES })
