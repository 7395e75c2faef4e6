/**
 * lib/metrics/peak-sampler.js: the sampled peak RSS that stands in for the kernel's
 * where there is none. It must catch a peak the main thread is too busy to
 * see, and not report one it did not see.
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { Worker } from 'node:worker_threads'
import { PeakSampler } from '../../../lib/metrics/peak-sampler.js'

const MiB = 1024 * 1024

describe('lib/metrics/peak-sampler.js', function () {
  this.timeout(30_000)
  let sampler = null
  afterEach(async function closeSampler () { await sampler?.close() })

  it('catches a peak that came and went while the main thread was busy the whole time', async function () {
    sampler = new PeakSampler({ everyMs: 2 })
    const stop = sampler.watch()
    // give the thread time to start: it samples from then on
    await new Promise(function later (resolve) { setTimeout(resolve, 300) })
    sampler.reset()
    const before = process.memoryUsage.rss()
    // another thread touches 200 MiB, holds it a moment and exits, which frees it; this thread
    // spins the whole time, so nothing on it (no timer, no read) can see the peak
    const holder = new Worker(`
      const block = Buffer.alloc(200 * 1024 * 1024, 1)
      const until = Date.now() + 400
      while (Date.now() < until) block[Math.floor(Math.random() * block.length)] ^= 1
    `, { eval: true })
    const gone = once(holder, 'exit')
    const until = Date.now() + 2500
    while (Date.now() < until) Math.sqrt(Math.random())
    await gone
    const peak = sampler.read()
    const after = process.memoryUsage.rss()
    stop()
    assert.ok(peak - before > 150 * MiB, `sampled peak ${((peak - before) / MiB).toFixed(1)} MiB above the start, expected > 150 MiB`)
    assert.ok(peak - after > 100 * MiB, `the memory was freed before the read: ${((peak - after) / MiB).toFixed(1)} MiB below the peak`)
  })

  it('starts a new peak at reset, and reads at least the RSS now', async function () {
    sampler = new PeakSampler()
    const stop = sampler.watch()
    sampler.reset()
    const peak = sampler.read()
    const rss = process.memoryUsage.rss()
    stop()
    // a fresh peak is the RSS of about now, not of some earlier moment of the suite
    assert.ok(Math.abs(peak - rss) < 64 * MiB, `peak ${peak} against rss ${rss}`)
  })

  it('ends its thread once nobody has watched for a second, and starts another at the next watch', async function () {
    sampler = new PeakSampler()
    sampler.watch()()
    const gone = once(sampler.worker, 'exit')
    await gone
    assert.equal(sampler.worker, null)
    const stop = sampler.watch()
    assert.notEqual(sampler.worker, null)
    stop()
  })

  it('refuses a bad interval, and closes more than once', async function () {
    assert.throws(function zero () { return new PeakSampler({ everyMs: 0 }) }, TypeError)
    sampler = new PeakSampler()
    sampler.watch()()
    await sampler.close()
    await sampler.close()
    assert.equal(typeof sampler.watch(), 'function')
  })
})
