/** The demos' lab: started, stopped with a check that nothing it started is left, its restart line, and a browser on it. */
import { spawn } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { startLabProcess } from '../../lib/measure/lab-process.js'
import { processAlive } from '../../lib/util/process-alive.js'

/**
 * The lab runs as a container would, under a memory budget, with /bad's inflate limit taken away
 * (--unsafe-bad), so that a zip bomb really kills a worker; the other steps stay well under it.
 */
export const BUDGET = '512MiB'

/** The lab on `port`; a port taken is said on `term`, and the lab takes a free one. */
export async function startLab (port, term) {
  const flags = ['--unsafe-bad', '--memory-limit', BUDGET]
  try {
    return await startLabProcess(['--port', String(port), ...flags])
  } catch (err) {
    if (port === 0 || !/EADDRINUSE/.test(err.message)) throw err
    term.say(term.warn(`Port ${port} is taken (is \`npm start\` or another demo running?): the demo runs its own lab on a free port. ` +
      'A dashboard open on the other lab shows nothing of it: open the address below, or stop the other lab and start the demo again.'))
    return startLabProcess(['--port', '0', ...flags])
  }
}

/** Every worker pid the supervisor has announced: the first, and each one after a restart. */
function workerPids (lab) {
  return [...new Set([...lab.output().matchAll(/worker pid (\d+)/g)].map(function pid (m) { return Number(m[1]) }))]
}

/** Stop the lab; its supervisor, workers and load processes still there after a grace period are killed, by pid. */
export async function stopLab (lab, pids, term) {
  await lab.stop()
  const all = [lab.supervisorPid, ...workerPids(lab), ...pids]
  const deadline = Date.now() + 5000
  let left = all.filter(processAlive)
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(100)
    left = left.filter(processAlive)
  }
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // gone between the check and the kill: what was wanted
    }
  }
  const workers = workerPids(lab)
  if (left.length > 0) {
    term.say(term.warn(`The lab has stopped, but processes ${left.join(', ')} were still running: killed.`))
    return false
  }
  term.say(`The lab has stopped: supervisor ${lab.supervisorPid}, worker${workers.length > 1 ? 's' : ''} ${workers.join(', ')} ` +
    `and ${pids.length} load process${pids.length === 1 ? '' : 'es'} are gone.`)
  return true
}

/** Try to open the dashboard; null when the opener started, else why not. */
export function openBrowser (url) {
  let command = 'xdg-open'
  let args = [url]
  if (process.platform === 'darwin') command = 'open'
  if (process.platform === 'win32') {
    command = 'cmd'
    args = ['/c', 'start', '', url]
  }
  return new Promise(function launch (resolve) {
    // its own process group: Ctrl-C in the demo must not close the class's browser
    const child = spawn(command, args, { stdio: 'ignore', detached: true })
    const timer = setTimeout(function stillRunning () {
      child.unref()
      resolve(null)
    }, 3000)
    child.once('error', function failed (err) {
      clearTimeout(timer)
      resolve(`${command}: ${err.code ?? err.message}`)
    })
    child.once('exit', function exited (code) {
      clearTimeout(timer)
      resolve(code === 0 ? null : `${command} exited with code ${code}`)
    })
  })
}

/** The supervisor's own line about the restart of `oldPid`: what it said, how long it took and the pids; null after 5 s. */
export async function restartLine (lab, oldPid) {
  const deadline = Date.now() + 5000
  for (;;) {
    const lines = [...lab.output().matchAll(/streamlab: (worker (\d+) killed: .*?); restarted in (\d+) ms \(worker pid (\d+)\)/g)]
    const line = lines.find(function ofThisWorker (m) { return Number(m[2]) === oldPid })
    if (line) return { said: line[1], oldPid, ms: Number(line[3]), newPid: Number(line[4]) }
    if (Date.now() > deadline) return null
    await sleep(50)
  }
}
