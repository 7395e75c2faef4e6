/**
 * The parse pool's spare batch buffers (lib/parse/pool.js): the parse threads hand each batch's
 * buffer back, and the next batch about as large is written into it instead of a new one.
 */
import assert from 'node:assert/strict'
import { SpareBuffers, SpareBlocks } from '../lib/parse/pool.js'

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

describe('the spare blocks (lib/parse/pool.js)', function () {
  it('keeps the four blocks a request alone uses, or as many bytes of smaller ones, and no more', function () {
    const blocks = new SpareBlocks(256 * KiB)
    for (let k = 0; k < 6; k++) blocks.give(new ArrayBuffer(256 * KiB + 2))
    assert.equal(blocks.buffers.length, 4)
    for (let k = 0; k < 6; k++) blocks.give(new ArrayBuffer(64 * KiB + 2))
    assert.equal(blocks.buffers.length, 4, 'full: no room for more')
    const small = new SpareBlocks(256 * KiB)
    for (let k = 0; k < 20; k++) small.give(new ArrayBuffer(64 * KiB + 2))
    // four blocks' bytes hold fifteen blocks a quarter the size, each with its two spare bytes
    assert.equal(small.buffers.length, 15)
    assert.ok(small.bytes <= 4 * (256 * KiB + 2))
  })

  it('serves a block from a spare up to twice its size, and none from a pool made without a block size', function () {
    const blocks = new SpareBlocks(256 * KiB)
    const spare = new ArrayBuffer(256 * KiB + 2)
    blocks.give(spare)
    assert.equal(blocks.take(128 * KiB + 2), spare)
    blocks.give(spare)
    assert.notEqual(blocks.take(64 * KiB + 2), spare, 'four times the size asked: a new one')
    const none = new SpareBlocks()
    none.give(new ArrayBuffer(1024))
    assert.equal(none.buffers.length, 0)
  })
})
