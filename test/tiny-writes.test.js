/**
 * Tiny writes: every way of sending delivers exactly N bytes in order, the
 * write calls are what each way promises, and one write per byte is
 * slower than a coalescing buffer by far more than the noise of a busy
 * 2-core machine.
 */
import assert from 'node:assert/strict'
import net from 'node:net'
import { TINY_MODES, sendBytes, suckBytes } from '../experiments/tiny-writes/writes.js'
import * as tinyBench from '../experiments/tiny-writes/bench.js'
import { assertCharts, assertPublished, call, runExperiment } from './experiment-helpers.js'
import { labInTempDir } from './helpers.js'
import { processAlive } from '../lib/util/process-alive.js'

const N = 100_000

/** A sink on 127.0.0.1 in this process, for the library-level specs. */
function startSink () {
  const tallies = []
  const server = net.createServer(function onConnection (socket) {
    socket.on('error', function ignoreReset () {})
    tallies.push(suckBytes(socket))
  })
  return new Promise(function listening (resolve) {
    server.listen(0, '127.0.0.1', function ready () {
      resolve({
        port: server.address().port,
        tallies,
        close: function closeSink () { return new Promise(function closed (done) { server.close(done) }) }
      })
    })
  })
}

/** Send N bytes one way and read the sink's answer line. */
async function transfer (port, how) {
  const socket = net.connect({ host: '127.0.0.1', port })
  await new Promise(function connected (resolve, reject) {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  const reply = new Promise(function readReply (resolve, reject) {
    let text = ''
    socket.setEncoding('utf8')
    socket.on('data', function keep (chunk) { text += chunk })
    socket.on('end', function ended () { resolve(JSON.parse(text)) })
    socket.on('error', reject)
  })
  const { writeCalls } = await sendBytes(socket, how)
  socket.end()
  const tally = await reply
  socket.destroy()
  return { writeCalls, tally }
}

describe('tiny writes', function () {
  let sink

  before(async function () {
    sink = await startSink()
  })

  after(async function () {
    await sink.close()
  })

  const expectedCalls = { 'per-byte': N, cork: N, coalesce: Math.ceil(N / 65536) }
  for (const mode of TINY_MODES) {
    it(`${mode}: delivers exactly ${N} bytes, in order, with ${expectedCalls[mode]} socket.write() calls`, async function () {
      const { writeCalls, tally } = await transfer(sink.port, { bytes: N, mode, batch: 65536 })
      assert.deepEqual({ bytes: tally.bytes, inOrder: tally.inOrder }, { bytes: N, inOrder: true })
      assert.equal(writeCalls, expectedCalls[mode])
    })
  }

  it('coalesce writes a batch only when it is full, and the rest once at the end', async function () {
    const written = []
    const socket = { write: function record (chunk) { written.push([...chunk]); return true } }
    const { writeCalls } = await sendBytes(socket, { bytes: 6, mode: 'coalesce', batch: 4 })
    assert.deepEqual(written, [[0, 1, 2, 3], [4, 5]])
    assert.equal(writeCalls, 2)
  })

  it('rejects an unknown mode with a TypeError', async function () {
    await assert.rejects(sendBytes({}, { bytes: 1, mode: 'sideways', batch: 1 }), TypeError)
  })
})

describe('the tiny-writes experiment', function () {
  const lab = labInTempDir('tiny')

  it('is listed by GET /experiments with its parameter schema', async function () {
    const { body } = await call(`${lab.url}/experiments`)
    const experiment = body.experiments.find(function byName (e) { return e.name === 'tiny-writes' })
    assert.ok(experiment, 'tiny-writes is listed')
    assert.deepEqual(experiment.params.map(function paramName (p) { return p.name }), ['mode', 'bytes', 'batch', 'sweep', 'nagle'])
  })

  it('sends from a client process to a sink process; a write per byte is slower by far', async function () {
    this.timeout(30000)
    const run = await runExperiment(lab.url, 'tiny-writes', { bytes: N, sweep: 'single' })
    assert.equal(run.status, 'done', JSON.stringify(run.error))
    const byMode = Object.fromEntries(run.result.cells.map(function entry (c) { return [c.mode, c] }))
    assert.deepEqual(Object.keys(byMode), ['per-byte', 'cork', 'coalesce'])
    for (const cell of run.result.cells) assert.equal(cell.delivered, true, `${cell.mode} delivered every byte in order`)
    assert.equal(byMode['per-byte'].writeCalls, N)
    assert.equal(byMode.coalesce.writeCalls, 2)
    assert.equal(byMode.coalesce.bytesPerWrite, N / 2)
    // usually 10x to 100x; asserted 1.5x, so a loaded machine cannot make it flaky
    assert.ok(byMode['per-byte'].ms > 1.5 * byMode.coalesce.ms, `per-byte ${byMode['per-byte'].ms} ms vs coalesce ${byMode.coalesce.ms} ms`)
    if (byMode['per-byte'].syscalls !== null) {
      assert.ok(byMode['per-byte'].syscalls > 10 * byMode.coalesce.syscalls,
        `write syscalls: per-byte ${byMode['per-byte'].syscalls}, coalesce ${byMode.coalesce.syscalls}`)
    }
    assertCharts(assert, run.result.charts)
    assertPublished(assert, run.result.published)
    assert.deepEqual(run.result.published.map(function value (p) { return p.value }), [6.1, 1.2, 5])
    // a sink and three clients, all gone
    assert.equal(run.pids.length, 4)
    for (const pid of run.pids) assert.equal(processAlive(pid), false, `process ${pid} is gone`)
  })

  it('stops when cancelled, with the sink and the client gone', async function () {
    this.timeout(30000)
    const started = await call(`${lab.url}/experiments`, 'POST', { name: 'tiny-writes', params: { mode: 'per-byte', bytes: 10_000_000 } })
    assert.equal(started.status, 202)
    const { id } = started.body
    let state
    do {
      await new Promise(function wait (resolve) { setTimeout(resolve, 50) })
      state = (await call(`${lab.url}/experiments/${id}`)).body
    } while (state.status === 'running' && state.pids.length < 2)
    assert.equal(state.status, 'running', 'a transfer of 10,000,000 single bytes takes many seconds')
    const cancelled = await call(`${lab.url}/experiments/${id}`, 'DELETE')
    assert.equal(cancelled.status, 200)
    assert.equal(cancelled.body.status, 'cancelled')
    assert.equal(cancelled.body.pids.length, 2)
    for (const pid of cancelled.body.pids) assert.equal(processAlive(pid), false, `process ${pid} is gone`)
  })

  it('answers 400 parameter.invalid naming params.bytes past 10,000,000', async function () {
    const res = await call(`${lab.url}/experiments`, 'POST', { name: 'tiny-writes', params: { bytes: 20_000_000 } })
    assert.equal(res.status, 400)
    assert.equal(res.body.error.parameter, 'params.bytes')
  })
})

describe('npm run bench -- tiny-writes', function () {
  it('runs each cell from a fresh client and writes a table with the published figures', async function () {
    this.timeout(30000)
    const values = {}
    for (const [key, spec] of Object.entries(tinyBench.options)) values[key] = spec.default
    const opts = tinyBench.normalize({ ...values, bytes: '20000', batch: '256,65536', repeat: '1' })
    const result = await tinyBench.run(opts, function quiet () {})
    assert.equal(result.data.cells.length, 5)
    for (const cell of result.data.cells) assert.equal(cell.delivered, true)
    assert.match(result.markdown, /\| mode +\| batch B/)
    assert.match(result.markdown, /6\.1 s/)
    assertCharts(assert, result.charts)
  })
})
