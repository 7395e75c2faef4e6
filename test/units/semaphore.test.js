/**
 * lib/util/semaphore.js: a counting semaphore whose waiters can give up, and the queue helpers the
 * parse pool shares with it. An aborted request must not keep its place, and a waiter that was
 * served must stop listening to its signal.
 */
import assert from 'node:assert/strict'
import { getEventListeners } from 'node:events'
import { Semaphore, leaveQueue, waitInQueue } from '../../lib/util/semaphore.js'

/** Whether the promise has settled after the microtasks queued so far. */
async function settled (promise) {
  const pending = Symbol('pending')
  const result = await Promise.race([promise.then(function value () { return 'resolved' }, function reason () { return 'rejected' }),
    new Promise(function later (resolve) { setImmediate(resolve, pending) })])
  return result === pending ? false : result
}

describe('Semaphore', function () {
  it('gives up to `limit` places at once, each with its own release', async function () {
    const semaphore = new Semaphore(2)
    const first = await semaphore.acquire()
    const second = await semaphore.acquire()
    assert.equal(typeof first, 'function')
    assert.equal(semaphore.held, 2)
    const third = semaphore.acquire()
    assert.equal(await settled(third), false, 'the third waits')
    assert.equal(semaphore.waiting.length, 1)
    second()
    assert.equal(await settled(third), 'resolved', 'a release lets the next one in')
    assert.equal(semaphore.held, 2)
    first()
    ;(await third)()
    assert.equal(semaphore.held, 0)
  })

  it('serves waiters in the order they came', async function () {
    const semaphore = new Semaphore(1)
    const release = await semaphore.acquire()
    const order = []
    const waiters = ['a', 'b', 'c'].map(function wait (name) {
      return semaphore.acquire().then(function served (done) {
        order.push(name)
        return done
      })
    })
    release()
    for (const waiter of waiters) (await waiter)()
    assert.deepEqual(order, ['a', 'b', 'c'])
  })

  it('gives a place back once, however often its release is called', async function () {
    const semaphore = new Semaphore(1)
    const release = await semaphore.acquire()
    const next = semaphore.acquire()
    release()
    release()
    const third = semaphore.acquire()
    assert.equal(semaphore.held, 1, 'the second release changed nothing')
    assert.equal(await settled(third), false)
    ;(await next)()
    ;(await third)()
  })

  it('notes when a place was last given back, so a queue can tell moving from stuck', async function () {
    const semaphore = new Semaphore(1)
    assert.equal(semaphore.releasedAt, 0, 'never, before any release')
    const release = await semaphore.acquire()
    const before = Date.now()
    release()
    assert.ok(semaphore.releasedAt >= before && semaphore.releasedAt <= Date.now())
    const noted = semaphore.releasedAt
    release()
    assert.equal(semaphore.releasedAt, noted, 'a second call of the same release gives nothing back')
  })

  it('rejects at once with the reason of a signal that has already aborted, taking no place', async function () {
    const semaphore = new Semaphore(1)
    const reason = new Error('client gone')
    await assert.rejects(semaphore.acquire(AbortSignal.abort(reason)), reason)
    assert.equal(semaphore.held, 0)
  })

  it('takes a waiter out of the queue when its signal aborts, and serves the next one', async function () {
    const semaphore = new Semaphore(1)
    const release = await semaphore.acquire()
    const controller = new AbortController()
    const givesUp = semaphore.acquire(controller.signal)
    const stays = semaphore.acquire()
    controller.abort(new Error('aborted'))
    await assert.rejects(givesUp, /aborted/)
    assert.equal(semaphore.waiting.length, 1)
    release()
    ;(await stays)()
    assert.equal(semaphore.held, 0)
  })

  it('stops listening to the signal of a waiter it served', async function () {
    const semaphore = new Semaphore(1)
    const release = await semaphore.acquire()
    const controller = new AbortController()
    const waiter = semaphore.acquire(controller.signal)
    assert.equal(getEventListeners(controller.signal, 'abort').length, 1)
    release()
    const done = await waiter
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0)
    controller.abort()
    assert.equal(semaphore.held, 1, 'aborting after being served takes nothing back')
    done()
  })
})

describe('waitInQueue and leaveQueue', function () {
  it('queue a waiter without a signal, and leave it listening to nothing', function () {
    const queue = []
    const waiter = {}
    waitInQueue(queue, waiter, undefined, assert.fail)
    assert.deepEqual(queue, [waiter])
    assert.equal(waiter.signal, null)
    leaveQueue(waiter)
    assert.equal(waiter.onAbort, null)
  })

  it('take an aborted waiter out of the queue and reject it with the reason', function () {
    const queue = [{ other: true }]
    const controller = new AbortController()
    const waiter = {}
    let rejected = null
    waitInQueue(queue, waiter, controller.signal, function reject (reason) { rejected = reason })
    controller.abort('gone')
    assert.equal(rejected, 'gone')
    assert.deepEqual(queue, [{ other: true }])
  })

  it('leave a served waiter deaf to its signal', function () {
    const queue = []
    const controller = new AbortController()
    const waiter = {}
    waitInQueue(queue, waiter, controller.signal, assert.fail)
    queue.shift()
    leaveQueue(waiter)
    controller.abort()
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0)
  })
})
