/**
 * The options of the limits that keep one client from starving the others
 * (a body's minimum rate, the server's connection cap and timeouts, the
 * /metrics stream cap): defaults, a TypeError for a bad value, the caller's
 * object unchanged. The limits at work are test/slow/slow-clients.test.js's.
 */
import assert from 'node:assert/strict'
import { normalizeOptions } from '../lib/config/options.js'
import { createLabServer } from '../lib/http/server.js'
import { createMetricsHub } from '../lib/metrics/stream.js'
import { createLabEvents } from '../lib/util/lab-events.js'
import { createSampler } from '../lib/metrics/sampler.js'

describe('the options of these limits', function () {
  it('normalises limits.minBodyRate and limits.bodyRateWindowMs, with a TypeError for bad values', function () {
    const opts = normalizeOptions()
    assert.equal(opts.limits.bodyIdleMs, 10_000)
    assert.equal(opts.limits.minBodyRate, 4096)
    assert.equal(opts.limits.bodyRateWindowMs, 10_000)
    assert.equal(normalizeOptions({ limits: { minBodyRate: 0 } }).limits.minBodyRate, 0)
    assert.throws(function () { normalizeOptions({ limits: { minBodyRate: -1 } }) }, TypeError)
    assert.throws(function () { normalizeOptions({ limits: { minBodyRate: 1.5 } }) }, TypeError)
    assert.throws(function () { normalizeOptions({ limits: { bodyRateWindowMs: 0 } }) }, TypeError)
  })

  it('normalises its options, with a TypeError for bad values and the caller\'s object unchanged', function () {
    // the cap itself is held by test/slow/slow-clients.test.js; not listening, these servers hold nothing
    const given = Object.freeze({ maxConnections: 7, headersTimeout: 5000 })
    const server = createLabServer(function noApp () {}, given)
    assert.equal(server.headersTimeout, 5000)
    assert.equal(server.requestTimeout, 15 * 60_000, 'a default where nothing was given')
    assert.deepEqual(given, { maxConnections: 7, headersTimeout: 5000 })
    assert.equal(createLabServer(function noApp () {}).headersTimeout, 10_000)
    for (const bad of [0, -1, 2.5, '10', null]) {
      assert.throws(function () { createLabServer(function noApp () {}, { maxConnections: bad }) }, TypeError, String(bad))
    }
  })

  it('normalises the hub\'s maxClients, with a TypeError for bad values', function () {
    const events = createLabEvents()
    const sampler = createSampler()
    try {
      for (const bad of [0, -1, 1.5, 'many']) {
        assert.throws(function () { createMetricsHub({ events, sampler, maxClients: bad }) }, TypeError, String(bad))
      }
      createMetricsHub({ events, sampler, maxClients: 1 }).close()
    } finally {
      sampler.close()
    }
  })
})
