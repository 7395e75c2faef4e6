/**
 * Where the lab may read the kernel's own figures. On Linux it reads /proc: a process's peak RSS (`VmHWM`) and its reset
 * (`clear_refs`), another process's RSS, the system calls a process made (`/proc/self/io`), the descriptors it holds
 * (`/proc/self/fd`). macOS and Windows have none of it, and take the portable paths: `process.memoryUsage()`,
 * `process.resourceUsage().maxRSS`, a worker's RSS over IPC. More: README.md, "platform.js".
 */
import fs from 'node:fs'

/** The environment variable that turns portable mode on. */
export const PORTABLE_ENV = 'STREAMLAB_PORTABLE'

/** Whether portable mode is on: STREAMLAB_PORTABLE set to anything but '', '0' or 'false'. */
function isPortable (env = process.env) {
  const value = env[PORTABLE_ENV]
  return value !== undefined && !['', '0', 'false'].includes(value.trim().toLowerCase())
}

const procCache = new Map()

/**
 * Whether this process may read /proc: Linux, /proc mounted, and not portable mode. The answer for a given environment is kept:
 * /proc does not come and go while the lab runs.
 */
export function procAvailable ({ env = process.env, platform = process.platform, probe = '/proc/self/status' } = {}) {
  if (isPortable(env) || platform !== 'linux') return false
  if (!procCache.has(probe)) {
    let readable
    try {
      fs.accessSync(probe, fs.constants.R_OK)
      readable = true
    } catch {
      readable = false
    }
    procCache.set(probe, readable)
  }
  return procCache.get(probe)
}
