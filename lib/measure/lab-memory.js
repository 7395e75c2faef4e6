// A lab process's peak over a load, from outside: the kernel's `VmHWM` where /proc has it, else the lab's own
// sampled peak over HTTP (a Mac, Windows, portable mode). Every figure says its source.
import { procAvailable } from '../util/platform.js'
import { peakSourceLabel } from '../metrics/peak.js'
import { readProcMemory, resetProcPeak } from '../metrics/proc-memory.js'

/** A lab's JSON answer to `method path`; throws on a status that is not 2xx. */
export async function askLab (url, path, method = 'GET') {
  const res = await fetch(`${url}${path}`, { method, headers: { accept: 'application/json' } })
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status}`)
  return res.json()
}

/** Read the lab's idle RSS and reset its peak: the start of a window. */
export async function openPeakWindow ({ pid, url }) {
  if (pid && procAvailable()) {
    const idle = readProcMemory(pid)
    return { idleRss: idle?.rss ?? null, reset: idle !== null && resetProcPeak(pid), kernel: true }
  }
  try {
    const answer = await askLab(url, '/metrics/peak/reset', 'POST')
    return { idleRss: answer.peakRss, reset: answer.reset === true, kernel: false }
  } catch {
    return { idleRss: null, reset: false, kernel: false }
  }
}

/** The peak since the window opened, with its source; nulls when it could not be measured. */
export async function closePeakWindow (window, { pid, url }) {
  let peak = null
  let source = null
  if (window.kernel) {
    peak = pid ? readProcMemory(pid)?.peak ?? null : null
    source = 'VmHWM'
  } else {
    try {
      const sample = (await askLab(url, '/metrics?format=json')).sample
      peak = sample.peakRss
      source = sample.peakSource
    } catch {
      // the lab is gone or does not answer: not measured
    }
  }
  const measured = window.reset && window.idleRss !== null && peak !== null
  return {
    idleRss: window.idleRss,
    peakRss: measured ? peak : null,
    peakAboveIdle: measured ? Math.max(0, peak - window.idleRss) : null,
    peakSource: measured ? peakSourceLabel(source) : null
  }
}
