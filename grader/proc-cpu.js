/**
 * The CPU time a process has used, read from outside: /proc/<pid>/stat's
 * utime and stime (user and system time of all its threads). The kernel
 * gives them in USER_HZ ticks, 100 a second on Linux whatever the
 * kernel's own tick rate, so the figure moves in steps of 10 ms.
 */
import fs from 'node:fs'

/** /proc reports CPU time in ticks of 1/USER_HZ s. */
const USER_HZ = 100

/**
 * @param {number} pid
 * @returns {number|null} milliseconds of CPU used so far; null where /proc is missing or the process is gone
 */
export function cpuMs (pid) {
  let stat
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return null
  }
  // the command name (field 2) may hold spaces and parentheses: count the fields after its last ')'
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // fields[0] is field 3 (state): utime is field 14, stime field 15
  const ticks = Number(fields[11]) + Number(fields[12])
  return Number.isFinite(ticks) ? ticks * 1000 / USER_HZ : null
}
