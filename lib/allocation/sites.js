/**
 * Where an allocation was made, as a site: `{ functionName, file, line, column }`, the file
 * project-relative when it is inside the project. A site is the first frame outside Node's
 * internals and this folder; where no such frame exists (zlib allocates its output chunks from
 * a threadpool callback, with no caller of the lab's on the stack), the first `node:` frame.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { PROJECT_ROOT } from '../util/project-root.js'

/** The sampler's own folder: its frames are never a site. */
const OWN_FOLDER = path.dirname(fileURLToPath(import.meta.url)) + path.sep

/**
 * A script's URL or path as a site names it: project-relative inside the project, the path
 * elsewhere, `node:` names as they are, null for none.
 * @param {string|null|undefined} url
 * @returns {string|null}
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
 * The site of the stack `callSites` (V8's CallSite objects, innermost first): the first user
 * frame, else the first `node:` frame, else the first frame.
 * @param {NodeJS.CallSite[]} callSites
 */
export function siteOfCallSites (callSites) {
  if (!Array.isArray(callSites) || callSites.length === 0) return UNKNOWN_SITE
  let chosen = null
  for (const callSite of callSites) {
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

export const UNKNOWN_SITE = Object.freeze({ functionName: '(unknown)', file: null, line: null, column: null })

/** One key per site and kind. */
export function siteKey (site, kind) {
  return `${kind}\u0000${site.file}\u0000${site.line}\u0000${site.column}\u0000${site.functionName}`
}
