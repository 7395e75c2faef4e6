/**
 * The tiny-writes client, a child job (lib/experiments/child-job.js) in { port, bytes, mode, batch, noDelay }: sends
 * N bytes to the sink one way (writes.js), ends and waits for the sink's count. `syscalls` are this process's write
 * system calls from /proc/self/io `syscw` (nothing else writes meanwhile), null where there is no /proc.
 */
import fs from 'node:fs'
import { procAvailable } from '../../lib/util/platform.js'
import net from 'node:net'
import { once } from 'node:events'
import { performance } from 'node:perf_hooks'
import { TINY_MODES, readToEnd, sendBytes } from './writes.js'
import { serveChildJob } from '../../lib/experiments/child-job.js'

serveChildJob('experiments/tiny-writes/client.js', async function runJob (job) {
  checkJob(job)
  const socket = await connect(job.port, job.noDelay)
  try {
    const reply = readReply(socket)
    // a failure while sending rejects it early; it is awaited below, after sendBytes has failed too
    reply.catch(function handledBelow () {})
    const io = writeSyscalls()
    const cpu = process.cpuUsage()
    const started = performance.now()
    const { writeCalls } = await sendBytes(socket, job)
    const sendMs = performance.now() - started
    socket.end()
    // the sink answers once it has read everything: this is the time to deliver N bytes
    const tally = await reply
    const ms = performance.now() - started
    const used = process.cpuUsage(cpu)
    const after = writeSyscalls()
    return {
      mode: job.mode,
      batch: job.mode === 'per-byte' ? 1 : job.batch,
      bytes: job.bytes,
      ms,
      sendMs,
      writeCalls,
      syscalls: io === null || after === null ? null : after - io,
      cpuUserMs: used.user / 1000,
      cpuSystemMs: used.system / 1000,
      received: tally.bytes,
      inOrder: tally.inOrder,
      sinkReads: tally.reads
    }
  } finally {
    socket.destroy()
  }
})

function checkJob (job) {
  if (job === null || typeof job !== 'object') throw new TypeError('job must be an object')
  if (!Number.isSafeInteger(job.port) || job.port < 1 || job.port > 65535) throw new TypeError(`job.port must be a port, got ${job.port}`)
  if (!Number.isSafeInteger(job.bytes) || job.bytes < 1) throw new TypeError(`job.bytes must be a positive integer, got ${job.bytes}`)
  if (!TINY_MODES.includes(job.mode)) throw new TypeError(`job.mode must be one of ${TINY_MODES.join(', ')}, got ${job.mode}`)
  if (!Number.isSafeInteger(job.batch) || job.batch < 1) throw new TypeError(`job.batch must be a positive integer, got ${job.batch}`)
}

/** A connected socket; `once` rejects on 'error' and leaves no listener behind. */
async function connect (port, noDelay) {
  const socket = net.connect({ host: '127.0.0.1', port })
  await once(socket, 'connect')
  // Node leaves Nagle's algorithm on for net sockets unless told: say which, every time
  socket.setNoDelay(Boolean(noDelay))
  return socket
}

/** The sink's one JSON line, once the connection closes. */
async function readReply (socket) {
  let text = ''
  socket.setEncoding('utf8')
  await readToEnd(socket, function onData (chunk) { text += chunk })
  try {
    return JSON.parse(text)
  } catch {
    throw new Error(`the sink answered ${JSON.stringify(text.slice(0, 200))}`)
  }
}

/** Write system calls this process has made so far, or null without /proc (macOS, Windows, portable mode). */
function writeSyscalls () {
  if (!procAvailable()) return null
  try {
    const match = /^syscw:\s+(\d+)$/m.exec(fs.readFileSync('/proc/self/io', 'latin1'))
    return match ? Number(match[1]) : null
  } catch {
    return null
  }
}
