/**
 * The parse pool's spare batch buffers (lib/parse/pool.js): the parse threads hand each batch's
 * buffer back, and the next batch about as large is written into it instead of a new one.
 */
import assert from 'node:assert/strict'
import { SpareBuffers } from '../lib/parse/pool.js'

const KiB = 1024

describe('the parse pool\'s spare batch buffers', function () {
  it('gives a view of the length asked, with room for a batch a quarter larger', function () {
    const bytes = new SpareBuffers().take(64 * KiB + 100)
    assert.equal(bytes.byteLength, 64 * KiB + 100)
    assert.equal(bytes.byteOffset, 0)
    assert.ok(bytes.buffer.byteLength >= 1.25 * (64 * KiB + 100), `${bytes.buffer.byteLength} bytes of room`)
  })

  it('writes the next batch into a buffer handed back', function () {
    const spares = new SpareBuffers()
    const first = spares.take(70 * KiB)
    spares.give(first.buffer)
    const next = spares.take(64 * KiB)
    assert.equal(next.buffer, first.buffer)
    assert.equal(spares.bytes, 0, 'a buffer in use is no longer a spare')
  })

  it('makes a new buffer where the spare is too small, or more than twice the batch', function () {
    const spares = new SpareBuffers()
    const small = spares.take(20 * KiB)
    spares.give(small.buffer)
    assert.notEqual(spares.take(200 * KiB).buffer, small.buffer)
    const large = spares.take(400 * KiB)
    spares.give(large.buffer)
    assert.notEqual(spares.take(20 * KiB).buffer, large.buffer)
  })

  it('keeps no more than its bound, and no small buffers', function () {
    const spares = new SpareBuffers(300 * KiB)
    for (let k = 0; k < 10; k++) spares.give(new ArrayBuffer(100 * KiB))
    spares.give(new ArrayBuffer(KiB))
    assert.equal(spares.buffers.length, 3)
    assert.equal(spares.bytes, 300 * KiB)
    assert.equal(spares.take(4 * KiB).buffer.byteLength, 4 * KiB, 'a small batch gets a buffer of its own')
  })
})
