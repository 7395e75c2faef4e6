// One measurement on a fresh lab server process: one measurement's garbage cannot inflate the next, and the
// load is never counted as the server's. The peak: the kernel's or the lab's sampled one (lab-memory.js).
import { performance } from 'node:perf_hooks'
import { startLabProcess } from './lab-process.js'
import { closePeakWindow, openPeakWindow } from './lab-memory.js'

/**
 * Start a server, warm it up, record idle RSS, reset its peak, run the load, read the peak, stop it. With `url`,
 * measure a running server instead (no peak figures: its pid is not ours). Bytes and ms.
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
