/** How the student's process is started apart, and the facts the card states (student/README.md, docs/grading-isolation.md). */
import { spawnSync } from 'node:child_process'
import { randomInt } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { ALLOWED_PACKAGES } from './packages.js'

/** The range the student's user is drawn from: far above any account a system hands out. */
const UID_FIRST = 1_500_000_000
const UID_COUNT = 100_000_000
const PROBE_TIMEOUT_MS = 5000

/** What the student's process may read of the lab beside node_modules: what its child imports, the exercises, the generators. */
export const LAB_PARTS = Object.freeze(['package.json', 'lib', 'grader/student', 'exercises', 'generators'])
/** CPU seconds the student's process may use in all (RLIMIT_CPU): only a process that spins meets it. */
export const CPU_SECONDS = 900
const CPU_HARD_MARGIN = 5
/** The most files a submission folder is looked through, to see if its user can read them. */
const SCOPE_WALK_MAX = 10_000
/** Never looked through or copied in a submission folder: its own packages and history are not what is graded. */
export const NOT_COPIED = Object.freeze(['node_modules', '.git'])

const probes = new Map()

/**
 * @typedef {{ permission: string|null, user: number|null, network: 'own namespace'|'shared',
 *   parentDeath: 'SIGKILL'|'stdin closes', cpuSeconds: number|null, copied: boolean, labCopy: boolean, notes: string[] }} IsolationFacts
 *   `permission`: the flag that turned Node's permission model on; `copied`: the submission ran from a copy
 */

/** The isolation to use from what the machine offers and the caller allows; `notGraded`: why it must not run (as root). */
export function chooseIsolation ({ handler, submission, user = true, network = true }) {
  const notes = []
  const permission = permissionFlag()
  if (permission === null) notes.push(`Node ${process.version} has no permission model: the process may write files and start processes`)
  const root = typeof process.getuid === 'function' && process.getuid() === 0
  const linux = process.platform === 'linux'
  const scope = path.resolve(submission ?? path.dirname(handler))
  let uid = null
  let copy = false
  let labCopy = false
  let notGraded = null
  if (linux && root) {
    // as root, a submission runs as a user of its own or not at all: as root it could signal the grader
    if (!user) notGraded = 'not graded: the grader runs as root and its user layer was turned off, and a submission never runs as root'
    else if (!hasTool('setpriv')) notGraded = 'not graded: setpriv(1) is missing, so the submission would run as root'
    else {
      uid = UID_FIRST + randomInt(UID_COUNT)
      copy = !readableByOthers(handler) || !allReadableByOthers(scope)
      labCopy = true
    }
  } else if (user && linux) {
    notes.push('no user of its own: the grader does not run as root (the process runs as the grader\'s user, and could signal it)')
  }
  let ownNetwork = false
  if (network && linux && root) {
    if (canUnshareNetwork()) ownNetwork = true
    else notes.push('no network namespace of its own: unshare --net is not allowed here')
  } else if (network && linux) {
    notes.push('no network namespace of its own: the grader does not run as root')
  }
  const cpuSeconds = linux && hasTool('prlimit') ? CPU_SECONDS : null
  if (cpuSeconds === null) notes.push('no CPU-time limit: prlimit(1) is missing (only the budget and the timeouts ' +
    'hold a process that spins)')
  return {
    uid,
    scope,
    copy,
    labCopy,
    notGraded,
    facts: {
      permission,
      user: uid,
      network: ownNetwork ? 'own namespace' : 'shared',
      parentDeath: linux && hasTool('setpriv') ? 'SIGKILL' : 'stdin closes',
      cpuSeconds,
      copied: copy,
      labCopy,
      notes
    }
  }
}

/** The error of a submission the grader will not run: a class run makes it the submission's row, not its own failure. */
export function notGradedError (reason) {
  const err = new Error(reason)
  err.code = 'NOT_GRADED'
  err.reason = reason
  return err
}

