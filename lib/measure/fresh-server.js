/**
 * One measurement on a fresh lab server process: garbage left by one
 * measurement cannot inflate the next, and the load (run by the caller, in
 * this process or another) is never counted as the server's. The server's
 * peak RSS is reset after the warm-up and read after the load: the kernel's
 * (VmHWM, from outside through /proc) or the lab's sampled peak
 * (lib/measure/lab-memory.js).
 */
import { performance } from 'node:perf_hooks'
import { startLabProcess } from './lab-process.js'
import { closePeakWindow, openPeakWindow } from './lab-memory.js'

/**
 * Start a server, warm it up, record idle RSS, reset its peak, run the load,
 * read the peak, stop the server.
 * @template T
 * @param {{ serverFlags?: string[], url?: string|null, warmUp?: (url: string) => Promise<void>,
 *   load: (url: string) => Promise<T> }} measurement `url`: measure a running server instead
 *   (no peak figures then: its pid is not ours to read)
 * @returns {Promise<{ outcome: T, wallMs: number, idleRss: number|null, peakRss: number|null,
 *   peakAboveIdle: number|null, peakSource: 'kernel peak'|'sampled peak'|null }>} bytes and ms
 */
export async function measureOnFreshServer ({ serverFlags = [], url = null, warmUp, load }) {
  const lab = url
    ? { url, pid: null, stop: async function keepRunning () {} }
    : await startLabProcess(serverFlags)
  try {
    if (warmUp) await warmUp(lab.url)
    // a server we did not start is not ours to reset or read
    const window = lab.pid ? await openPeakWindow(lab) : { idleRss: null, reset: false, kernel: false }
    const started = performance.now()
    const outcome = await load(lab.url)
    const wallMs = performance.now() - started
    return { outcome, wallMs, ...await closePeakWindow(window, lab) }
  } finally {
    await lab.stop()
  }
}
