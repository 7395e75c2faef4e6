/**
 * What a submission is and what identifies it: a `.js` file, or a folder
 * with an `index.js`, found in a class's folder; the sha256 digest of the
 * file (or of a folder's files); and the lab's version (package.json's, with
 * the git commit). The card and a class's rows carry both, so that a grade
 * can be traced to the exact bytes graded and the exact grader.
 */
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { PROJECT_ROOT } from '../../lib/config/options.js'

/** Folders a folder's digest leaves out: installed packages and version control, not the submission's own code. */
const NOT_HASHED = Object.freeze(['node_modules', '.git'])
const GIT_TIMEOUT_MS = 5000

/**
 * The submissions in a folder, in name order.
 * @param {string} folder
 * @returns {Promise<Array<{ name: string, path: string, handler: string }>>} `path` the file or folder,
 *   `handler` the module graded (the folder's index.js)
 */
export async function findSubmissions (folder) {
  const entries = await fs.promises.readdir(folder, { withFileTypes: true })
  const found = []
  for (const entry of entries) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue
    const full = path.join(folder, entry.name)
    if (entry.isFile() && entry.name.endsWith('.js')) {
      found.push({ name: entry.name.slice(0, -'.js'.length), path: full, handler: full })
    } else if (entry.isDirectory() && fs.existsSync(path.join(full, 'index.js'))) {
      found.push({ name: entry.name, path: full, handler: path.join(full, 'index.js') })
    }
  }
  return found.sort(function byName (a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0 })
}

/**
 * The sha256 of a file's bytes, as hex.
 * @param {string} file
 * @returns {Promise<string>}
 */
export async function fileDigest (file) {
  return createHash('sha256').update(await fs.promises.readFile(file)).digest('hex')
}

/**
 * The digest of a submission: a file's sha256; for a folder, the sha256 of
 * its files' list, one line per file in path order, `<sha256>  <path>` as
 * sha256sum(1) prints it, node_modules and .git left out.
 * @param {string} target a file or a folder
 * @returns {Promise<string>} hex
 */
export async function submissionDigest (target) {
  const stat = await fs.promises.stat(target)
  if (!stat.isDirectory()) return fileDigest(target)
  const files = await filesUnder(target)
  const lines = []
  for (const file of files) lines.push(`${await fileDigest(path.join(target, file))}  ${file}\n`)
  return createHash('sha256').update(lines.join('')).digest('hex')
}

/** Every regular file under `dir`, as paths relative to it with forward slashes, sorted. */
async function filesUnder (dir, prefix = '') {
  const out = []
  const entries = await fs.promises.readdir(path.join(dir, prefix), { withFileTypes: true })
  for (const entry of entries) {
    const rel = prefix === '' ? entry.name : `${prefix}/${entry.name}`
    if (entry.isDirectory()) {
      if (!NOT_HASHED.includes(entry.name)) out.push(...await filesUnder(dir, rel))
    } else if (entry.isFile()) {
      out.push(rel)
    }
  }
  return out.sort()
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

/** HEAD's commit, or null when git or the checkout is not there. */
function gitCommit () {
  return new Promise(function askGit (resolve) {
    execFile('git', ['rev-parse', 'HEAD'], { cwd: PROJECT_ROOT, timeout: GIT_TIMEOUT_MS }, function answered (err, stdout) {
      const commit = stdout?.trim()
      resolve(err || !/^[0-9a-f]{40}$/.test(commit ?? '') ? null : commit)
    })
  })
}
