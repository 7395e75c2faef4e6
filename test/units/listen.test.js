/** lib/util/listen.js: several events of one emitter, listened to and dropped together. */
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { listen } from '../../lib/util/listen.js'

describe('listen (lib/util/listen.js)', function () {
  it('adds a listener per event, and the function it returns removes every one of them', function () {
    const emitter = new EventEmitter()
    const heard = []
    const stop = listen(emitter, {
      data: function onData (x) { heard.push(`data ${x}`) },
      end: function onEnd () { heard.push('end') }
    })
    emitter.emit('data', 1)
    emitter.emit('end')
    stop()
    emitter.emit('data', 2)
    assert.deepEqual(heard, ['data 1', 'end'])
    assert.deepEqual([emitter.listenerCount('data'), emitter.listenerCount('end')], [0, 0])
  })

  it('leaves listeners others added', function () {
    const emitter = new EventEmitter()
    emitter.on('data', function theirs () {})
    listen(emitter, { data: function mine () {} })()
    assert.equal(emitter.listenerCount('data'), 1)
  })
})
