/**
 * What a submission is and what identifies it: a `.js`, `.mjs` or `.cjs`
 * file, or a folder with a package.json naming its module or an `index.*`,
 * found in a class's folder (anything else there is skipped, with the
 * reason); the sha256 digest of the file (or of a folder's files); and the
 * lab's version (package.json's, with the git commit). The card and a class's rows carry both, so that a grade
 * can be traced to the exact bytes graded and the exact grader.
 *
 * A submission is read as regular files only, bounded in size and in time:
 * a symbolic link could point at anything the grader (root, often) may
 * read, and a named pipe or a device could hang the run or never end. Each
 * entry is looked at with lstat, then opened with O_NOFOLLOW | O_NONBLOCK
 * and its descriptor checked again, so that swapping the file between the
 * two finds a refusal, not a pipe.
 */
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { notGradedError } from './isolation.js'

/** Folders a folder's digest leaves out: installed packages and version control, not the submission's own code. */
const NOT_HASHED = Object.freeze(['node_modules', '.git'])
const GIT_TIMEOUT_MS = 5000
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
const READ_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0)
const CHUNK = 64 * 1024

/** The files a submission may be: an ES module or a CommonJS one, as Node tells them apart by name. */
export const SUBMISSION_EXTENSIONS = Object.freeze(['.js', '.mjs', '.cjs'])
/** A folder's module when its package.json names none, in the order they are looked for. */
const INDEX_FILES = Object.freeze(SUBMISSION_EXTENSIONS.map(function index (ext) { return `index${ext}` }))
/** A package.json is a few hundred bytes: past this it is not one to read. */
const PACKAGE_JSON_MAX_BYTES = MiB
/** The export conditions a package's "." entry is read with: Node's for import(), then CommonJS's. */
const CONDITIONS = Object.freeze(['node', 'import', 'default', 'require'])
const NO_ENTRY = 'a folder with no module to grade: no package.json naming one ("main", or "exports" ".") and no index.js, index.mjs or index.cjs'
/** What a skipped entry's reason ends with: what the grader would have taken. */
const SUBMISSION_IS = 'a submission is a .js, .mjs or .cjs file, or a folder with a package.json or an index.js'

/**
 * Every entry of a class's folder, in name order, as a submission or as something skipped,
 * each saying why it is not graded. A submission is a `.js`, `.mjs` or `.cjs` file, or a folder
 * (its package.json's `exports` "." or `main`, else its index.js, index.mjs or index.cjs); a
 * symbolic link to a folder is refused. Anything else (notes.txt, handler.ts, a dangling link) is
 * skipped with the reason, never dropped in silence; hidden entries and node_modules are not
 * looked at. Nothing is run: each entry is lstat'ed, a folder's package.json read (1 MiB at
 * most), and the module opened without following a link and checked to be a regular file.
 * @param {string} folder
 * @param {{ deadlineMs?: number }} [options] how long one entry may take to look at (READ_DEADLINE_MS)
 * @returns {Promise<Array<{ name: string, path: string, handler: string, refused: string|null, skipped: string|null }>>}
 *   `path` the file or folder, `handler` the module graded (a folder's entry); `refused` why a
 *   submission is not graded (a symbolic link, a pipe, a device, a folder with no module), `skipped`
 *   why an entry is not a submission at all; both null for one to grade
 */
export async function findSubmissions (folder, options = {}) {
  const deadlineMs = options.deadlineMs ?? READ_DEADLINE_MS
  const names = await withDeadline(fs.promises.readdir(folder), deadlineMs, `listing ${folder}`)
  const found = []
  for (const name of names) {
    if (name.startsWith('.') || name === 'node_modules') continue
    const full = path.join(folder, name)
    const entry = await withDeadline(lookAt(name, full), deadlineMs, `looking at ${name}`).catch(function refusedAsData (err) {
      if (err.code === 'ENOENT') return null // gone since the listing
      const refused = err.code === 'NOT_GRADED' ? err.reason : `not graded: it cannot be looked at (${err.code ?? err.message})`
      return { name: submissionName(name), path: full, handler: full, refused, skipped: null }
    })
    if (entry !== null) found.push(entry)
  }
  return found.sort(function byName (a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0 })
}

