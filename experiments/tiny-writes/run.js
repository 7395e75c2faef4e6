/**
 * The tiny-writes experiment's runner, shared by the bench and the lab's
 * experiment: a byte sucker in one process (experiments/tiny-writes/sink.js) and,
 * per measurement, a client in another (experiments/tiny-writes/client.js), both
 * on 127.0.0.1, so neither's work is counted as the other's.
 */
import { fork } from 'node:child_process'
import path from 'node:path'
import { runChildJob } from '../../lib/experiments/load.js'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { BATCH_STEPS } from './writes.js'
import { median } from '../../lib/measure/stats.js'

/** The byte sucker's script, forked once per run. */
export const SINK_PROCESS = path.join(PROJECT_ROOT, 'experiments', 'tiny-writes', 'sink.js')
/** The sender's script, forked once per measurement. */
export const CLIENT_PROCESS = path.join(PROJECT_ROOT, 'experiments', 'tiny-writes', 'client.js')

const STOP_GRACE_MS = 2000

/**
 * Fork the sink and wait until it listens.
 * @param {{ signal?: AbortSignal, onSpawn?: (child: import('node:child_process').ChildProcess) => void }} [hooks]
 * @returns {Promise<{ port: number, pid: number, stop: () => Promise<void> }>} `stop` resolves once it has exited
 */
export function startSink ({ signal, onSpawn } = {}) {
  if (signal?.aborted) return Promise.reject(signal.reason)
  const child = fork(SINK_PROCESS, [], { execArgv: [], stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'json' })
  if (child.pid !== undefined && onSpawn) onSpawn(child)
  const exited = new Promise(function waitForExit (resolve) {
    if (child.pid === undefined) resolve()
    else child.once('exit', resolve)
  })
  async function stop () {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      // the sink exits when its IPC channel closes; a kill if it does not
      const timer = setTimeout(function killSink () { child.kill('SIGKILL') }, STOP_GRACE_MS)
      if (child.connected) child.disconnect()
      else child.kill('SIGTERM')
      await exited
      clearTimeout(timer)
    }
  }
  return new Promise(function waitForListening (resolve, reject) {
    let stderr = ''
    function onMessage (message) {
      if (message?.type !== 'listening') return
      cleanup()
      // keep reading what it may still print, or a full pipe could stall it
      child.stderr.resume()
      resolve({ port: message.port, pid: child.pid, stop })
    }
    function onStderr (chunk) { stderr += chunk }
    function onError (err) {
      cleanup()
      stop().finally(function failed () { reject(err) })
    }
    function onClose (code, killedBy) {
      cleanup()
      reject(new Error(`the sink exited (${killedBy ?? code}) before listening${stderr ? `: ${stderr.trim()}` : ''}`))
    }
    function onAbort () {
      cleanup()
      stop().finally(function aborted () { reject(signal.reason) })
    }
    function cleanup () {
      child.removeListener('message', onMessage)
      child.removeListener('error', onError)
      child.removeListener('close', onClose)
      child.stderr.removeListener('data', onStderr)
      signal?.removeEventListener('abort', onAbort)
    }
    child.on('message', onMessage)
    child.on('error', onError)
    child.on('close', onClose)
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', onStderr)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/**
 * The cells of a run: per-byte once, then cork and coalesce at each batch size.
 * @param {{ modes: string[], batches: number[] }} plan
 * @returns {Array<{ mode: string, batch: number }>}
 */
export function tinyWritesCells ({ modes, batches }) {
  const cells = []
  if (modes.includes('per-byte')) cells.push({ mode: 'per-byte', batch: 1 })
  for (const mode of ['cork', 'coalesce']) {
    if (!modes.includes(mode)) continue
    for (const batch of batches) cells.push({ mode, batch })
  }
  return cells
}

/** The batch sizes of a sweep up to `top`: 16, 256, 4096, 65536 below it, and `top`. */
export function batchSteps (top) {
  return [...BATCH_STEPS.filter(function below (b) { return b < top }), top]
}

/**
 * Send `bytes` bytes for each cell, `repeat` times, each from a fresh client process.
 * @param {{ bytes: number, cells: Array<{ mode: string, batch: number }>, noDelay?: boolean, repeat?: number }} plan
 * @param {{ signal?: AbortSignal, onSpawn?: Function, onMeasurement?: (done: number, total: number, cell: object) => void }} [hooks]
 * @returns {Promise<object[]>} one summary per cell (medians over the repeats), see `summariseTinyCell`
 */
export async function runTinyWrites ({ bytes, cells, noDelay = false, repeat = 1 }, { signal, onSpawn, onMeasurement } = {}) {
  const sink = await startSink({ signal, onSpawn })
  const total = cells.length * repeat
  let done = 0
  try {
    const summaries = []
    for (const cell of cells) {
      const runs = []
      for (let r = 0; r < repeat; r++) {
        signal?.throwIfAborted()
        onMeasurement?.(done, total, cell)
        runs.push(await runChildJob(CLIENT_PROCESS, { port: sink.port, bytes, mode: cell.mode, batch: cell.batch, noDelay }, { signal, onSpawn }))
        done++
      }
      summaries.push(summariseTinyCell(runs))
    }
    onMeasurement?.(done, total, null)
    return summaries
  } finally {
    await sink.stop()
  }
}

/**
 * One cell's figures: medians over its runs, and whether every run delivered every byte in order.
 * @param {object[]} runs the clients' results
 */
export function summariseTinyCell (runs) {
  function pick (get) { return median(runs.map(get)) }
  const first = runs[0]
  const ms = pick(function time (r) { return r.ms })
  const syscalls = pick(function calls (r) { return r.syscalls })
  return {
    mode: first.mode,
    batch: first.batch,
    bytes: first.bytes,
    runs: runs.length,
    ms,
    sendMs: pick(function send (r) { return r.sendMs }),
    writeCalls: first.writeCalls,
    bytesPerWrite: first.bytes / first.writeCalls,
    syscalls,
    bytesPerSyscall: syscalls ? first.bytes / syscalls : null,
    cpuUserMs: pick(function user (r) { return r.cpuUserMs }),
    cpuSystemMs: pick(function system (r) { return r.cpuSystemMs }),
    sinkReads: pick(function reads (r) { return r.sinkReads }),
    mbPerSecond: first.bytes / 1e6 / (ms / 1000),
    delivered: runs.every(function whole (r) { return r.received === r.bytes && r.inOrder }),
    received: runs.map(function got (r) { return r.received }),
    measurements: runs
  }
}
