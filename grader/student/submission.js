/** What a submission is: a .js, .mjs or .cjs file, or a folder naming its module; read as regular files only (student/README.md). */
import fs from 'node:fs'
import path from 'node:path'
import { MiB, formatMemory } from '../../lib/util/units.js'
import { MAX_FILE_BYTES, READ_DEADLINE_MS, READ_FLAGS, kindOf, tooLarge, withDeadline } from './digest.js'

/** The files a submission may be: an ES module or a CommonJS one, as Node tells them apart by name. */
export const SUBMISSION_EXTENSIONS = Object.freeze(['.js', '.mjs', '.cjs'])
/** A folder's module when its package.json names none, in the order they are looked for. */
const INDEX_FILES = Object.freeze(SUBMISSION_EXTENSIONS.map(function index (ext) { return `index${ext}` }))
/** A package.json is a few hundred bytes: past this it is not one to read. */
const PACKAGE_JSON_MAX_BYTES = MiB
/** The export conditions a package's "." entry is read with: Node's for import(), then CommonJS's. */
const CONDITIONS = Object.freeze(['node', 'import', 'default', 'require'])
const NO_ENTRY = 'a folder with no module to grade: no package.json naming one ("main", or "exports" ".") and no ' +
  'index.js, index.mjs or index.cjs'
/** What a skipped entry's reason ends with: what the grader would have taken. */
const SUBMISSION_IS = 'a submission is a .js, .mjs or .cjs file, or a folder with a package.json or an index.js'

/** Every entry of a class's folder in name order: a submission (`refused` why not graded), or `skipped` with why. Nothing runs. */
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

/** A folder's module as Node imports it (`exports` ".", `main`, index.*): inside the folder, regular, through no link. */
async function folderEntry (folder) {
  const manifest = await readPackageJson(folder)
  if (manifest.problem !== null) return { handler: path.join(folder, 'package.json'), refused: `not graded: ${manifest.problem}` }
  const pkg = manifest.pkg
  if (pkg !== null && pkg.exports !== undefined) {
    const entry = exportsEntry(pkg.exports)
    if (entry === null) return { handler: path.join(folder, 'package.json'), refused: 'not graded: its package.json\'s "exports" names ' +
      'no "." entry to import' }
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

/** A folder's package.json: `pkg` null when there is none, `problem` when it is not one to read. */
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
    const most = formatMemory(PACKAGE_JSON_MAX_BYTES)
    if (stat.size > PACKAGE_JSON_MAX_BYTES) return { pkg: null, problem: `package.json is more than ${most}` }
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

/** The path `exports` gives for ".", or null: a string, a subpath map's ".", or the first of CONDITIONS, arrays in order. */
export function exportsEntry (exports) {
  let target = exports
  const isMap = target !== null && typeof target === 'object' && !Array.isArray(target)
  if (isMap && Object.keys(target).some(function subpath (key) { return key.startsWith('.') })) {
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

/** `entry` inside `folder` with the first of `suffixes` that exists; refused outside it, through a link, or not regular. */
async function moduleInside (folder, entry, label, suffixes) {
  const rel = path.normalize(entry)
  if (path.isAbsolute(entry) || rel === '..' || rel.startsWith(`..${path.sep}`)) {
    return { handler: path.join(folder, 'package.json'), refused: `not graded: ${label} (${JSON.stringify(entry)}) leads outside the ` +
      `folder` }
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

/** The first part of the way from `folder` to `file` that is a link, null for none, undefined when a part is missing. */
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

/** Why `file` is not a regular file the grader may read (opened without following or waiting, nothing read), or null. */
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

