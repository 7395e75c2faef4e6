/**
 * The lab's root folder (where its code and package.json are), and where what it writes goes. In a checkout the two are one
 * folder: `test-data/` beside the code. Installed as a package (`npm install streamlab`, the root inside a node_modules folder)
 * the code is npm's to replace and may not be writable: what it writes goes to `test-data/` under the folder it was started from,
 * which the `streamlab` command (bin/streamlab.js) names in STREAMLAB_DATA_DIR so that every process it starts (the lab, its
 * worker, a bench's children) writes to the same place.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

/** The environment variable that names the data folder (docs/install.md). */
export const DATA_DIR_ENV = 'STREAMLAB_DATA_DIR'

/** Whether the lab runs from an installed package: its root is inside a node_modules folder. */
export function isInstalled (root = PROJECT_ROOT) {
  return root.split(path.sep).includes('node_modules')
}

/**
 * The folder a command's own outputs go under by default (test-data/, a bench's reports/): the lab's root in a checkout, the
 * current folder when the lab is an installed package.
 */
export function outputRoot ({ root = PROJECT_ROOT, cwd = process.cwd() } = {}) {
  return isInstalled(root) ? path.resolve(cwd) : root
}

/**
 * Where everything the lab writes goes: STREAMLAB_DATA_DIR when it is set; else `test-data/` beside the code in a checkout, or
 * under the current folder when the lab is an installed package. An absolute path.
 */
export function defaultDataDir ({ root = PROJECT_ROOT, cwd = process.cwd(), env = process.env } = {}) {
  const named = env[DATA_DIR_ENV]
  if (typeof named === 'string' && named !== '') return path.resolve(cwd, named)
  return path.join(outputRoot({ root, cwd }), 'test-data')
}
