/**
 * GET /metrics with clients that stop reading, over a unix socket (a small
 * kernel buffer): the lab keeps at most a socket buffer of bytes for one,
 * counts the samples it drops and says what it lost; it sends heartbeats to
 * clients that read, and ends one whose socket has not drained for stallMs.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { once } from 'node:events'
import { startMetricsLab, until } from '../metrics-helpers.js'

/**
 * A client that connects over a unix socket and never reads. A unix socket's
 * kernel buffer is ~200 KiB where loopback TCP's grows to 4 MiB, which at
 * 10 ms samples would take a minute and more to fill.
 */
async function startStalledClient (socketPath) {
  const socket = net.connect(socketPath)
  await once(socket, 'connect')
  socket.write('GET /metrics?interval=10 HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n')
  // never read: Node's readable buffer fills to its high-water mark, then the kernel's
  socket.pause()
  return socket
}

function snapshotOver (socketPath) {
  return new Promise(function (resolve, reject) {
    http.get({ socketPath, path: '/metrics?format=json' }, function (res) {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', function (chunk) { text += chunk })
      res.on('end', function () { resolve(JSON.parse(text)) })
    }).on('error', reject)
  })
}

describe('GET /metrics with a client that stops reading', function () {
  const socketPath = path.join(os.tmpdir(), `streamlab-metrics-${process.pid}.sock`)
  const HISTORY = 100
  let lab
  let slow
  before(async function () {
    fs.rmSync(socketPath, { force: true })
    // no 'peak' events of its own: the experiment events below are to be the only ones it can miss
    lab = await startMetricsLab({ path: socketPath }, { metrics: { historySize: HISTORY, peakStep: Number.MAX_SAFE_INTEGER } })
  })
  after(async function () {
    slow?.destroy()
    await lab.close()
    fs.rmSync(socketPath, { force: true })
  })

  it('keeps at most a socket buffer of bytes for it, counts the samples it drops, and says what it lost', async function () {
    this.timeout(30000)
    slow = await startStalledClient(socketPath)
    const buffered = []
    const congested = await until(async function () {
      const s = await snapshotOver(socketPath)
      if (s.clients.length === 1) buffered.push(s.clients[0].bufferedBytes)
      return s.clients[0]?.dropped > 0 ? s : null
    }, 20000, 'the hub to drop samples')
    // long enough for the history to let go of every sample it had when the drops began
    const later = await until(async function () {
      const s = await snapshotOver(socketPath)
      return s.history.oldestId > congested.history.newestId ? s : null
    }, 10000, 'the history to roll over')
    buffered.push(later.clients[0].bufferedBytes)
    assert.ok(later.clients[0].dropped > congested.clients[0].dropped, 'drops keep rising while it does not read')
    assert.ok(later.dropped >= later.clients[0].dropped)
    assert.equal(later.clients[0].congested, true)
    // one socket high-water mark (16 KiB on Node 20, 64 KiB from Node 22) and a frame, not a backlog
    const most = Math.max(...buffered)
    assert.ok(most < 80 * 1024, `buffered ${most} bytes`)

    // events are never dropped for congestion; more of them than the history holds make a gap
    const events = lab.app.locals.events
    const EXPERIMENT_EVENTS = HISTORY + 50
    for (let i = 1; i <= EXPERIMENT_EVENTS; i++) events.emit('experiment', { id: 'x', phase: 'progress', time: Date.now(), step: i })
    assert.equal((await snapshotOver(socketPath)).clients[0].bufferedBytes, later.clients[0].bufferedBytes,
      'nothing more was buffered for it')

    // reading again: it hears how many samples it lost, which ids it missed, then the rest
    let text = ''
    slow.setEncoding('utf8')
    slow.on('data', function (chunk) { text += chunk })
    slow.resume()
    await until(function () { return text.includes(`"step":${EXPERIMENT_EVENTS}}`) }, 5000, 'the last experiment event')
    const notice = JSON.parse(/event: dropped\ndata: (\{.*\})\n\n/.exec(text)[1])
    assert.ok(notice.count > 0)
    assert.ok(notice.total >= notice.count)
    const steps = [...text.matchAll(/id: (\d+)\nevent: experiment\ndata: .*"step":(\d+)\}/g)].map(function (m) { return Number(m[2]) })
    const firstId = Number(/id: (\d+)\nevent: experiment\n/.exec(text)[1])
    // the gap starts at the first event it missed: dropped samples before it are not reported twice
    const gap = JSON.parse(/event: gap\ndata: (\{.*\})\n\n/.exec(text)[1])
    assert.deepEqual(gap, { from: firstId - (steps[0] - 1), to: firstId - 1 })
    assert.ok(steps.length > 0 && steps.length < EXPERIMENT_EVENTS, `got ${steps.length} experiment events`)
    assert.deepEqual(steps, steps.map(function (_, k) { return steps[0] + k }), 'what it got is in order, without holes')
    assert.equal(steps.at(-1), EXPERIMENT_EVENTS)

    slow.destroy()
    await until(async function () { return (await snapshotOver(socketPath)).clients.length === 0 }, 2000, 'the client to leave')
    assert.equal(lab.app.locals.sampler.active, false)
  })
})

describe('GET /metrics heartbeats and stalled clients', function () {
  const socketPath = path.join(os.tmpdir(), `streamlab-metrics-stall-${process.pid}.sock`)
  let lab
  let slow
  let reader
  before(async function () {
    fs.rmSync(socketPath, { force: true })
    lab = await startMetricsLab({ path: socketPath }, { metrics: { heartbeatMs: 100, stallMs: 300 } })
  })
  after(async function () {
    slow?.destroy()
    reader?.destroy()
    await lab.close()
    fs.rmSync(socketPath, { force: true })
  })

  it('sends heartbeat comments to a client that reads', async function () {
    reader = net.connect(socketPath)
    let text = ''
    reader.setEncoding('utf8')
    reader.on('data', function (chunk) { text += chunk })
    reader.write('GET /metrics?interval=5000 HTTP/1.1\r\nHost: localhost\r\n\r\n')
    await until(function () { return (text.match(/: heartbeat\n\n/g) ?? []).length >= 2 }, 3000, 'two heartbeats')
    reader.destroy()
  })

  it('ends a client whose socket has not drained for stallMs', async function () {
    this.timeout(30000)
    slow = await startStalledClient(socketPath)
    const closed = once(slow, 'close')
    await until(async function () { return (await snapshotOver(socketPath)).ended === 1 }, 20000, 'the hub to end the client')
    // the end of the stream sits behind the bytes it never read
    slow.resume()
    await closed
    assert.equal((await snapshotOver(socketPath)).clients.length, 0)
  })
})
