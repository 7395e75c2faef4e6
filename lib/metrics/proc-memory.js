/**
 * Another process's memory as the kernel sees it: VmRSS now, VmHWM its peak, and the reset of that peak (write 5 to clear_refs,
 * Linux >= 4.0).
 */
import fs from 'node:fs'
import { procAvailable } from '../util/platform.js'

/** `{ rss, peak }` bytes, or null where /proc is absent. */
export function readProcMemory (pid) {
  if (!procAvailable()) return null
  let status
  try {
    status = fs.readFileSync(`/proc/${pid}/status`, 'latin1')
  } catch {
    return null
  }
  const rss = /^VmRSS:\s+(\d+) kB/m.exec(status)
  const peak = /^VmHWM:\s+(\d+) kB/m.exec(status)
  if (!rss || !peak) return null
  return { rss: Number(rss[1]) * 1024, peak: Number(peak[1]) * 1024 }
}

/** Whether the peak could be reset. */
export function resetProcPeak (pid) {
  if (!procAvailable()) return false
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5')
    return true
  } catch {
    return false
  }
}
