/** The byte sucker, a child service (lib/experiments/child-job.js) ready with { port }: each connection read by `suckBytes`. */
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
