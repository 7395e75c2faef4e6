/**
 * The backpressure experiment's fast part: its schema and errors, the
 * /proc/net/tcp reader on fixture text, the stages in process on a small
 * generated body (bounded behind "pipeline", stopped by the cap behind
 * "ignore"), and POST /backpressure/:token on a small body. Runs through
 * /experiments, with a client process and the live params, are in
 * test/slow/backpressure.test.js.
 */
import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import zlib from 'node:zlib'
import { readConnectionQueues, connectionQueues, parseTcpTable } from '../experiments/backpressure/tcp-queues.js'
import { BATCH_BYTES, createBatcher, createConsumer, runPipeline, watchHeld } from '../experiments/backpressure/stages.js'
import { normalizeParams, params } from '../experiments/backpressure/settings.js'
import * as bench from '../experiments/backpressure/bench.js'
import { call } from './experiment-helpers.js'
import { collect, generatedGzip, labInTempDir, post } from './helpers.js'

const TCP = 'test/fixtures/proc-net-tcp.txt'
const TCP6 = 'test/fixtures/proc-net-tcp6.txt'

/** The stages of ./stages.js in process, fed a gzipped body, read the way the route reads them. */
async function throughStages (gzipped, { mode, delayMs, cap, highWaterMark = 64 * 1024 }) {
  const settings = { mode, delayMs }
  const source = Readable.from([gzipped.subarray(0, gzipped.length >> 1), gzipped.subarray(gzipped.length >> 1)])
  const gunzip = zlib.createGunzip({ highWaterMark })
  const batcher = createBatcher({ highWaterMark })
  const consumer = createConsumer({ highWaterMark, settings })
  const batches = []
  const written = consumer.write.bind(consumer)
  consumer.write = function keepBatch (batch) {
    batches.push(batch.toString('utf8'))
    return written(batch)
  }
  const read = function readStages () {
    return [
      { name: 'request', bytes: source.readableLength, bound: source.readableHighWaterMark },
      { name: 'gunzip.in', bytes: gunzip.writableLength, bound: gunzip.writableHighWaterMark },
      { name: 'gunzip.out', bytes: gunzip.readableLength, bound: gunzip.readableHighWaterMark },
      { name: 'batcher.in', bytes: batcher.writableLength + batcher.pendingBytes, bound: batcher.writableHighWaterMark },
      { name: 'batcher.out', bytes: batcher.queuedBytes, bound: batcher.readableBytesBound },
      { name: 'consumer', bytes: consumer.writableLength, bound: consumer.writableHighWaterMark }
    ]
  }
  const held = watchHeld({ read, cap, route: 'backpressure', reservation: null, base: 0 })
  const error = await runPipeline({ body: source, gunzip, batcher, consumer }, settings, held.check)
  if (error !== null) consumer.destroy()
  return { error, batches, peaks: held.peaks(), tally: consumer.tally }
}

