/**
 * Whether a process id names a running process: signal 0 checks without sending anything. EPERM means it exists but belongs to
 * someone else.
 */
export function processAlive (pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    if (err.code === 'ESRCH') return false
    if (err.code === 'EPERM') return true
    throw err
  }
}