/** The command line: wrappers that exec in place (so the pid is node's), then node with the permission flags. */
export function isolatedCommand ({ facts, uid }, { script, args, scope, tmpDir, nodeFlags, preload = [], lab = projectReads() }) {
  const imports = preload.flatMap(function importFirst (file) { return ['--import', file] })
  const permissions = permissionArgs(facts.permission, [...lab, scope, tmpDir], tmpDir, preload.length > 0)
  const node = [process.execPath, ...nodeFlags, ...permissions, ...imports, script, ...args]
  let line = node
  if (facts.parentDeath === 'SIGKILL' || uid !== null) {
    const setpriv = ['setpriv']
    if (uid !== null) setpriv.push('--reuid', String(uid), '--regid', String(uid), '--clear-groups')
    // after the change of user: a change of credentials clears the parent-death signal
    setpriv.push('--no-new-privs', '--pdeathsig', 'SIGKILL', '--')
    line = [...setpriv, ...line]
  }
  // a limit set before the change of user holds after it: the process cannot raise its hard limit
  if (facts.cpuSeconds !== null) line = ['prlimit', `--cpu=${facts.cpuSeconds}:${facts.cpuSeconds + CPU_HARD_MARGIN}`, '--', ...line]
  if (facts.network === 'own namespace') line = ['unshare', '--net', '--', ...line]
  return { command: line[0], args: line.slice(1) }
}

/** The permission flags: reads of the lab's code, the submission and the temporary folder; writes of the latter only. */
function permissionArgs (flag, reads, tmpDir, hooks) {
  if (flag === null) return []
  const args = [flag]
  for (const read of new Set(reads.map(realOrSame))) args.push(`--allow-fs-read=${read}`)
  args.push(`--allow-fs-write=${realOrSame(tmpDir)}`)
  // module.register() runs resolve hooks on a thread of their own, which the permission model counts as a worker
  if (hooks) args.push('--allow-worker')
  if (process.allowedNodeEnvironmentFlags.has('--disable-warning')) args.push('--disable-warning=ExperimentalWarning')
  return args
}

/** The checkout's code the process may read: LAB_PARTS, node_modules, and where the packages really resolve (docs/install.md). */
function projectReads () {
  const paths = [...LAB_PARTS, 'node_modules'].map(inProject)
  for (const name of ['express', ...ALLOWED_PACKAGES]) {
    try {
      const file = fileURLToPath(import.meta.resolve(name))
      const parts = file.split(path.sep)
      const at = parts.lastIndexOf('node_modules')
      if (at > 0) paths.push(parts.slice(0, at + 1).join(path.sep))
    } catch {
      // not installed: the child fails to import it and says so
    }
  }
  return [...new Set(paths)].filter(function exists (file) { return fs.existsSync(file) })
}

function inProject (name) {
  return path.join(PROJECT_ROOT, name)
}

/** Whether others may read all under `scope` (node_modules and .git aside), within SCOPE_WALK_MAX entries (else false). */
function allReadableByOthers (scope) {
  if (!readableByOthers(scope)) return false
  let seen = 0
  const stack = [scope]
  while (stack.length > 0) {
    const at = stack.pop()
    let stat
    try {
      stat = fs.lstatSync(at)
    } catch {
      return false
    }
    if (++seen > SCOPE_WALK_MAX) return false
    if (stat.isSymbolicLink()) continue
    const wanted = stat.isDirectory() ? 0o005 : 0o004
    if ((stat.mode & wanted) !== wanted) return false
    if (!stat.isDirectory()) continue
    for (const name of fs.readdirSync(at)) {
      if (!NOT_COPIED.includes(name)) stack.push(path.join(at, name))
    }
  }
  return true
}

/** `--permission` (Node 22 on), `--experimental-permission` (Node 20), or null. */
function permissionFlag () {
  if (process.allowedNodeEnvironmentFlags.has('--permission')) return '--permission'
  if (process.allowedNodeEnvironmentFlags.has('--experimental-permission')) return '--experimental-permission'
  return null
}

/** Whether a user with no rights of its own may read `file`: every folder on the way searchable, it readable. */
export function readableByOthers (file) {
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