/** A file's name without its .js, .mjs or .cjs; any other name as it is. */
function submissionName (name) {
  const ext = path.extname(name)
  return SUBMISSION_EXTENSIONS.includes(ext) && name.length > ext.length ? name.slice(0, -ext.length) : name
}

/** One entry of a class's folder: a submission (graded or refused), or skipped with the reason. */
async function lookAt (name, full) {
  const stat = await fs.promises.lstat(full)
  const entry = { name: submissionName(name), path: full, handler: full, refused: null, skipped: null }
  if (stat.isDirectory()) return { ...entry, name, ...await folderEntry(full) }
  const isModule = entry.name !== name
  if (stat.isSymbolicLink() && !isModule) {
    // a link named like a folder is a submission only if it leads to one; stat reads no content
    const target = await fs.promises.stat(full).catch(function dangling () { return null })
    if (target === null) return { ...entry, skipped: `not a submission: a symbolic link to nothing (${SUBMISSION_IS})` }
    if (!target.isDirectory()) return { ...entry, skipped: `not a submission: a symbolic link to a file (${SUBMISSION_IS}, never a link)` }
    return { ...entry, refused: 'not graded: a symbolic link to a folder (a submission is a folder or a regular file)' }
  }
  if (!isModule) {
    const ext = path.extname(name)
    const what = !stat.isFile() ? kindOf(stat) : ext === '' ? 'a file with no extension' : `a ${ext} file`
    return { ...entry, skipped: `not a submission: ${what} (${SUBMISSION_IS})` }
  }
  const refused = stat.isFile() ? await regularFileProblem(full, name, null) : `not graded: ${kindOf(stat)}, not a regular file`
  return { ...entry, refused }
}

/**
 * A folder's module, as Node would import the folder as a package: its package.json's
 * `exports` "." (its first condition Node or CommonJS would take), else its `main`, else
 * index.js, index.mjs or index.cjs. Each path must stay inside the folder and reach a
 * regular file through no symbolic link.
 * @returns {Promise<{ handler: string, refused: string|null }>}
 */
async function folderEntry (folder) {
  const manifest = await readPackageJson(folder)
  if (manifest.problem !== null) return { handler: path.join(folder, 'package.json'), refused: `not graded: ${manifest.problem}` }
  const pkg = manifest.pkg
  if (pkg !== null && pkg.exports !== undefined) {
    const entry = exportsEntry(pkg.exports)
    if (entry === null) return { handler: path.join(folder, 'package.json'), refused: 'not graded: its package.json\'s "exports" names no "." entry to import' }
    return moduleInside(folder, entry, `package.json's "exports" "."`, [''])
  }
  if (pkg !== null && typeof pkg.main === 'string' && pkg.main !== '') {
    // "main": "lib/handler" finds lib/handler.js, as Node's require does
    return moduleInside(folder, pkg.main, 'package.json\'s "main"', ['', ...SUBMISSION_EXTENSIONS])
  }
  for (const index of INDEX_FILES) {
    const file = path.join(folder, index)
    const seen = await fs.promises.lstat(file).catch(function missing () { return null })
    if (seen !== null) return { handler: file, refused: await regularFileProblem(file, index, null) }
  }
  return { handler: path.join(folder, 'index.js'), refused: `not graded: ${NO_ENTRY}` }
}

/**
 * A folder's package.json: `pkg` null when there is none, `problem` when it is not one to read
 * (a link, a pipe, too large, not JSON, not an object).
 */
