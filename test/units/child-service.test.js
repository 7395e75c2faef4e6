/**
 * lib/experiments/load.js `startChildService`: a helper process (the tiny-writes
 * sink, say) is forked, answers once it is ready, and is gone once stopped,
 * aborted or failed: no spec, and no run, leaves one behind.
 */
import assert from 'node:assert/strict'
import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startChildService } from '../../lib/experiments/load.js'
import { processAlive } from '../../lib/util/process-alive.js'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const SERVICE = path.join(HERE, '..', 'fixtures', 'child-service.js')

/** What the service at `port` says to a new connection. */
async function greeting (port) {
  const socket = net.connect({ host: '127.0.0.1', port })
  let text = ''
  socket.setEncoding('utf8')
  for await (const chunk of socket) text += chunk
  return text
}

describe('startChildService', function () {
  it('resolves with what the child said when ready, and stop() resolves once it has exited', async function () {
    const spawned = []
    const service = await startChildService(SERVICE, { onSpawn: function track (child) { spawned.push(child.pid) } })
    assert.deepEqual(spawned, [service.pid])
    assert.equal(await greeting(service.details.port), 'hello')
    await service.stop()
    assert.equal(processAlive(service.pid), false)
    await service.stop()
  })

  it('kills the child when the signal aborts', async function () {
    const controller = new AbortController()
    const service = await startChildService(SERVICE, { signal: controller.signal })
    controller.abort(new Error('cancelled'))
    await service.stop()
    assert.equal(processAlive(service.pid), false)
  })

  it('rejects at once for a signal already aborted, forking nothing', async function () {
    const reason = new Error('cancelled')
    let forked = false
    await assert.rejects(startChildService(SERVICE, { signal: AbortSignal.abort(reason), onSpawn: function track () { forked = true } }), reason)
    assert.equal(forked, false)
  })

  it('rejects with the child\'s stderr when it exits before it is ready', async function () {
    await assert.rejects(startChildService(path.join(HERE, '..', 'fixtures', 'no-such-service.js')),
      /^Error: no-such-service\.js exited \(1\) before saying it was ready: .*Cannot find module/s)
  })
})
