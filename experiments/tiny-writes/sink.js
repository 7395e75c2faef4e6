/**
 * The byte sucker: a TCP server on 127.0.0.1 in a process of its own that
 * reads each connection until the client ends it and answers how many
 * bytes arrived (experiments/tiny-writes/writes.js `suckBytes`). Forked by
 * `startSink()` (experiments/tiny-writes/run.js); over IPC it sends
 * { type: 'listening', port } once, and exits when its parent goes away.
 */
import net from 'node:net'
import { suckBytes } from './writes.js'

if (typeof process.send !== 'function') {
  process.stderr.write('experiments/tiny-writes/sink.js is started by the lab (child_process.fork), not by hand\n')
  process.exitCode = 2
} else {
  const server = net.createServer(function onConnection (socket) {
    // a client killed mid-transfer resets its socket: that is its problem, not the sink's
    socket.on('error', function ignoreReset () {})
    suckBytes(socket).catch(function ignoreFailedTransfer () {})
  })
  server.listen(0, '127.0.0.1', function announce () {
    process.send({ type: 'listening', port: server.address().port })
  })
  process.once('disconnect', function parentGone () {
    server.close()
    process.exit()
  })
}
