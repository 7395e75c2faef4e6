#!/usr/bin/env node
/**
 * The lab in one process, for profilers (`node server.js` is a supervisor that forks the lab, so a
 * profiler around it would profile the supervisor). It exits 0 on SIGINT or SIGTERM, when --heap-prof
 * and --cpu-prof write their files. With IPC and --snapshot-dir, each `{ type: 'snapshot', label,
 * idleWaitMs }` message writes a heap snapshot there (after up to idleWaitMs for the requests in
 * flight) and is answered `snapshot-written` { label, file, ms, inFlight } or `snapshot-failed`.
 */
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import v8 from 'node:v8'
import { createApp } from '../../app.js'
import { createLabServer } from '../../lib/http/server.js'

const USAGE = 'Usage: node scripts/profile/server.js [--port <n>] [--host <address>] [--data-dir <dir>] [--snapshot-dir <dir>]\n'

let values
try {
  values = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      'data-dir': { type: 'string' },
      'snapshot-dir': { type: 'string' }
    }
  }).values
} catch (err) {
  process.stderr.write(`profile-server: ${err.message}\n${USAGE}`)
  process.exit(2)
}
const port = Number(values.port)
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`profile-server: --port takes 0 to 65535, got ${values.port}\n${USAGE}`)
  process.exit(2)
}

// a data directory of its own keeps a profile's uploads apart from everyone else's test-data/uploads/
const app = createApp(values['data-dir'] ? { dataDir: path.resolve(values['data-dir']) } : {})
const server = createLabServer(app)
server.listen(port, values.host, function announce () {
  console.log(`streamlab listening on http://${values.host}:${server.address().port} (pid ${process.pid})`)
})
server.once('error', function listenFailed (err) {
  console.error(`profile-server: ${err.message}`)
  process.exit(1)
})

// ingest and upload requests between their start and end events: an "after the load" snapshot
// taken while the last bodies are still being parsed would show them as if they had leaked
const inFlight = new Set()
app.locals.events.on('request', function trackRequest (event) {
  if (event.phase === 'start') inFlight.add(event.id)
  else if (event.phase === 'end') inFlight.delete(event.id)
})

let snapshots = 0
async function onMessage (message) {
  if (message?.type !== 'snapshot') return
  const label = String(message.label ?? 'snapshot').replace(/[^a-z0-9-]/gi, '-')
  if (!values['snapshot-dir']) {
    process.send({ type: 'snapshot-failed', label, message: 'started without --snapshot-dir' })
    return
  }
  const idleBy = Date.now() + (Number(message.idleWaitMs) || 0)
  while (inFlight.size > 0 && Date.now() < idleBy) {
    await new Promise(function pause (resolve) { setTimeout(resolve, 50) })
  }
  snapshots++
  const file = path.join(values['snapshot-dir'], `${snapshots}-${label}.heapsnapshot`)
  const started = performance.now()
  try {
    // synchronous: the event loop (and every request in flight) waits while the heap is written,
    // which is what makes it a picture of one moment
    v8.writeHeapSnapshot(file)
    process.send({ type: 'snapshot-written', label, file, ms: Math.round(performance.now() - started), inFlight: inFlight.size })
  } catch (err) {
    process.send({ type: 'snapshot-failed', label, message: err.message })
  }
}
if (typeof process.send === 'function') process.on('message', onMessage)

let stopping = false
function shutdown () {
  if (stopping) return
  stopping = true
  process.removeListener('message', onMessage)
  // the IPC channel would keep the process alive after the server closes
  if (process.connected) process.disconnect()
  server.close()
  server.closeAllConnections()
  // process.exit, not a signal's default death: --heap-prof and --cpu-prof write their files on exit
  Promise.allSettled([app.close()]).finally(function exit () { process.exit(0) })
}
process.once('SIGTERM', shutdown)
process.once('SIGINT', shutdown)
