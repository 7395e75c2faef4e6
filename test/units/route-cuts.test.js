/**
 * When a new route's first request closes the allocation-site window (lib/metrics/route-cuts.js),
 * event by event, with made-up times. The lab doing it: test/alloc-sites.test.js.
 */
import assert from 'node:assert/strict'
import { ROUTE_CUT_MS, RouteCuts } from '../../lib/metrics/route-cuts.js'

const SAMPLING = { active: true, collecting: false }

function start (id, route, time, more = {}) {
  return { phase: 'start', id, route, time, ...more }
}

describe('route cuts of the allocation-site windows (lib/metrics/route-cuts.js)', function () {
  it('closes the window at the start of a new route\'s first request, and not for the same route again', function () {
    const cuts = new RouteCuts()
    assert.equal(cuts.closed(0), false)
    assert.equal(cuts.onRequest(start(1, 'bad', 1000), SAMPLING), 1000)
    assert.equal(cuts.closed(1000), false)
    assert.equal(cuts.onRequest(start(2, 'bad', 2000), SAMPLING), null, 'the route in flight at the cut is the next window\'s')
    assert.equal(cuts.onRequest(start(3, 'good', 3000), SAMPLING), 3000)
  })

  it('puts off a cut too soon after a window, or while one is collected: the next window starts the epoch', function () {
    const cuts = new RouteCuts()
    cuts.closed(1000)
    assert.equal(cuts.onRequest(start(1, 'bad', 1000 + ROUTE_CUT_MS - 1), SAMPLING), null)
    assert.equal(cuts.closed(2000), true, 'put off to this window')
    assert.equal(cuts.closed(4000), false, 'once')
    assert.equal(cuts.onRequest(start(2, 'good', 5000), { active: true, collecting: true }), null)
    assert.equal(cuts.closed(6000), true)
  })

  it('cuts for nothing while sites are not sampled, for an experiment\'s warm-up, or for an event that is not a request', function () {
    const cuts = new RouteCuts()
    cuts.closed(0)
    assert.equal(cuts.onRequest(start(1, 'bad', 1000), { active: false, collecting: false }), null)
    assert.equal(cuts.onRequest(start(2, 'good', 2000, { warmUp: true }), SAMPLING), null)
    for (const odd of [null, {}, { phase: 'start', route: 'x', time: 1 }, { phase: 'start', id: {}, route: 'x' }, start(3, 7, 3000)]) {
      assert.equal(cuts.onRequest(odd, SAMPLING), null, JSON.stringify(odd))
    }
    assert.equal(cuts.closed(9000), false)
    assert.equal(cuts.onRequest(start(4, 'good', 10_000), SAMPLING), 10_000, 'the warm-up\'s route is still new')
  })

  it('forgets a request that ended: its route is new again after the next window', function () {
    const cuts = new RouteCuts()
    cuts.closed(0)
    assert.equal(cuts.onRequest(start(1, 'bad', 1000), SAMPLING), 1000)
    cuts.closed(1000)
    cuts.onRequest({ phase: 'end', id: 1, route: 'bad', time: 1500 }, SAMPLING)
    cuts.closed(2000)
    assert.equal(cuts.onRequest(start(2, 'bad', 3000), SAMPLING), 3000)
  })
})
