/** Node's own profilers (the fallback, and `snapshot` over IPC) around the lab, the load, its RSS from /proc. */
import fs from 'node:fs'
import path from 'node:path'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { formatDuration } from '../../lib/util/units.js'
import { startListeningProcess } from '../../lib/measure/lab-process.js'
import { readProcMemory, resetProcPeak } from '../../lib/metrics/proc-memory.js'
import { ROUTES, deleteUploadAnswered, progressLogger, runLoad } from './load.js'
import { HEAP_PROF_INTERVAL, MODES, SERVER, SNAPSHOT_TIMEOUT_MS, STOP_GRACE_MS, describePlan, labDataDir, shown } from './settings.js'

/** scripts/profile/server.js with Node flags, listening; stop() sends SIGINT, so the profilers write their files on the way out. */
export async function startProfileServer (nodeFlags, serverFlags = []) {
  const options = { ipc: true, stopSignal: 'SIGINT', graceMs: STOP_GRACE_MS }
  const lab = await startListeningProcess([...nodeFlags, SERVER, ...serverFlags], options)
  return { ...lab, pid: lab.child.pid }
}

/** Sample the server's RSS from /proc while the load runs: the fallback's own memory timeline. */
export function watchMemory (pid) {
  const idle = readProcMemory(pid)
  const peakReset = resetProcPeak(pid)
  const started = Date.now()
  const rows = []
  const timer = setInterval(function sample () {
    const memory = readProcMemory(pid)
    if (memory) rows.push([Date.now() - started, memory.rss, memory.peak])
  }, 250)
  return function stopWatching () {
    clearInterval(timer)
    const after = readProcMemory(pid)
    return {
      idleRss: idle?.rss ?? null,
      peakRss: idle && after && peakReset ? after.peak : null,
      csv: 'ms,rss_bytes,peak_rss_bytes\n' + rows.map(function line (row) { return row.join(',') }).join('\n') + '\n'
    }
  }
}

/** Node's own profilers around the lab: --heap-prof and/or --cpu-prof, written when it exits. */
export async function runNodeProfilers (args, body, log) {
  const profilers = MODES[args.mode].profilers
  const nodeFlags = []
  if (profilers.includes('heap')) nodeFlags.push('--heap-prof', `--heap-prof-dir=${args.out}`, `--heap-prof-interval=${HEAP_PROF_INTERVAL}`)
  if (profilers.includes('cpu')) nodeFlags.push('--cpu-prof', `--cpu-prof-dir=${args.out}`)
  const flags = nodeFlags.map(function relative (flag) { return flag.replace(PROJECT_ROOT + path.sep, '') })
  log(`starting: node ${flags.join(' ')} scripts/profile/server.js`)
  const lab = await startProfileServer(nodeFlags, ['--data-dir', labDataDir(args)])
  log(`the lab listens on ${lab.url} (pid ${lab.pid}); load: ${describePlan(args, body)}`)
  const stopWatching = watchMemory(lab.pid)
  let load
  let memory
  let exit
  try {
    load = await runLoad({ ...loadOptions(args, lab.url, body), onProgress: progressLogger(log) })
  } finally {
    memory = stopWatching()
    await fs.promises.writeFile(path.join(args.out, 'memory.csv'), memory.csv)
    log('stopping the lab (SIGINT): the profiles are written as it exits ...')
    exit = await lab.stop()
  }
  if (exit.killed || exit.code !== 0) {
    log(`the lab did not exit cleanly (${exit.signal ?? `code ${exit.code}`}): profiles may be missing\n${lab.output()}`)
  }
  return { load, memory }
}

/** Heap snapshots before, during and after the load, over IPC: no endpoint, no signal race. */
export async function runSnapshots (args, body, log) {
  log('starting: node scripts/profile/server.js --snapshot-dir ' + shown(args.out))
  const lab = await startProfileServer([], ['--snapshot-dir', args.out, '--data-dir', labDataDir(args)])
  log(`the lab listens on ${lab.url} (pid ${lab.pid}); load: ${describePlan(args, body)}`)
  const snapshots = []
  function snapshot (label, idleWaitMs = 0) {
    log(`writing heap snapshot "${label}" (the lab stops while it is written) ...`)
    return new Promise(function waitForSnapshot (resolve, reject) {
      const timer = setTimeout(function tooSlow () {
        lab.child.removeListener('message', onMessage)
        reject(new Error(`heap snapshot "${label}" took more than ${SNAPSHOT_TIMEOUT_MS / 1000} s`))
      }, SNAPSHOT_TIMEOUT_MS)
      function onMessage (message) {
        if (message?.label !== label) return
        clearTimeout(timer)
        lab.child.removeListener('message', onMessage)
        if (message.type === 'snapshot-written') {
          log(`  ${shown(message.file)} in ${formatDuration(message.ms)}, ${message.inFlight} request(s) in flight`)
          snapshots.push(message)
          resolve(message)
        } else {
          reject(new Error(`heap snapshot "${label}" failed: ${message.message}`))
        }
      }
      lab.child.on('message', onMessage)
      lab.child.send({ type: 'snapshot', label, idleWaitMs })
    })
  }
  const stopWatching = watchMemory(lab.pid)
  let load
  let memory
  try {
    // one request first, so the lazy parts of the lab (parsers, pools) are in every picture alike
    const warm = await fetch(new URL(ROUTES[args.route].path, lab.url), {
      method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body
    })
    await deleteUploadAnswered(await warm.text(), labDataDir(args))
    log(`warm-up request: ${warm.status}`)
    await snapshot('before-load')
    let during = null
    load = await runLoad({
      ...loadOptions(args, lab.url, body),
      onProgress: progressLogger(log),
      onMidway: function snapshotAtPeak () {
        during = snapshot('during-load')
        // reported after the load, not as an unhandled rejection now
        during.catch(function later () {})
      }
    })
    if (during) await during
    // autocannon stops at the deadline with requests still being worked on: wait for them
    await snapshot('after-load', SNAPSHOT_TIMEOUT_MS / 2)
  } finally {
    memory = stopWatching()
    await fs.promises.writeFile(path.join(args.out, 'memory.csv'), memory.csv)
    const exit = await lab.stop()
    if (exit.killed || exit.code !== 0) log(`the lab did not exit cleanly (${exit.signal ?? `code ${exit.code}`})\n${lab.output()}`)
  }
  return { load, memory }
}

/** runLoad's options from the command line's. */
export function loadOptions (args, url, body) {
  const { route, connections, duration, amount } = args
  return { url, route, body, connections, duration, amount, dataDir: labDataDir(args) }
}