async function readPackageJson (folder) {
  const file = path.join(folder, 'package.json')
  let handle
  try {
    handle = await fs.promises.open(file, READ_FLAGS)
  } catch (err) {
    if (err.code === 'ENOENT') return { pkg: null, problem: null }
    if (err.code === 'ELOOP' || err.code === 'EMLINK') return { pkg: null, problem: 'package.json is a symbolic link, not a regular file' }
    return { pkg: null, problem: `package.json cannot be opened (${err.code ?? err.message})` }
  }
  try {
    const stat = await handle.stat()
    if (!stat.isFile()) return { pkg: null, problem: `package.json is ${kindOf(stat)}, not a regular file` }
    if (stat.size > PACKAGE_JSON_MAX_BYTES) return { pkg: null, problem: `package.json is more than ${formatMiB(PACKAGE_JSON_MAX_BYTES)}` }
    const buffer = Buffer.alloc(stat.size)
    const { bytesRead } = await handle.read(buffer, 0, stat.size, 0)
    let pkg
    try {
      pkg = JSON.parse(buffer.subarray(0, bytesRead).toString('utf8'))
    } catch (err) {
      return { pkg: null, problem: `package.json is not JSON (${err.message})` }
    }
    if (pkg === null || typeof pkg !== 'object' || Array.isArray(pkg)) return { pkg: null, problem: 'package.json is not a JSON object' }
    return { pkg, problem: null }
  } finally {
    await handle.close()
  }
}

/**
 * The path a package's `exports` gives for ".", or null: a string, a subpath map's "." entry,
 * or the first of Node's conditions (CONDITIONS) that gives one, arrays tried in order.
 * @param {unknown} exports
 * @returns {string|null}
 */
export function exportsEntry (exports) {
  let target = exports
  if (target !== null && typeof target === 'object' && !Array.isArray(target) && Object.keys(target).some(function subpath (key) { return key.startsWith('.') })) {
    target = Object.hasOwn(target, '.') ? target['.'] : null
  }
  return conditionTarget(target, 0)
}

function conditionTarget (target, depth) {
  if (depth > 8) return null
  if (typeof target === 'string') return target
  if (Array.isArray(target)) {
    for (const option of target) {
      const found = conditionTarget(option, depth + 1)
      if (found !== null) return found
    }
    return null
  }
  if (target === null || typeof target !== 'object') return null
  for (const [condition, value] of Object.entries(target)) {
    if (!CONDITIONS.includes(condition)) continue
    const found = conditionTarget(value, depth + 1)
    if (found !== null) return found
  }
  return null
}

/**
 * `entry` (as a package.json names it) inside `folder`: the first of it with one of `suffixes`
 * that exists, refused when it leaves the folder, passes through a symbolic link, or is not a
 * regular file.
 * @returns {Promise<{ handler: string, refused: string|null }>}
 */
async function moduleInside (folder, entry, label, suffixes) {
  const rel = path.normalize(entry)
  if (path.isAbsolute(entry) || rel === '..' || rel.startsWith(`..${path.sep}`)) {
    return { handler: path.join(folder, 'package.json'), refused: `not graded: ${label} (${JSON.stringify(entry)}) leads outside the folder` }
  }
  for (const suffix of suffixes) {
    const file = path.join(folder, rel + suffix)
    const linked = await linkOnTheWay(folder, file)
    if (linked === undefined) continue // not there: the next suffix
    if (linked !== null) return { handler: file, refused: `not graded: ${label} is reached through ${linked}, a symbolic link` }
    return { handler: file, refused: await regularFileProblem(file, path.relative(folder, file), null) }
  }
  return { handler: path.join(folder, rel), refused: `not graded: ${label} names ${JSON.stringify(entry)}, which is not in the folder` }
}

/**
 * Whether the way from `folder` down to `file` passes through a symbolic link: the first such
 * part (relative to the folder), null for none, undefined when a part is missing.
 */
