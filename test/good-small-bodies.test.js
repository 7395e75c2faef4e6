/**
 * POST /good with small bodies: bodies that arrive whole with their headers
 * and fit in one batch. Whoever sends many of them at once must not be able
 * to leave a pipeline held.
 */
import assert from 'node:assert/strict'
import net from 'node:net'
import zlib from 'node:zlib'
import { startLab, post, waitFor } from './helpers.js'
import { streamedIngestState } from '../lib/streamed-ingest.js'

const SMALL = zlib.gzipSync('{"items":[{"id":1},{"id":2},{"id":3}]}')

/** Send a request on a raw socket, `sent` bytes of its body (all of it by default), and return the socket. */
function send (port, body, sent = body.length) {
  const socket = net.connect(port, '127.0.0.1')
  socket.on('error', function ignore () {})
  const head = `POST /good HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/gzip\r\nContent-Length: ${body.length}\r\n\r\n`
  socket.write(Buffer.concat([Buffer.from(head), body.subarray(0, sent)]))
  return socket
}

describe('POST /good: small bodies whose clients vanish', function () {
  let lab = null
  before(async function start () { lab = await startLab({ ingest: { activePipelines: 2 } }) })
  after(async function stop () { await lab.close() })

  function connections () {
    return new Promise(function count (resolve, reject) {
      lab.server.getConnections(function counted (err, n) { if (err) reject(err); else resolve(n) })
    })
  }

  it('releases every place when clients hang up after sending a whole body, while it waited for a pipeline', async function () {
    // two bodies not yet ended hold both pipelines, so the whole ones wait
    const holders = [send(lab.port, SMALL, 4), send(lab.port, SMALL, 4)]
    await waitFor(function streaming () { return streamedIngestState().active === 2 })
    const sockets = Array.from({ length: 40 }, function sendWhole () { return send(lab.port, SMALL) })
    await waitFor(function queued () { return streamedIngestState().queued === 40 })
    // the bodies arrived whole (the requests are complete) but were never read: when the
    // sockets close, Node destroys the requests and drops their bodies, and no 'end' will come
    for (const socket of sockets) socket.destroy()
    while (await connections() > 2) await new Promise(function later (resolve) { setTimeout(resolve, 20) })
    // only now do the pipelines come free
    for (const holder of holders) holder.end(SMALL.subarray(4))
    await waitFor(function settled () {
      const state = streamedIngestState()
      return state.active === 0 && state.queued === 0
    })
    assert.equal((await post(`${lab.url}/good`, SMALL)).status, 200)
  })
})
