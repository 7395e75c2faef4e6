/**
 * The lab as a user starts it (`node server.js`, default flags), watched from outside: its worker's
 * RSS from /proc, crashes from the supervisor's lines, requests in flight from GET /metrics, its
 * data directory weighed and, when it is the shared default one, put back as it was.
 */
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { listUploads, removeDeadParts, removeUploads } from '../../experiments/upload/server.js'
import { SAVE_FILE_NAMES } from '../../lib/generate/items.js'
import { readProcMemory, resetProcPeak } from '../../lib/metrics/proc-memory.js'
import { startListeningProcess } from '../../lib/measure/lab-process.js'

const SERVER = path.join(PROJECT_ROOT, 'server.js')
const WORKER_PID = /worker pid (\d+)/g
/** What server.js prints about a crash (worker N killed: ... / died of ... / exited with ...). */
const CRASH_LINE = /streamlab: worker (\d+) (killed|died of|exited with)[^\n]*/g
/** A supervisor that stops restarting its worker says so. */
const GAVE_UP = /giving up/
const START_TIMEOUT_MS = 30_000
const STOP_GRACE_MS = 3000
/** Backups of the lab's saved documents, beside them; never counted as the lab's bytes. */
const BACKUP_SUFFIX = '.hostile-backup'

/** Whether server.js takes `--data-dir`: then each attack gets a temporary data directory, else the lab writes to test-data/. */
export async function serverTakesDataDir () {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [SERVER, '--help-all'], { cwd: PROJECT_ROOT, timeout: 10_000 })
    return /--data-dir\b/.test(stdout)
  } catch {
    return false
  }
}

/** `node server.js --port 0 --host 127.0.0.1 [--data-dir DIR] ...flags`, listening; throws when it exits or does not listen in time. */
export async function startHostileLab ({ flags = [], dataDir = null } = {}) {
  const args = [SERVER, '--port', '0', '--host', '127.0.0.1', ...(dataDir ? ['--data-dir', dataDir] : []), ...flags]
  // its output is kept for the whole run: crashes and restarts are told there
  const lab = await startListeningProcess(args, { timeoutMs: START_TIMEOUT_MS, graceMs: STOP_GRACE_MS })
  function workerPids () {
    return [...lab.output().matchAll(WORKER_PID)].map(function pid (m) { return Number(m[1]) })
  }
  return {
    url: lab.url,
    output: lab.output,
    /** SIGTERM (the supervisor stops its worker), SIGKILL if it hangs. */
    stop: lab.stop,
    /** Every worker pid the supervisor has named, first to latest. */
    workerPids,
    /** The worker now serving (the latest named). */
    workerPid: function workerPid () { return workerPids().at(-1) ?? null },
    /** Whether the supervisor still runs. */
    alive: function alive () { return lab.child.exitCode === null && lab.child.signalCode === null }
  }
}

/**
 * The crashes in a stretch of the supervisor's output. server.js may tell one crash twice, so a
 * crash is a worker pid named in a crash line; a new worker pid in the stretch counts too, in case
 * the crash lines' wording changes.
 */
export function readCrashes (output) {
  const matches = [...output.matchAll(CRASH_LINE)]
  const crashedPids = [...new Set(matches.map(function pid (m) { return Number(m[1]) }))]
  const newPids = [...new Set([...output.matchAll(WORKER_PID)].map(function pid (m) { return Number(m[1]) }))]
  return {
    kills: Math.max(crashedPids.length, newPids.length),
    lines: matches.map(function line (m) { return m[0].trim() }),
    crashedPids,
    newPids,
    gaveUp: GAVE_UP.test(output)
  }
}

/** The memory budget the supervisor announced ("memory budget 5.88 GiB", "no memory budget"), or null. */
export function readBudget (output) {
  return /\(worker pid \d+, ([^)]*budget[^)]*)\)/.exec(output)?.[1] ?? null
}

/** The worker's RSS now: the median of a few reads 50 ms apart, so one read during a collection does not set the baseline. */
export async function idleRss (lab) {
  const reads = []
  for (let k = 0; k < 5; k++) {
    const memory = readProcMemory(lab.workerPid())
    if (memory) reads.push(memory.rss)
    await sleep(50)
  }
  reads.sort(function ascending (a, b) { return a - b })
  return reads.length > 0 ? reads[reads.length >> 1] : null
}

/**
 * The serving worker's VmRSS and VmHWM from /proc every `everyMs` until stop(). The kernel's peak is
 * reset first (and for each new worker), so a peak shorter than a sampling gap is still seen, unless
 * the lab resets it itself in between (it does per lone request).
 */
export function sampleRss (lab, everyMs) {
  const started = performance.now()
  const reset = new Set()
  const points = []
  let maxRss = null
  let maxHwm = null
  function sample () {
    const pid = lab.workerPid()
    if (pid === null) return
    if (!reset.has(pid)) {
      reset.add(pid)
      resetProcPeak(pid)
    }
    const memory = readProcMemory(pid)
    if (memory === null) return // between workers
    maxRss = Math.max(maxRss ?? 0, memory.rss)
    maxHwm = Math.max(maxHwm ?? 0, memory.peak)
    points.push({ s: (performance.now() - started) / 1000, rss: memory.rss })
  }
  sample()
  const timer = setInterval(sample, everyMs)
  timer.unref()
  return {
    stop: function stopSampling () {
      clearInterval(timer)
      sample()
      const peakRss = maxRss === null ? null : Math.max(maxRss, maxHwm ?? 0)
      return { peakRss, maxRss, maxHwm, samples: points.length, points }
    }
  }
}