async function linkOnTheWay (folder, file) {
  const parts = path.relative(folder, file).split(path.sep)
  let at = folder
  for (const [k, part] of parts.entries()) {
    at = path.join(at, part)
    const stat = await fs.promises.lstat(at).catch(function missing () { return undefined })
    if (stat === undefined) return undefined
    // the last part may be a link: regularFileProblem refuses it by name, unopened
    if (stat.isSymbolicLink() && k < parts.length - 1) return parts.slice(0, k + 1).join('/')
  }
  return null
}

/**
 * Why `file` is not a regular file the grader may read, or null when it is one: opened without
 * following a link and without waiting on a pipe, its descriptor checked, closed, nothing read.
 * @param {string} file
 * @param {string} label how the reason names it
 * @param {string|null} missing the reason when it does not exist (null: it exists, it was listed)
 */
async function regularFileProblem (file, label, missing) {
  let handle
  try {
    handle = await fs.promises.open(file, READ_FLAGS)
  } catch (err) {
    if (err.code === 'ENOENT' && missing !== null) return `not graded: ${missing}`
    if (err.code === 'ELOOP' || err.code === 'EMLINK') return `not graded: ${label} is a symbolic link, not a regular file`
    return `not graded: ${label} cannot be opened (${err.code ?? err.message})`
  }
  try {
    const stat = await handle.stat()
    if (!stat.isFile()) return `not graded: ${label} is ${kindOf(stat)}, not a regular file`
    if (stat.size > MAX_FILE_BYTES) return tooLarge(label)
    return null
  } finally {
    await handle.close()
  }
}

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
function withDeadline (promise, ms, what) {
  let timer
  const late = new Promise(function timeout (resolve, reject) {
    timer = setTimeout(function tooLate () { reject(notGradedError(`not graded: ${what} took longer than ${ms / 1000} s`)) }, ms)
  })
  promise.catch(function settledUnheard () {})
  return Promise.race([promise, late]).finally(function clear () { clearTimeout(timer) })
}

/** What an entry is, in words, from a Stats or a Dirent. */
function kindOf (entry) {
  if (entry.isSymbolicLink()) return 'a symbolic link'
  if (entry.isFIFO()) return 'a named pipe'
  if (entry.isSocket()) return 'a socket'
  if (entry.isCharacterDevice()) return 'a character device'
  if (entry.isBlockDevice()) return 'a block device'
  if (entry.isDirectory()) return 'a folder'
  return 'not a file or a folder'
}

function tooLarge (label) {
  return `not graded: ${label} is more than ${formatMiB(MAX_FILE_BYTES)}, the most a file may be`
}

function formatMiB (bytes) {
  return `${Math.round(bytes / MiB * 10) / 10} MiB`
}

/**
 * The lab's version: package.json's, with `+` and the git commit (12 hex
 * digits) when the lab is a git checkout, as semver writes build metadata:
 * `0.1.0+589b2ea1c3d4`.
 * @returns {Promise<string>}
 */
export async function labVersion () {
  const pkg = JSON.parse(await fs.promises.readFile(path.join(PROJECT_ROOT, 'package.json'), 'utf8'))
  const commit = await gitCommit()
  return commit === null ? pkg.version : `${pkg.version}+${commit.slice(0, 12)}`
}

/**
 * HEAD's commit, or null when git or the checkout is not there. Only the lab's own checkout:
 * installed as a package, the lab sits in another project's node_modules, whose commit is not the lab's.
 */
function gitCommit () {
  if (!fs.existsSync(path.join(PROJECT_ROOT, '.git'))) return Promise.resolve(null)
  return new Promise(function askGit (resolve) {
    execFile('git', ['rev-parse', 'HEAD'], { cwd: PROJECT_ROOT, timeout: GIT_TIMEOUT_MS }, function answered (err, stdout) {
      const commit = stdout?.trim()
      resolve(err || !/^[0-9a-f]{40}$/.test(commit ?? '') ? null : commit)
    })
  })
}
