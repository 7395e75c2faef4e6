/**
 * The streamed parse must accept exactly what JSON.parse accepts: generated
 * documents and thousands of random mutations of them, fed in chunks down to
 * one byte, must give /good's decision and /bad's decision alike: the same
 * summary, or a rejection at the same byte offset.
 */
import assert from 'node:assert/strict'
import { parseBuffered, parseStreamed } from './helpers.js'

function prng (seed) {
  let a = seed >>> 0
  return function next () {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const STRINGS = ['', 'plain', 'caf\u00e9', '中文字符', '😀 emoji', 'quote " and \\ backslash', 'line\nbreak\ttab', '\u0000\u001f control', '\\\\"', '\u2028']

function randomValue (rand, depth) {
  const r = rand()
  if (depth > 3 || r < 0.35) {
    const k = Math.floor(rand() * 6)
    if (k === 0) return Math.floor(rand() * 1e6)
    if (k === 1) return (rand() - 0.5) * 1e10
    if (k === 2) return STRINGS[Math.floor(rand() * STRINGS.length)]
    if (k === 3) return rand() < 0.5
    if (k === 4) return null
    return -rand() * 1e-5
  }
  if (r < 0.65) {
    const out = []
    const n = Math.floor(rand() * 4)
    for (let i = 0; i < n; i++) out.push(randomValue(rand, depth + 1))
    return out
  }
  const out = {}
  const n = Math.floor(rand() * 4)
  for (let i = 0; i < n; i++) out[STRINGS[Math.floor(rand() * STRINGS.length)] + i] = randomValue(rand, depth + 1)
  return out
}

function randomRecords (rand) {
  const n = 1 + Math.floor(rand() * 6)
  const records = []
  for (let i = 0; i < n; i++) {
    records.push(rand() < 0.7 ? { id: i + 1, v: randomValue(rand, 1) } : randomValue(rand, 1))
  }
  return records
}

function serialise (rand, records, format) {
  const space = rand() < 0.3 ? 1 : 0
  if (format === 'ndjson') return records.map(function line (r) { return JSON.stringify(r) }).join(rand() < 0.5 ? '\n' : '\r\n\n') + '\n'
  if (format === 'array') return JSON.stringify(records, null, space)
  return JSON.stringify({ meta: { seed: 1 }, items: records, tail: 'x' }, null, space)
}

const MUTANTS = ['{', '}', '[', ']', ',', ':', '"', '\\', ' ', '\n', '0', '-', '.', 'e', 't', 'n', 'x', '\u00e9', '\u0001']

function mutate (rand, text) {
  const buf = Buffer.from(text)
  const at = Math.floor(rand() * buf.length)
  const kind = Math.floor(rand() * 5)
  const bytes = Buffer.from(MUTANTS[Math.floor(rand() * MUTANTS.length)])
  if (kind === 0) return Buffer.concat([buf.subarray(0, at), bytes, buf.subarray(at + 1)]) // replace
  if (kind === 1) return Buffer.concat([buf.subarray(0, at), bytes, buf.subarray(at)]) // insert
  if (kind === 2) return Buffer.concat([buf.subarray(0, at), buf.subarray(at + 1)]) // delete
  if (kind === 3) return buf.subarray(0, at) // truncate
  const copy = Buffer.from(buf) // flip one bit
  copy[at] ^= 1 << Math.floor(rand() * 8)
  return copy
}

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
