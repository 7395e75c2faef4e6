/**
 * POST /good with small bodies: bodies that arrive whole with their headers
 * and fit in one batch. Whoever sends many of them at once must not be able
 * to leave a pipeline held.
 */
import assert from 'node:assert/strict'
import net from 'node:net'
import zlib from 'node:zlib'
import { labInTempDir, post, waitFor } from './helpers.js'
import { streamedIngestState } from '../lib/streamed-ingest.js'

const SMALL = zlib.gzipSync('{"items":[{"id":1},{"id":2},{"id":3}]}')

/** Send a whole request on a raw socket, and return the socket. */
function sendWhole (port, body) {
  const socket = net.connect(port, '127.0.0.1')
  socket.on('error', function ignore () {})
  const head = `POST /good HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/gzip\r\nContent-Length: ${body.length}\r\n\r\n`
  socket.write(Buffer.concat([Buffer.from(head), body]))
  return socket
}

describe('POST /good: small bodies whose clients vanish', function () {
  const lab = labInTempDir('good-small-vanish', { ingest: { activePipelines: 2 } })

  it('releases every place when clients hang up after sending a whole body, while it waited for a pipeline', async function () {
    // the bodies arrive whole (the request is complete) but are never read: the socket closes
    // first, Node destroys the request and drops its body, and no 'end' will ever come
    const sockets = Array.from({ length: 40 }, function send () { return sendWhole(lab.port, SMALL) })
    await waitFor(function queued () { return streamedIngestState().queued >= 1 })
    for (const socket of sockets) socket.destroy()
    await waitFor(function settled () {
      const state = streamedIngestState()
      return state.active === 0 && state.queued === 0
    })
    assert.equal((await post(`${lab.url}/good`, SMALL)).status, 200)
  })
})