describe('backpressure experiment', function () {
  describe('the schema', function () {
    it('fills in the defaults: pipeline, full speed, 5 ms a batch, 64 KiB, 200 MB, a 128 MiB cap, 30 s', function () {
      const defaults = { mode: 'pipeline', rate: 0, delayMs: 5, highWaterMark: 65536, bytes: 200e6, cap: 128 * 1024 * 1024, seconds: 30 }
      assert.deepEqual({ ...normalizeParams({}) }, defaults)
    })

    it('marks the switch, the rate and the delay live, and nothing else', function () {
      const live = params.filter(function isLive (p) { return p.live }).map(function name (p) { return p.name })
      assert.deepEqual(live, ['mode', 'rate', 'delayMs'])
    })

    it('answers 400 naming the field', function () {
      const refusals = [[{ mode: 'drop' }, 'params.mode'], [{ delayMs: 1001 }, 'params.delayMs'], [{ rate: 1000 }, 'params.rate'],
        [{ highWaterMark: '512B' }, 'params.highWaterMark'], [{ cap: '2GiB' }, 'params.cap'], [{ seconds: 0 }, 'params.seconds'],
        [{ speed: 1 }, 'params.speed']]
      for (const [raw, field] of refusals) {
        function names (err) { return err.status === 400 && err.details.parameter === field }
        assert.throws(function refused () { normalizeParams(raw) }, names, JSON.stringify(raw))
      }
    })

    it('holds the body to the lab\'s largest generated document', function () {
      function names (err) { return err.details.parameter === 'params.bytes' }
      assert.throws(function tooLarge () { normalizeParams({ bytes: '2GB' }, { generate: { maxBytes: 1e9 } }) }, names)
    })
  })

  describe('the bench', function () {
    it('runs cases a and b by default, a slow consumer behind each way', function () {
      const { runs } = bench.normalize({ cases: 'a,b' })
      const settings = runs.map(function settings (r) { return [r.case, r.params.mode, r.params.delayMs, r.params.rate] })
      assert.deepEqual(settings, [['a', 'pipeline', 50, 0], ['b', 'ignore', 50, 0]])
    })

    it('refuses a flag a case sets, and an unknown case', function () {
      assert.throws(function setByCase () { bench.normalize({ cases: 'a', 'delay-ms': '20' }) }, /--delay-ms is set by case a/)
      assert.throws(function unknownCase () { bench.normalize({ cases: 'c' }) }, /--cases takes a, b, flags/)
      assert.equal(bench.normalize({ cases: 'flags', 'delay-ms': '20' }).runs[0].params.delayMs, 20)
    })
  })

  describe('the kernel\'s queues from /proc/net/tcp', function () {
    it('reads each socket\'s ports, state and queues from hex', async function () {
      const sockets = parseTcpTable(await import('node:fs').then(function read (fs) { return fs.readFileSync(TCP, 'latin1') }))
      assert.equal(sockets.length, 5)
      assert.deepEqual(sockets[1], { localPort: 3000, remotePort: 51000, state: 'established', txQueue: 0, rxQueue: 0x16A000 })
      assert.deepEqual(sockets[2], { localPort: 51000, remotePort: 3000, state: 'established', txQueue: 0x3C0000, rxQueue: 0 })
      assert.equal(sockets[0].state, 'listen')
    })

    it('finds the two ends of one connection, not its neighbour on the same server port', async function () {
      const text = (await import('node:fs')).readFileSync(TCP, 'latin1')
      assert.deepEqual(connectionQueues(text, { serverPort: 3000, clientPort: 51000 }),
        { serverReceiveQueue: 1482752, serverSendQueue: 0, clientSendQueue: 3932160, clientReceiveQueue: 0 })
      assert.deepEqual(connectionQueues(text, { serverPort: 3000, clientPort: 51001 }).serverReceiveQueue, 4096)
    })

    it('reads tcp6 too (an IPv4 client of a dual-stack server), and nulls for a connection not there', async function () {
      const found = await readConnectionQueues({ serverPort: 8080, clientPort: 40000 }, { tables: [TCP, TCP6], available: true })
      const queues = { serverReceiveQueue: 65535, serverSendQueue: 0, clientSendQueue: 65536, clientReceiveQueue: 0 }
      assert.deepEqual(found, { source: '/proc/net/tcp', ...queues })
      const gone = await readConnectionQueues({ serverPort: 8080, clientPort: 1 }, { tables: [TCP, TCP6], available: true })
      assert.equal(gone.serverReceiveQueue, null)
    })

    it('says it read nothing where there is no /proc', async function () {
      assert.deepEqual(await readConnectionQueues({ serverPort: 3000, clientPort: 51000 }, { tables: [TCP], available: false }),
        { source: null, serverReceiveQueue: null, serverSendQueue: null, clientSendQueue: null, clientReceiveQueue: null })
    })
  })

  describe('the stages', function () {
    let gzipped
    let inflated

    before(async function () {
      gzipped = await generatedGzip({ bytes: 1_500_000, format: 'ndjson' })
      inflated = await collect(Readable.from([gzipped]), zlib.createGunzip())
    })

    it('cut ~64 KiB batches of whole lines and hand the consumer every byte, in order', async function () {
      const { error, batches, tally } = await throughStages(gzipped, { mode: 'pipeline', delayMs: 0, cap: 1024 * 1024 * 1024 })
      assert.equal(error, null)
      assert.equal(batches.join(''), inflated.toString('utf8'))
      for (const batch of batches) assert.ok(batch.endsWith('\n'), 'a batch ends at a line\'s end')
      // cut at the last line end once 64 KiB have gathered: a line short of it, an inflated chunk past it at most
      for (const batch of batches.slice(0, -1)) {
        const bytes = Buffer.byteLength(batch)
        assert.ok(bytes > BATCH_BYTES - 4096 && bytes < BATCH_BYTES + 32 * 1024, `a batch of ${bytes} bytes`)
      }
      assert.equal(tally.consumedBytes, inflated.length)
    })

    it('behind "pipeline", keep every stream within its bound and one batch, whatever the consumer\'s pace', async function () {
      const { error, peaks } = await throughStages(gzipped, { mode: 'pipeline', delayMs: 2, cap: 1024 * 1024 * 1024 })
      assert.equal(error, null)
      for (const [name, peak] of Object.entries(peaks.stages)) assert.ok(peak <= 64 * 1024 + 2 * BATCH_BYTES, `${name} held ${peak}`)
      assert.ok(peaks.held < 10 * 64 * 1024, `held ${peaks.held} in all`)
    })

    it('behind "ignore", let the consumer\'s buffer grow past its bound until the cap stops it', async function () {
      // a second a batch: the consumer takes four batches in the time the cap needs them, the body fills it in milliseconds
      const cap = 4 * BATCH_BYTES
      const { error, peaks, tally } = await throughStages(gzipped, { mode: 'ignore', delayMs: 1000, cap })
      assert.equal(error?.type, 'buffer.cap.exceeded')
      assert.equal(error.status, 413)
      assert.ok(peaks.stages.consumer > cap, `the consumer held ${peaks.stages.consumer}`)
      assert.ok(tally.batches < 4)
    })
  })

  describe('the stages, counted in bytes', function () {
    it('count a batch of one long line at its bytes: the batcher\'s readable side holds its bound and a batch', async function () {
      // 30 lines of ~900 KB: each batch is one line, and 16 of them are what a bound in batches would let wait
      const line = JSON.stringify({ s: 'x'.repeat(900_000) }) + '\n'
      const gzipped = zlib.gzipSync(Buffer.from(line.repeat(30)), { level: 9 })
      const highWaterMark = 1024 * 1024
      const settings = { mode: 'pipeline', delayMs: 50, cap: 1024 * 1024 * 1024, highWaterMark }
      const { error, peaks, tally } = await throughStages(gzipped, settings)
      assert.equal(error, null)
      assert.equal(tally.batches, 30)
      assert.ok(peaks.stages['batcher.out'] <= highWaterMark + line.length, `batcher.out held ${peaks.stages['batcher.out']}`)
      assert.ok(peaks.stages['batcher.in'] <= highWaterMark + line.length + BATCH_BYTES, `batcher.in held ${peaks.stages['batcher.in']}`)
    })

    it('let go of every batch queued behind a write the consumer was destroyed in', async function () {
      const consumer = createConsumer({ highWaterMark: BATCH_BYTES, settings: { delayMs: 1000 } })
      const told = []
      function written (err) { told.push(err?.code ?? null) }
      for (let k = 0; k < 5; k++) consumer.write(Buffer.alloc(BATCH_BYTES), written)
      assert.equal(consumer.writableLength, 5 * BATCH_BYTES)
      consumer.destroy()
      await new Promise(function nextTick (resolve) { setImmediate(resolve) })
      assert.equal(consumer.writableLength, 0)
      assert.deepEqual(told, Array(5).fill('ERR_STREAM_DESTROYED'))
    })

    it('let go of the writes waiting on a batcher destroyed at its bound', async function () {
      const batcher = createBatcher({ highWaterMark: BATCH_BYTES })
      const line = Buffer.from('x'.repeat(BATCH_BYTES) + '\n')
      for (let k = 0; k < 4; k++) batcher.write(line, function written () {})
      // nobody reads: the first batch fills the readable side, the writes behind it wait
      await new Promise(function nextTick (resolve) { setImmediate(resolve) })
      assert.ok(batcher.writableLength >= 2 * line.length, `batcher.in holds ${batcher.writableLength}`)
      batcher.destroy()
      await new Promise(function nextTick (resolve) { setImmediate(resolve) })
      assert.equal(batcher.writableLength, 0)
    })
  })

  describe('POST /backpressure/:token', function () {
    const lab = labInTempDir('backpressure')

    it('streams a small body to the consumer and answers once it has taken the last batch', async function () {
      const body = await generatedGzip({ bytes: 200_000, format: 'ndjson' })
      const res = await post(`${lab.url}/backpressure/small-body-1?delayMs=0`, body)
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.token, 'small-body-1')
      assert.ok(res.body.consumedBytes >= 200_000 && res.body.batches >= 3)
      const state = await call(`${lab.url}/backpressure/small-body-1`)
      assert.equal(state.status, 200)
      assert.deepEqual(state.body.outcome, { stoppedBy: 'end', error: null })
      const names = state.body.stages.map(function name (s) { return s.name })
      assert.deepEqual(names, ['request', 'gunzip.in', 'gunzip.out', 'batcher.in', 'batcher.out', 'consumer'])
      assert.equal(state.body.consumer.consumedBytes, res.body.consumedBytes)
    })

    it('answers 400 naming the field for a bad setting or token, and 404 for an upload it does not know', async function () {
      const body = await generatedGzip({ size: 1, format: 'ndjson' })
      const bad = await post(`${lab.url}/backpressure/small-body-2?highWaterMark=12`, body)
      assert.equal(bad.status, 400)
      assert.equal(bad.body.error.parameter, 'params.highWaterMark')
      const token = await post(`${lab.url}/backpressure/no`, body)
      assert.equal(token.body.error.parameter, 'token')
      assert.equal((await call(`${lab.url}/backpressure/never-sent-1`)).status, 404)
      const patch = await call(`${lab.url}/backpressure/small-body-1`, 'PATCH', { highWaterMark: 1024 })
      assert.equal(patch.body.error?.parameter, 'params.highWaterMark')
    })

    it('PATCH /experiments/:id answers 404 for a run it does not know', async function () {
      const res = await call(`${lab.url}/experiments/no-such-run`, 'PATCH', { params: { delayMs: 50 } })
      assert.equal(res.status, 404)
      assert.equal(res.body.error.type, 'experiment.not.found')
    })
  })
})
