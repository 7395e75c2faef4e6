/**
 * The lab's code as the student's user reads it when the grader runs as
 * root: a copy the grading run owns, in a fresh temporary folder that all
 * may read and the grader alone may write, so that a checkout in a folder
 * other users cannot enter (a home folder, `mktemp -d`) is never opened to
 * them. It holds what the student's process reads of the lab: package.json,
 * the folders of LAB_PARTS, and express and the allowed packages with all
 * they depend on, of each only the files Node loads (no docs, types or maps). A submission inside the lab is copied to its place in it,
 * so that its imports of the lab's code resolve there. Made on first use,
 * once per grading run (a class shares one); removed by close(), or at the
 * latest when the grader exits or a signal ends it.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { DEFAULTS, PROJECT_ROOT } from '../../lib/config/options.js'
import { LAB_PARTS, notGradedError, readableByOthers } from './isolation.js'
import { ALLOWED_PACKAGES } from './packages.js'
import { copyReadable, notSubmission, readableFolders, SUBMISSION_LIMITS } from './readable-copy.js'

/** What the student's process imports from node_modules: its server, and what a submission may. */
const LAB_PACKAGES = Object.freeze(['express', ...ALLOWED_PACKAGES])

/** A grading run's copy of the lab for the student's user. */
export class LabCopy {
  #root = null
  #placed = new Set()
  /** What making it cost: `{ files, bytes, ms }`, once made. */
  cost = null

  /**
   * The copy's folder, made on the first call.
   * @returns {string}
   * @throws {Error} `code` 'NOT_GRADED' when other users cannot enter the temporary folder it is made in
   */
  root () {
    if (this.#root === null) {
      const started = process.hrtime.bigint()
      const root = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-lab-'))
      removeAtExit(root)
      try {
        fs.chmodSync(root, 0o755)
        if (!readableByOthers(root)) throw notGradedError(`not graded: other users cannot enter ${os.tmpdir()}, where the lab's code is copied for the submission's user (give TMPDIR a folder they can enter, such as /tmp)`)
        const copied = copyLab(root)
        this.cost = { ...copied, ms: Number(process.hrtime.bigint() - started) / 1e6 }
      } catch (err) {
        remove(root)
        throw err
      }
      this.#root = root
    }
    return this.#root
  }

  /** What the student's process may read of the copy: the lab's code, not the submissions placed in it. */
  reads () {
    const root = this.root()
    return [...LAB_PARTS, 'node_modules'].map(function inCopy (part) { return path.join(root, part) })
  }

