/**
 * The byte sucker: a TCP server on 127.0.0.1 in a process of its own that
 * reads each connection until the client ends it and answers how many
 * bytes arrived (experiments/tiny-writes/writes.js `suckBytes`). Started by
 * `startSink()` (experiments/tiny-writes/run.js) with `startChildService`; it
 * speaks the service protocol of `lib/experiments/child-job.js`: it sends
 * { type: 'ready', port } once, and exits when its parent closes the channel.
 */
import net from 'node:net'
import { once } from 'node:events'
import { suckBytes } from './writes.js'
import { serveChildService } from '../../lib/experiments/child-job.js'

serveChildService('experiments/tiny-writes/sink.js', async function listen () {
  const server = net.createServer(function onConnection (socket) {
    // a client killed mid-transfer resets its socket: that is its problem, not the sink's
    socket.on('error', function ignoreReset () {})
    suckBytes(socket).catch(function ignoreFailedTransfer () {})
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { port: server.address().port }
})
