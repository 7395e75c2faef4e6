/** The lab's code as the student's user reads it when the grader runs as root: a run's copy (student/README.md). */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { DEFAULTS, PROJECT_ROOT } from '../../lib/config/options.js'
import { LAB_PARTS, notGradedError, readableByOthers } from './isolation.js'
import { ALLOWED_PACKAGES } from './packages.js'
import { copyReadable, notSubmission, readableFolders, SUBMISSION_LIMITS } from './readable-copy.js'

/** What the student's process imports from node_modules: its server, and what a submission may. */
const LAB_PACKAGES = Object.freeze(['express', ...ALLOWED_PACKAGES])

export class LabCopy {
  #root = null
  #placed = new Set()
  /** What making it cost: `{ files, bytes, ms }`, once made. */
  cost = null

  /** The copy's folder, made on the first call; `code` 'NOT_GRADED' when others cannot enter the temporary folder. */
  root () {
    if (this.#root === null) {
      const started = process.hrtime.bigint()
      const root = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-lab-'))
      removeAtExit(root)
      try {
        fs.chmodSync(root, 0o755)
        if (!readableByOthers(root)) throw notGradedError(`not graded: other users cannot enter ${os.tmpdir()}, where the lab's code is ` +
          `copied for the submission's user (give TMPDIR a folder they can enter, such as /tmp)`)
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

  /** Where a submission inside the lab sits in the copy (copied on first call); null outside the lab; NOT_GRADED when too large. */
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

function notLoaded (file, entry) {
  return entry.isFile() && !LOADED.test(file)
}

/** LAB_PACKAGES and their dependencies as Node finds them: name -> folder; two of one name in different places are refused. */
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
    if (top.has(name)) throw new Error(`the lab's packages cannot be copied for the student's user: ${name} is installed twice, in ` +
      `${top.get(name)} and ${folder}`)
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

/** Copies not yet removed, removed at exit or on a signal; a signal nothing else listens to is raised again after. */
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
