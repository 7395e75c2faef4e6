// How the supervisor reads a worker's RSS: /proc/<pid>/status every `pollMs` with one pread on a kept
// descriptor, so a worker stuck in synchronous code is still seen; without /proc, the worker's own IPC reports.
import fs from 'node:fs'
import { procAvailable } from '../util/platform.js'

/** Call `onRss` with each reading in bytes; returns how the RSS comes ('proc'|'ipc') and the stop. */
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
