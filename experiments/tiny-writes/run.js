/** The tiny-writes runner, for the bench and the experiment: a byte sucker (sink.js) and a client a measurement (client.js), apart. */
import path from 'node:path'
import { runChildJob, startChildService } from '../../lib/experiments/load.js'
import { PROJECT_ROOT } from '../../lib/config/options.js'
import { BATCH_STEPS } from './writes.js'
import { median } from '../../lib/measure/stats.js'
import { stepsUpTo } from '../../lib/experiments/params.js'

const SINK_PROCESS = path.join(PROJECT_ROOT, 'experiments', 'tiny-writes', 'sink.js')
const CLIENT_PROCESS = path.join(PROJECT_ROOT, 'experiments', 'tiny-writes', 'client.js')

/** Fork the sink and wait until it listens; aborting `signal` kills it. */
async function startSink (hooks) {
  const { details, pid, stop } = await startChildService(SINK_PROCESS, hooks)
  return { port: details.port, pid, stop }
}

/** The cells of a run: per-byte once, then cork and coalesce at each batch size. */
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
  return stepsUpTo(BATCH_STEPS, top)
}

/** Send `bytes` bytes for each cell, `repeat` times, each from a fresh client process; a summary per cell. */
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
        const job = { port: sink.port, bytes, mode: cell.mode, batch: cell.batch, noDelay }
        runs.push(await runChildJob(CLIENT_PROCESS, job, { signal, onSpawn }))
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

/** One cell's figures: medians over its runs, and whether every run delivered every byte in order. */
function summariseTinyCell (runs) {
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
