/**
 * One measurement on a fresh lab server process: garbage left by one
 * measurement cannot inflate the next, and the load (run by the caller, in
 * this process or another) is never counted as the server's. The server's
 * peak RSS is the kernel's (VmHWM), reset after the warm-up and read from
 * outside through /proc.
 */
import { performance } from 'node:perf_hooks'
import { startLabProcess } from './lab-process.js'
import { readProcMemory, resetProcPeak } from './proc-memory.js'

/**
 * Start a server, warm it up, record idle RSS, reset its peak, run the load,
 * read the peak, stop the server.
 * @template T
 * @param {{ serverFlags?: string[], url?: string|null, warmUp?: (url: string) => Promise<void>,
 *   load: (url: string) => Promise<T> }} measurement `url`: measure a running server instead
 *   (no peak figures then: its pid is not ours to read)
 * @returns {Promise<{ outcome: T, wallMs: number, idleRss: number|null, peakRss: number|null,
 *   peakAboveIdle: number|null, peakSource: 'VmHWM'|null }>} bytes and ms
 */
export async function measureOnFreshServer ({ serverFlags = [], url = null, warmUp, load }) {
  const lab = url
    ? { url, pid: null, stop: async function keepRunning () {} }
    : await startLabProcess(serverFlags)
  try {
    if (warmUp) await warmUp(lab.url)
    const idle = lab.pid ? readProcMemory(lab.pid) : null
    const peakReset = lab.pid ? resetProcPeak(lab.pid) : false
    const started = performance.now()
    const outcome = await load(lab.url)
    const wallMs = performance.now() - started
    const after = lab.pid ? readProcMemory(lab.pid) : null
    const measured = Boolean(idle && after && peakReset)
    return {
      outcome,
      wallMs,
      idleRss: idle?.rss ?? null,
      peakRss: measured ? after.peak : null,
      peakAboveIdle: measured ? Math.max(0, after.peak - idle.rss) : null,
      peakSource: measured ? 'VmHWM' : null
    }
  } finally {
    await lab.stop()
  }
}