/** Ask GET /metrics (JSON) for `requestsInFlight` until it is 0 or `settleMs` has passed. */
export async function settleInFlight (clients, url, settleMs) {
  const started = performance.now()
  for (;;) {
    const answer = await clients.request(`${url}/metrics`, { headers: { accept: 'application/json' }, timeoutMs: 2000 })
    const count = answer.body?.requestsInFlight
    const last = Number.isInteger(count)
      ? { requestsInFlight: count, error: null }
      : { requestsInFlight: null, error: answer.error ?? `status ${answer.status}` }
    const waitedMs = Math.round(performance.now() - started)
    if (last.requestsInFlight === 0 || waitedMs >= settleMs) return { ...last, waitedMs }
    await sleep(250)
  }
}

/** Bytes of the files under `dir` (sizes, not blocks), our backups left out, files that vanish meanwhile skipped. */
export async function bytesUnder (dir) {
  let entries
  try {
    entries = await fs.promises.readdir(dir, { withFileTypes: true })
  } catch (err) {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return 0
    throw err
  }
  let total = 0
  for (const entry of entries) {
    const file = path.join(dir, entry.name)
    if (entry.isDirectory()) total += await bytesUnder(file)
    else if (entry.isFile() && !entry.name.endsWith(BACKUP_SUFFIX)) {
      try {
        total += (await fs.promises.lstat(file)).size
      } catch (err) {
        if (err.code !== 'ENOENT') throw err
      }
    }
  }
  return total
}

/** The bytes under `dir` once two reads 500 ms apart agree, or `settleMs` has passed (a cancelled save's temp file goes a moment later). */
export async function settleBytes (dir, settleMs) {
  const started = performance.now()
  let bytes = await bytesUnder(dir)
  for (;;) {
    const waitedMs = Math.round(performance.now() - started)
    if (waitedMs >= settleMs) return { bytes, waitedMs }
    await sleep(500)
    const again = await bytesUnder(dir)
    if (again === bytes) return { bytes, waitedMs: Math.round(performance.now() - started) }
    bytes = again
  }
}

/**
 * What is in the shared data directory before an attack, so that restore(workerPids) can remove what
 * the lab adds (new uploads, our workers' parts and temp files, a PGlite directory, a saved document
 * it replaced, kept meanwhile as a hard link) and answer what it removed.
 */
export async function guardDataDir (dataDir) {
  const uploadsBefore = new Set(await listUploads(dataDir))
  const pglite = path.join(dataDir, 'pglite')
  const pgliteExisted = fs.existsSync(pglite)
  const saved = []
  for (const name of Object.values(SAVE_FILE_NAMES)) {
    const file = path.join(dataDir, name)
    const backup = file + BACKUP_SUFFIX
    let kept = false
    if (fs.existsSync(file)) {
      await fs.promises.rm(backup, { force: true })
      await fs.promises.link(file, backup)
      kept = true
    }
    saved.push({ file, backup, kept })
  }
  return {
    restore: async function restoreDataDir (workerPids) {
      const removed = []
      const added = (await listUploads(dataDir)).filter(function isNew (name) { return !uploadsBefore.has(name) })
      const finished = added.filter(function isUpload (name) { return name.endsWith('.upload') })
      await removeUploads(dataDir, finished)
      removed.push(...finished.map(function shown (name) { return path.join('uploads', name) }))
      removed.push(...(await removeDeadParts(dataDir)).map(function shown (name) { return path.join('uploads', name) }))
      for (const { file, backup, kept } of saved) {
        if (kept) await fs.promises.rename(backup, file)
        else if (fs.existsSync(file)) {
          await fs.promises.rm(file, { force: true })
          removed.push(path.basename(file))
        }
      }
      removed.push(...await removeWorkerTempFiles(dataDir, workerPids))
      if (!pgliteExisted && fs.existsSync(pglite)) {
        await fs.promises.rm(pglite, { recursive: true, force: true })
        removed.push('pglite/')
      }
      return removed
    }
  }
}

/** Temp files of saves our workers did not finish (lib/util/atomic-file.js names them `.<name>.<pid>.<hex>.tmp`). */
async function removeWorkerTempFiles (dataDir, workerPids) {
  const removed = []
  const names = fs.existsSync(dataDir) ? await fs.promises.readdir(dataDir) : []
  for (const name of names) {
    const match = /^\..+\.(\d+)\.[0-9a-f]+\.tmp$/.exec(name)
    if (match === null || !workerPids.includes(Number(match[1]))) continue
    await fs.promises.rm(path.join(dataDir, name), { force: true })
    removed.push(name)
  }
  return removed
}
