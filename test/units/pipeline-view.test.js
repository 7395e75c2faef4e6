/**
 * The pipeline view's bars and figures from a sample (dashboard/pipeline-bars.js), without a page:
 * the kernel's bars kept once seen, each stage's peak the server's, one unit on the rates line.
 * How they are drawn, in Chromium: test/slow/dashboard-pipeline.test.js.
 */
import assert from 'node:assert/strict'
import { pipelineBars, pipelineFigures } from '../../dashboard/pipeline-bars.js'

const KiB = 1024

function sample ({ kernel = { source: '/proc/net/tcp', serverReceiveQueue: 4 * 1024 * KiB, clientSendQueue: 2 * 1024 * KiB } } = {}) {
  return {
    ms: 2500,
    settings: { mode: 'pipeline', delayMs: 50, rate: 0, highWaterMark: 64 * KiB },
    stages: [{ name: 'request', bytes: 128 * KiB, bound: 80 * KiB }, { name: 'consumer', bytes: 64 * KiB, bound: 64 * KiB }],
    peaks: { held: 300 * KiB, stages: { request: 174 * KiB, consumer: 128 * KiB } },
    kernel,
    client: { waitingBytes: 0, bound: 16 * KiB },
    read: { unreadBytes: 6 * 1024 * KiB },
    rss: 100 * 1024 * KiB,
    held: 192 * KiB,
    rates: { clientSent: 2048, arrived: 1.5 * 1024 * 1024, consumed: 1.2 * 1024 * 1024 }
  }
}

describe('the pipeline view\'s bars', function () {
  it('gives each stage the server\'s peak, looked at after every batch', function () {
    const request = pipelineBars(sample()).find(function named (b) { return b.key === 'stage:request' })
    assert.deepEqual([request.bytes, request.bound, request.peak], [128 * KiB, 80 * KiB, 174 * KiB])
  })

  it('keeps the two kernel bars, unknown, for a sample that could not read them once they were read', function () {
    const unread = sample({ kernel: { source: null, serverReceiveQueue: null, clientSendQueue: null } })
    const keys = pipelineBars(sample()).map(function key (b) { return b.key })
    const kept = pipelineBars(unread, { kernelSeen: true })
    assert.deepEqual(kept.map(function key (b) { return b.key }), keys)
    assert.equal(kept.find(function queue (b) { return b.key === 'serverReceiveQueue' }).bytes, null)
    // never read in this run: the two kernels as one bar, from what was sent and not read
    assert.ok(pipelineBars(unread).some(function both (b) { return b.key === 'kernels' }))
  })

  it('writes every rate in MiB/s', function () {
    assert.equal(pipelineFigures(sample())[2], 'rates (MiB/s): client sent 0.00 · arrived 1.50 (gzip) · consumed 1.20 (inflated)')
  })
})
