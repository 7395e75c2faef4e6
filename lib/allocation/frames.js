/**
 * Where an allocation was made, as a site: `{ functionName, file, line, column }`, the file project-relative when it is inside
 * the project. A site is the first frame outside Node's internals and this folder (or, for a sampler given `preferFiles`, the
 * first frame inside those folders, when the stack has one: a submission's line that called a library); where no such frame
 * exists (zlib allocates its output chunks from a threadpool callback, with no caller of the lab's on the stack), the first
 * `node:` frame.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { PROJECT_ROOT } from '../util/project-root.js'
import { UNKNOWN_SITE } from './site.js'

/** The sampler's own folder: its frames are never a site. */
const OWN_FOLDER = path.dirname(fileURLToPath(import.meta.url)) + path.sep

/**
 * A script's URL or path as a site names it: project-relative inside the project, the path elsewhere, `node:` names as they are,
 * null for none.
 */
export function siteFile (url) {
  if (typeof url !== 'string' || url === '') return null
  if (url.startsWith('node:')) return url
  let file = url
  if (url.startsWith('file:')) {
    try {
      file = fileURLToPath(url)
    } catch {
      return url
    }
  }
  const relative = path.relative(PROJECT_ROOT, file)
  if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) return file
  return relative.split(path.sep).join('/')
}

/** What a frame's script is: 'own' (this folder), 'node' (Node's internals), 'none' (no script: V8's own), or 'user'. */
export function frameKind (url) {
  if (typeof url !== 'string' || url === '') return 'none'
  if (url.startsWith('node:')) return 'node'
  const file = url.startsWith('file:') ? safePath(url) : url
  return file.startsWith(OWN_FOLDER) ? 'own' : 'user'
}

function safePath (url) {
  try {
    return fileURLToPath(url)
  } catch {
    return url
  }
}

/**
 * Whether a script's URL or path lies inside one of `folders` (absolute paths, each ending in the path separator: see
 * `preferredFolders`).
 */
export function inFolders (url, folders) {
  if (typeof url !== 'string' || url === '' || url.startsWith('node:')) return false
  const file = url.startsWith('file:') ? safePath(url) : url
  return folders.some(function holds (folder) { return file.startsWith(folder) })
}

/** Folders as `inFolders` takes them: absolute, each ending in the separator, or null for none. */
export function preferredFolders (folders) {
  if (folders === null || folders.length === 0) return null
  return folders.map(function withSeparator (folder) {
    const absolute = path.resolve(folder)
    return absolute.endsWith(path.sep) ? absolute : absolute + path.sep
  })
}

/**
 * The site of the stack `callSites` (V8's CallSite objects, innermost first, async frames included): the first frame inside
 * `prefer` (folders from `preferredFolders`) when one is on the stack, else the first user frame, else the first `node:` frame,
 * else the first frame.
 */
export function siteOfCallSites (callSites, prefer = null) {
  if (!Array.isArray(callSites) || callSites.length === 0) return UNKNOWN_SITE
  let chosen = prefer === null
    ? null
    : callSites.find(function preferred (callSite) { return inFolders(callSite.getFileName(), prefer) }) ?? null
  for (const callSite of chosen === null ? callSites : []) {
    const kind = frameKind(callSite.getFileName())
    if (kind === 'user') {
      chosen = callSite
      break
    }
    if (kind === 'node' && chosen === null) chosen = callSite
  }
  chosen ??= callSites[0]
  return {
    functionName: chosen.getFunctionName() || '(anonymous)',
    file: siteFile(chosen.getFileName()),
    line: chosen.getLineNumber() ?? null,
    column: chosen.getColumnNumber() ?? null
  }
}

/** Frames captured per sampled allocation: enough to climb out of Node's stream internals. */
const STACK_FRAMES = 12
/** Enough to climb out of a library too (raw-body under express), to the preferred folder's frame. */
const PREFERRING_STACK_FRAMES = 40

/** The stack of the code that called `wrapper`, as V8's CallSite objects; deeper when `preferring` some folders' frames. */
export function captureCallSites (wrapper, preferring) {
  const limit = Error.stackTraceLimit
  const prepare = Error.prepareStackTrace
  const holder = {}
  try {
    Error.stackTraceLimit = preferring ? PREFERRING_STACK_FRAMES : STACK_FRAMES
    Error.prepareStackTrace = keepCallSites
    Error.captureStackTrace(holder, wrapper)
    return holder.stack
  } finally {
    Error.stackTraceLimit = limit
    if (prepare === undefined) delete Error.prepareStackTrace
    else Error.prepareStackTrace = prepare
  }
}

/** Whether any of `recorders` prefers some folders' frames (a deeper stack is then captured). */
export function anyPrefers (recorders) {
  for (const recorder of recorders) {
    if (recorder.prefer !== null) return true
  }
  return false
}

function keepCallSites (error, callSites) {
  return callSites
}
