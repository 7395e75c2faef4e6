/**
 * The streamed parse must accept exactly what JSON.parse accepts: generated
 * documents and thousands of random mutations of them, fed in chunks down to
 * one byte, must give /good's decision and /bad's decision alike: the same
 * summary, or a rejection at the same byte offset.
 */
import assert from 'node:assert/strict'
import { parseBuffered, parseStreamed } from './helpers.js'
import { prng, randomRecords, serialise, mutate } from '../lib/measure/mutate.js'

function decide (buf, format, chunkSize, batchBytes) {
  return JSON.stringify(parseStreamed(buf, format, chunkSize, batchBytes))
}

describe('streamed parsing against JSON.parse', function () {
  for (const format of ['json', 'array', 'ndjson']) {
    it(`agrees on valid ${format} documents at every chunk size`, function () {
      const rand = prng(7)
      for (let k = 0; k < 150; k++) {
        const buf = Buffer.from(serialise(rand, randomRecords(rand), format))
        const want = JSON.stringify(parseBuffered(buf, format))
        assert.ok(want.includes('summary'), `generated ${format} must be valid: ${buf}`)
        for (const chunkSize of [1, 2, 7, 64, 1 << 20]) {
          for (const batchBytes of [1, 50, 1 << 20]) {
            assert.equal(decide(buf, format, chunkSize, batchBytes), want, `${format} chunk ${chunkSize} batch ${batchBytes}: ${buf}`)
          }
        }
      }
    })

    it(`accepts and rejects exactly what JSON.parse does on 2000 mutated ${format} documents`, function () {
      const rand = prng(format.length * 1000 + 3)
      let rejected = 0
      for (let k = 0; k < 2000; k++) {
        const buf = mutate(rand, serialise(rand, randomRecords(rand), format))
        const want = JSON.stringify(parseBuffered(buf, format))
        if (!want.includes('summary')) rejected++
        for (const chunkSize of [1, 5, 1 << 20]) {
          const batchBytes = [1, 40, 1 << 20][k % 3]
          assert.equal(decide(buf, format, chunkSize, batchBytes), want,
            `${format} mutant ${k}, chunk ${chunkSize}, batch ${batchBytes}: ${JSON.stringify(buf.toString())}`)
        }
      }
      // the mutations must actually produce invalid inputs, or this test proves nothing
      assert.ok(rejected > 500, `only ${rejected} of 2000 mutants were invalid`)
    })
  }

  it('treats a repeated "items" key as JSON.parse does: the last one wins', function () {
    const buf = Buffer.from('{"items":[{"id":1}],"items":[{"id":2},{"id":3}]}')
    const got = parseStreamed(buf, 'json', 3, 1)
    assert.equal(got.summary.items, 2)
    assert.equal(got.summary.idSum, '5')
    assert.deepEqual(got, parseBuffered(buf, 'json'))
  })

  it('recognises "items" spelt with escapes', function () {
    const buf = Buffer.from('{"it\\u0065ms":[1,2,3]}')
    assert.equal(parseStreamed(buf, 'json', 2, 1).summary.items, 3)
  })
})
