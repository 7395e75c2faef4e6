/**
 * A file the grader reads because a process it measures named it or wrote it: a regular file
 * only, opened without following a link in its last place and without waiting on a pipe, its
 * descriptor checked, at most so many bytes. A named pipe, a socket, a device or a link is
 * refused at once instead of read: nothing a graded process points at can block the grader.
 */
import fs from 'node:fs'

// O_NOFOLLOW: a link in the last place is an error (ELOOP), never followed; O_NONBLOCK: a pipe
// with no writer opens at once (and is then refused) instead of waiting. Neither exists on Windows.
export const READ_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0)

/**
 * The bytes of `file` when it is a regular file of at most `maxBytes`; null otherwise (missing,
 * unreadable, a link, a pipe, a socket, a device, a folder, too large, grown past `maxBytes`).
 * @param {string} file
 * @param {number} maxBytes
 * @returns {Buffer|null}
 */
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
