/** Reading a file a measured process named: regular files only, no link followed, no pipe waited on, bounded. */
import fs from 'node:fs'

// O_NOFOLLOW: a link in the last place is an error (ELOOP), never followed; O_NONBLOCK: a pipe
// with no writer opens at once (and is then refused) instead of waiting. Neither exists on Windows.
export const READ_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0)

/** The bytes of `file` if it is a regular file of at most `maxBytes`; null otherwise. */
export function readRegularSync (file, maxBytes) {
  let fd
  try {
    fd = fs.openSync(file, READ_FLAGS)
  } catch {
    return null
  }
  try {
    const stat = fs.fstatSync(fd)
    if (!stat.isFile() || stat.size > maxBytes) return null
    // one byte more than the stat said: a file that grew since is refused, not cut
    const buffer = Buffer.alloc(stat.size + 1)
    let length = 0
    for (;;) {
      const n = fs.readSync(fd, buffer, length, buffer.length - length, null)
      if (n === 0) break
      length += n
      if (length === buffer.length) return null
    }
    return buffer.subarray(0, length)
  } catch {
    return null
  } finally {
    fs.closeSync(fd)
  }
}
