/**
 * How the student's process is started apart: the command line that wraps
 * `node grader/student/student-child.js` in the isolation this machine has,
 * and the facts the card states about it. The layers: Node's permission
 * model (reads of the project's code, the handler's folder and a temporary
 * folder; writes of the latter only), a user of its own and a network
 * namespace of its own (Linux, as root), and death with the grader.
 * docs/grading-isolation.md says what each layer guards and what it does not.
 * The machine's facts are probed once per process.
 */
import { spawnSync } from 'node:child_process'
import { randomInt } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { DEFAULTS, PROJECT_ROOT } from '../../lib/config/options.js'

/** The range the student's user is drawn from: far above any account a system hands out. */
const UID_FIRST = 1_500_000_000
const UID_COUNT = 100_000_000
const PROBE_TIMEOUT_MS = 5000

/** What the student's process may not read of the project: its history, and the data folder (the run's bodies, the reports). */
const PROJECT_UNREAD = Object.freeze(['.git', path.relative(PROJECT_ROOT, DEFAULTS.dataDir).split(path.sep)[0]])

const probes = new Map()

/**
 * @typedef {{ permission: string|null, user: number|null, network: 'own namespace'|'shared',
 *   parentDeath: 'SIGKILL'|'stdin closes', notes: string[] }} IsolationFacts
 *   `permission`: the flag that turned Node's permission model on, null when this Node has none;
 *   `user`: the uid the process runs as, null when it runs as the grader's; `notes`: why a layer is off
 */

/**
 * The isolation to use, decided from what the machine offers and what the caller allows.
 * @param {{ handler: string, user?: boolean, network?: boolean }} options `user`, `network`:
 *   false turns that layer off (both on by default where they can be had)
 * @returns {{ facts: IsolationFacts, uid: number|null }}
 */
export function chooseIsolation ({ handler, user = true, network = true }) {
  const notes = []
  const permission = permissionFlag()
  if (permission === null) notes.push(`Node ${process.version} has no permission model: the process may write files and start processes`)
  const root = typeof process.getuid === 'function' && process.getuid() === 0
  const linux = process.platform === 'linux'
  let uid = null
  if (user && linux && root) {
    if (!hasTool('setpriv')) notes.push('no user of its own: setpriv(1) is missing')
    else if (!readableByOthers(handler)) notes.push(`no user of its own: ${handler} is not readable by other users`)
    else if (!readableByOthers(path.join(PROJECT_ROOT, 'node_modules'))) notes.push('no user of its own: the project\'s node_modules is not readable by other users')
    else uid = UID_FIRST + randomInt(UID_COUNT)
  } else if (user && linux) {
    notes.push('no user of its own: the grader does not run as root')
  }
  let ownNetwork = false
  if (network && linux && root) {
    if (canUnshareNetwork()) ownNetwork = true
    else notes.push('no network namespace of its own: unshare --net is not allowed here')
  } else if (network && linux) {
    notes.push('no network namespace of its own: the grader does not run as root')
  }
  return {
    uid,
    facts: {
      permission,
      user: uid,
      network: ownNetwork ? 'own namespace' : 'shared',
      parentDeath: linux && hasTool('setpriv') ? 'SIGKILL' : 'stdin closes',
      notes
    }
  }
}

/**
 * The command line: wrappers (unshare, setpriv) that exec in place, so the
 * pid the grader gets is node's, then node with the permission flags.
 * @param {{ facts: IsolationFacts, uid: number|null }} isolation from chooseIsolation
 * @param {{ script: string, args: string[], handler: string, tmpDir: string, nodeFlags: string[], preload?: string[] }} what
 *   `preload`: modules node imports first (`--import`)
 * @returns {{ command: string, args: string[] }}
 */
export function isolatedCommand ({ facts, uid }, { script, args, handler, tmpDir, nodeFlags, preload = [] }) {
  const imports = preload.flatMap(function importFirst (file) { return ['--import', file] })
  const node = [process.execPath, ...nodeFlags, ...permissionArgs(facts.permission, handler, tmpDir, preload.length > 0), ...imports, script, ...args]
  let line = node
  if (facts.parentDeath === 'SIGKILL' || uid !== null) {
    const setpriv = ['setpriv']
    if (uid !== null) setpriv.push('--reuid', String(uid), '--regid', String(uid), '--clear-groups')
    // after the change of user: a change of credentials clears the parent-death signal
    setpriv.push('--no-new-privs', '--pdeathsig', 'SIGKILL', '--')
    line = [...setpriv, ...line]
  }
  if (facts.network === 'own namespace') line = ['unshare', '--net', '--', ...line]
  return { command: line[0], args: line.slice(1) }
}

/**
 * The permission flags: reads of the project's modules, the handler's
 * folder and the temporary folder; writes of the temporary folder; nothing else.
 */
function permissionArgs (flag, handler, tmpDir, hooks) {
  if (flag === null) return []
  const reads = [...projectReads(), path.dirname(handler), tmpDir]
  const args = [flag]
  for (const read of new Set(reads.map(realOrSame))) args.push(`--allow-fs-read=${read}`)
  args.push(`--allow-fs-write=${realOrSame(tmpDir)}`)
  // module.register() runs resolve hooks on a thread of their own, which the permission model counts as a worker
  if (hooks) args.push('--allow-worker')
  if (process.allowedNodeEnvironmentFlags.has('--disable-warning')) args.push('--disable-warning=ExperimentalWarning')
  return args
}

/** Every top-level entry of the project but those it may not read. */
function projectReads () {
  let names
  try {
    names = fs.readdirSync(PROJECT_ROOT)
  } catch {
    return []
  }
  return names.filter(function readable (name) { return !PROJECT_UNREAD.includes(name) }).map(function inProject (name) { return path.join(PROJECT_ROOT, name) })
}

/** `--permission` (Node 22 on), `--experimental-permission` (Node 20), or null. */
function permissionFlag () {
  if (process.allowedNodeEnvironmentFlags.has('--permission')) return '--permission'
  if (process.allowedNodeEnvironmentFlags.has('--experimental-permission')) return '--experimental-permission'
  return null
}

/**
 * Whether a user with no rights of its own may read `file`: every folder on
 * the way searchable by others, the file (or folder) readable by others.
 * @param {string} file
 */
function readableByOthers (file) {
  let at = realOrSame(path.resolve(file))
  try {
    if ((fs.statSync(at).mode & 0o004) === 0) return false
  } catch {
    return false
  }
  for (;;) {
    const parent = path.dirname(at)
    if (parent === at) return true
    at = parent
    try {
      if ((fs.statSync(at).mode & 0o001) === 0) return false
    } catch {
      return false
    }
  }
}

function canUnshareNetwork () {
  return probe('unshare --net', function tryUnshare () {
    return spawnSync('unshare', ['--net', '--', process.execPath, '-e', ''], { stdio: 'ignore', timeout: PROBE_TIMEOUT_MS }).status === 0
  })
}

function hasTool (name) {
  return probe(name, function tryTool () {
    return spawnSync(name, ['--version'], { stdio: 'ignore', timeout: PROBE_TIMEOUT_MS }).status === 0
  })
}

function probe (name, test) {
  if (!probes.has(name)) probes.set(name, test())
  return probes.get(name)
}

function realOrSame (file) {
  try {
    return fs.realpathSync(file)
  } catch {
    return file
  }
}