  /**
   * Where a submission inside the lab sits in the copy, copied there on
   * the first call for it (regular files only, as copySubmission copies,
   * without the lab's own parts, its data folder and .git).
   * @param {string} scope the submission's file or folder
   * @param {string} handler the module graded, at or inside `scope`
   * @returns {{ scope: string, handler: string } | null} null for a submission outside the lab
   * @throws {Error} `code` 'NOT_GRADED' when it is too large to copy
   */
  place (scope, handler) {
    const relative = insideLab(scope)
    if (relative === null) return null
    const root = this.root()
    const target = path.join(root, relative)
    const there = [...LAB_PARTS, ...this.#placed].some(function holds (part) { return isWithin(part, relative) })
    if (!there) {
      readableFolders(root, path.dirname(target))
      copyReadable(scope, target, { skip: notLabOrSubmission, ...SUBMISSION_LIMITS })
      this.#placed.add(relative)
    }
    return { scope: target, handler: path.join(target, path.relative(scope, handler)) }
  }

  /** Remove the copy (a student's process that still runs keeps what it opened). */
  close () {
    if (this.#root === null) return
    remove(this.#root)
    this.#root = null
    this.#placed.clear()
  }
}

/** Copy the lab's parts and packages into `root`; returns the files and bytes copied. */
function copyLab (root) {
  const total = { files: 0, bytes: 0 }
  const add = function add (copied) {
    total.files += copied.files
    total.bytes += copied.bytes
  }
  for (const part of LAB_PARTS) {
    const source = path.join(PROJECT_ROOT, part)
    if (!fs.existsSync(source)) continue
    readableFolders(root, path.dirname(path.join(root, part)))
    add(copyReadable(source, path.join(root, part), { skip: notLoaded }))
  }
  for (const [name, source] of packagesToCopy()) {
    const target = path.join(root, 'node_modules', name)
    readableFolders(root, path.dirname(target))
    add(copyReadable(source, target, { skip: notLoaded }))
  }
  return total
}

/** Node's loader reads these files only: copying the rest (docs, types, source maps) would cost for nothing. */
const LOADED = /\.(?:js|cjs|mjs|json)$/

/**
 * A file of the lab's Node never loads.
 * @param {string} file
 * @param {import('node:fs').Dirent} entry
 */
function notLoaded (file, entry) {
  return entry.isFile() && !LOADED.test(file)
}

/**
 * The folders of LAB_PACKAGES and of every package they depend on, found as
 * Node finds them (the package's node_modules, then each folder's above
 * it), by name under the copy's node_modules. A package inside another's
 * node_modules goes with that one; two of one name elsewhere cannot share
 * the copy's one node_modules, and are refused.
 * @returns {Map<string, string>} name -> its folder
 */
function packagesToCopy () {
  const found = new Map()
  const queue = LAB_PACKAGES.map(function fromLab (name) { return packageFolder(PROJECT_ROOT, name) })
  while (queue.length > 0) {
    const folder = queue.pop()
    if (folder === null || found.has(folder)) continue
    const pkg = JSON.parse(fs.readFileSync(path.join(folder, 'package.json'), 'utf8'))
    found.set(folder, pkg.name)
    // a dependency missing here is missing in the checkout too: the child fails to import it and says so
    for (const name of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies })) queue.push(packageFolder(folder, name))
  }
  const top = new Map()
  for (const [folder, name] of found) {
    const nested = [...found.keys()].some(function holds (other) { return other !== folder && isWithin(other, folder) })
    if (nested) continue
    if (top.has(name)) throw new Error(`the lab's packages cannot be copied for the student's user: ${name} is installed twice, in ${top.get(name)} and ${folder}`)
    top.set(name, folder)
  }
  return top
}

/** The folder Node would load package `name` from for code in `from`, or null. */
function packageFolder (from, name) {
  for (let at = from; ; at = path.dirname(at)) {
    const folder = path.join(at, 'node_modules', name)
    if (fs.existsSync(path.join(folder, 'package.json'))) return fs.realpathSync(folder)
    if (path.dirname(at) === at) return null
  }
}

/** The path of `file` inside the lab ('' for its root), or null outside it. */
function insideLab (file) {
  const relative = path.relative(realOrSame(PROJECT_ROOT), realOrSame(file))
  return relative.startsWith('..') || path.isAbsolute(relative) ? null : relative
}

/** What place() leaves out of a submission that is the lab's root or holds a part of it. */
function notLabOrSubmission (file) {
  const relative = insideLab(file)
  return notSubmission(file) || relative === null || [...LAB_PARTS, 'node_modules'].includes(relative) ||
    realOrSame(file) === realOrSame(DEFAULTS.dataDir)
}

function isWithin (folder, file) {
  const relative = path.relative(folder, file)
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative))
}

function realOrSame (file) {
  try {
    return fs.realpathSync(file)
  } catch {
    return path.resolve(file)
  }
}

/**
 * The copies not yet removed, removed when the process exits or a signal
 * ends it: process-wide, as exit and signals are. A signal that nothing
 * else listens to is raised again once they are gone, so that it still ends the process.
 */
const live = new Set()
const ENDING_SIGNALS = Object.freeze(['SIGINT', 'SIGTERM', 'SIGHUP'])

function removeAtExit (root) {
  if (live.size === 0) {
    process.on('exit', removeLive)
    for (const signal of ENDING_SIGNALS) process.on(signal, removeLiveThenEnd)
  }
  live.add(root)
}

function remove (root) {
  fs.rmSync(root, { recursive: true, force: true })
  live.delete(root)
  if (live.size === 0) stopListening()
}

function stopListening () {
  process.removeListener('exit', removeLive)
  for (const signal of ENDING_SIGNALS) process.removeListener(signal, removeLiveThenEnd)
}

function removeLive () {
  for (const root of live) fs.rmSync(root, { recursive: true, force: true })
  live.clear()
  stopListening()
}

function removeLiveThenEnd (signal) {
  removeLive()
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal)
}
