/**
 * How the supervisor (lib/supervisor/supervisor.js) reads a worker's RSS: from outside,
 * /proc/<pid>/status every `pollMs` with one pread on a kept descriptor, so
 * that a worker stuck in synchronous code is still seen; where there is no
 * /proc (or in portable mode), the worker reports its own over IPC and this
 * watches nothing: its reports come from its event loop, so a worker stuck
 * in synchronous code is seen only once it comes out (a bomb inflating on
 * zlib's thread pool is seen as it grows).
 */
import fs from 'node:fs'
import { procAvailable } from '../util/platform.js'

/**
 * @param {number} pid the worker's
 * @param {{ memoryLimit: number, pollMs: number, rssSource: 'auto'|'proc'|'ipc' }} options the supervisor's
 * @param {(rss: number) => void} onRss each reading, in bytes
 * @returns {{ source: 'proc'|'ipc', stop: () => void }} how the RSS comes, and the stop
 * @throws when `rssSource` is 'proc' and the worker's status cannot be opened
 */
export function watchWorkerRss (pid, { memoryLimit, pollMs, rssSource }, onRss) {
  const ipc = { source: 'ipc', stop: function noWatch () {} }
  // portable mode (lib/util/platform.js) takes the path a Mac or a Windows laptop takes
  if (rssSource === 'ipc' || (rssSource === 'auto' && !procAvailable())) return ipc
  let fd = null
  try {
    fd = fs.openSync(`/proc/${pid}/status`, 'r')
  } catch (err) {
    if (rssSource === 'proc') throw err
    return ipc
  }
  const buffer = Buffer.alloc(4096)
  function readRss () {
    let text
    try {
      text = buffer.toString('latin1', 0, fs.readSync(fd, buffer, 0, buffer.length, 0))
    } catch {
      return // it has just died: 'exit' follows
    }
    const match = /^VmRSS:\s+(\d+) kB/m.exec(text)
    if (match) onRss(Number(match[1]) * 1024)
  }
  // with no budget there is nothing to enforce, but the RSS at a crash is still worth knowing
  const timer = setInterval(readRss, memoryLimit > 0 ? pollMs : Math.max(pollMs, 250))
  return {
    source: 'proc',
    stop: function stopWatching () {
      clearInterval(timer)
      if (fd !== null) fs.closeSync(fd)
      fd = null
    }
  }
}
