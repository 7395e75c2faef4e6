/**
 * A request's events on the lab's bus (lib/util/lab-events.js requestEvents): the envelope every
 * route's start and end share, without a server.
 */
import assert from 'node:assert/strict'
import { createLabEvents, requestEvents, WARM_UP_HEADER } from '../../lib/util/lab-events.js'

function listen () {
  const events = createLabEvents()
  const seen = []
  events.on('request', function keep (event) { seen.push(event) })
  return { events, seen }
}

function request (headers = {}) {
  return { headers }
}

describe('requestEvents', function () {
  it('gives a start and an end one id, the route, a time and the figures given', function () {
    const { events, seen } = listen()
    const one = requestEvents(events, 'good', request())
    one.start({ compressedBytes: 10 })
    one.end({ status: 200 })
    const [start, end] = seen
    assert.deepEqual([start.phase, start.id, start.route, start.compressedBytes], ['start', one.id, 'good', 10])
    assert.deepEqual([end.phase, end.id, end.route, end.status], ['end', one.id, 'good', 200])
    assert.ok(Number.isFinite(start.time) && end.time >= start.time)
  })

  it('adds the ms since the request began to its end, unless the route gives its own', function () {
    const { events, seen } = listen()
    const one = requestEvents(events, 'backpressure', request())
    one.end({ status: 200 })
    one.end({ status: 200, ms: 12.5 })
    assert.ok(seen[0].ms >= 0 && seen[0].ms < 1000, `ms ${seen[0].ms}`)
    assert.equal(seen[1].ms, 12.5)
  })

  it('names a failure\'s status and type, and 500 internal for an error that has none', function () {
    const { events, seen } = listen()
    const one = requestEvents(events, 'bad', request())
    one.failed(Object.assign(new Error('too large'), { status: 413, type: 'body.too.large' }), { held: 3 })
    one.failed(new Error('a bug'))
    const ends = seen.map(function figures (e) { return [e.phase, e.status, e.errorType] })
    assert.deepEqual(ends, [['end', 413, 'body.too.large'], ['end', 500, 'internal']])
    assert.equal(seen[0].held, 3)
  })

  it('marks every event of a warm-up upload, and only those', function () {
    const { events, seen } = listen()
    requestEvents(events, 'good', request({ [WARM_UP_HEADER]: '1' })).start()
    requestEvents(events, 'good', request()).start()
    assert.deepEqual(seen.map(function mark (e) { return e.warmUp }), [true, undefined])
  })

  it('draws a new id for each request', function () {
    const { events } = listen()
    const ids = [requestEvents(events, 'good', request()).id, requestEvents(events, 'good', request()).id]
    assert.ok(ids[1] > ids[0])
  })
})
