/** How the student's process is launched: its own folder, a socket handed over as fd 3, the isolated command, a bare environment. */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { PORTABLE_ENV } from '../../lib/util/platform.js'
import { chooseIsolation, isolatedCommand, notGradedError } from './isolation.js'
import { LabCopy } from './lab-copy.js'
import { ALLOW_PACKAGES_IMPORT } from './packages.js'
import { copySubmission } from './readable-copy.js'

const CHILD = fileURLToPath(new URL('./student-child.js', import.meta.url))

/**
 * Spawn the student's process in a process group of its own; the caller removes `tmpDir`, `copyDir` and `ownLabCopy`.
 * `code` 'NOT_GRADED' when it would run as root.
 */
export async function launchStudent ({ handler, host, isolation: layers, labCopy = null, sampled = false }) {
  const isolation = chooseIsolation({ handler, ...layers })
  const submission = isolation.scope
  if (isolation.notGraded !== null) throw notGradedError(isolation.notGraded)
  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-student-'))
  let copyDir = null
  let ownLabCopy = null
  try {
    let scope = isolation.scope
    let lab = null
    let placed = null
    if (isolation.labCopy) {
      // its user reads the lab's code from a copy it may read, wherever the checkout is
      lab = labCopy ?? (ownLabCopy = new LabCopy())
      // a submission inside the lab goes to its place in the copy, where its imports of the lab resolve
      placed = lab.place(scope, path.resolve(handler))
    }
    if (placed !== null) ({ scope, handler } = placed)
    else if (isolation.copy) {
      // the student's user cannot read the submission as it is (a mode-0600 file, say): it runs a copy it can
      copyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-submission-'))
      const copied = copySubmission(scope, path.resolve(handler), copyDir)
      scope = copied.scope
      handler = copied.handler
    }
    const labRoot = lab === null ? PROJECT_ROOT : lab.root()
    if (isolation.uid !== null) fs.chownSync(tmpDir, isolation.uid, isolation.uid)
    const listener = await openListener(host)
    const fd = listener._handle?.fd
    const handOver = Number.isInteger(fd) && fd > 2
    const port = listener.address().port
    if (!handOver) {
      // no descriptor to hand over (Windows): name the port, and run in the grader's network
      await new Promise(function closed (resolve) { listener.close(resolve) })
      isolation.facts.network = 'shared'
    }
    const sites = sampled ? sitesOptions(tmpDir, scope) : null
    const { command, args } = isolatedCommand(isolation, {
      script: inLab(labRoot, CHILD),
      args: [path.resolve(handler), ...(handOver ? ['--listen-fd', '3'] : ['--port', String(port), '--host', host]),
        ...(sites?.args ?? [])],
      scope,
      tmpDir,
      nodeFlags: ['--expose-gc'],
      // a handler outside the lab finds the allowed packages in the lab's node_modules
      preload: outside(labRoot, handler) && fs.existsSync(ALLOW_PACKAGES_IMPORT) ? [inLab(labRoot, ALLOW_PACKAGES_IMPORT)] : [],
      lab: lab?.reads()
    })
    const child = spawn(command, args, {
      // a process group of its own, so that the whole tree can be signalled at once
      detached: true,
      cwd: tmpDir,
      env: childEnv(tmpDir),
      stdio: ['pipe', 'pipe', 'pipe', ...(handOver ? [fd] : [])]
    })
    // the child holds its own copy of the socket now: the grader accepts nothing on it
    if (handOver) listener.close()
    return {
      child,
      command,
      port,
      url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
      root: { pid: child.pid, pgid: child.pid, uid: isolation.uid },
      facts: isolation.facts,
      tmpDir,
      copyDir,
      ownLabCopy,
      sites: sites === null ? null : { file: sites.file, labRoot, scope, submission }
    }
  } catch (err) {
    fs.rmSync(tmpDir, { recursive: true, force: true })
    if (copyDir !== null) fs.rmSync(copyDir, { recursive: true, force: true })
    ownLabCopy?.close()
    throw err
  }
}

/** The child's allocation-site arguments: the table in its folder, the submission's folder preferred for a frame. */
function sitesOptions (tmpDir, scope) {
  const file = path.join(tmpDir, 'allocation-sites.json')
  const folder = fs.statSync(scope).isDirectory() ? scope : path.dirname(scope)
  return { file, args: ['--allocation-sites', file, '--prefer', folder] }
}

/** A file of the checkout's, in the lab the process runs (the checkout, or the run's copy of it). */
function inLab (labRoot, file) {
  return path.join(labRoot, path.relative(PROJECT_ROOT, file))
}

/** Whether the handler's file lies outside the lab, where the lab's packages cannot be found from it. */
function outside (labRoot, handler) {
  let file
  try {
    file = fs.realpathSync(path.resolve(handler))
  } catch {
    return false
  }
  const relative = path.relative(fs.realpathSync(labRoot), file)
  return relative.startsWith('..') || path.isAbsolute(relative)
}

/** A listening socket on a free port, opened by the grader. */
function openListener (host) {
  return new Promise(function listen (resolve, reject) {
    const listener = net.createServer()
    // nothing connects before the handover; if something did, it is not the grader
    listener.on('connection', function notOurs (socket) { socket.destroy() })
    listener.once('error', reject)
    listener.listen({ port: 0, host, exclusive: true }, function listening () { resolve(listener) })
  })
}

/** Only what a Node program needs: the grader's environment (tokens, NODE_OPTIONS) stays with the grader. */
function childEnv (tmpDir) {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpDir, TMPDIR: tmpDir, LANG: 'C.UTF-8' }
  if (process.env[PORTABLE_ENV] !== undefined) env[PORTABLE_ENV] = process.env[PORTABLE_ENV]
  return env
}
