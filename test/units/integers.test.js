/**
 * lib/config/integers.js: the one integer check, for a parameter a client sent (400 parameter.invalid)
 * and for an option a caller gave (TypeError).
 */
import assert from 'node:assert/strict'
import { refusal } from '../helpers.js'
import { integerOptions, integerParam } from '../../lib/config/integers.js'

describe('lib/config/integers.js', function () {
  describe('integerParam', function () {
    it('takes a string of digits or a number, from min to max inclusive', function () {
      assert.equal(integerParam('size', '0', 0, 10), 0)
      assert.equal(integerParam('size', '10', 0, 10), 10)
      assert.equal(integerParam('size', 7, 0, 10), 7)
      assert.equal(integerParam('size', '007', 0, 10), 7)
      assert.equal(integerParam('id', String(Number.MAX_SAFE_INTEGER), 0, Number.MAX_SAFE_INTEGER), Number.MAX_SAFE_INTEGER)
    })

    it('answers 400 parameter.invalid naming the parameter, with what it got and what is allowed', function () {
      assert.deepEqual(refusal(function outside () { integerParam('params.concurrency', '11', 1, 10) }), {
        status: 400,
        type: 'parameter.invalid',
        message: 'parameter "params.concurrency" is invalid: expected an integer from 1 to 10',
        parameter: 'params.concurrency',
        value: '11',
        allowed: 'an integer from 1 to 10'
      })
      assert.equal(refusal(function said () { integerParam('level', 'x', 0, 9, 'a gzip level from 0 to 9') }).allowed, 'a gzip level from 0 to 9')
    })

    it('refuses signs, decimals, exponents, spaces, empty text, more than 16 digits and non-numbers', function () {
      for (const value of ['-1', '+1', '1.0', '1e3', ' 1', '1 ', '', '0x10', '12345678901234567', 1.5, -1, NaN, Infinity, null, undefined, ['1'], {}]) {
        assert.equal(refusal(function refused () { integerParam('n', value, 0, Number.MAX_SAFE_INTEGER) }).parameter, 'n', String(value))
      }
    })
  })

  describe('integerOptions', function () {
    const check = integerOptions('server option ')

    it('returns a whole number from min to max as it is', function () {
      assert.equal(check('maxConnections', 1, 1, 10), 1)
      assert.equal(check('maxConnections', 10, 1, 10), 10)
    })

    it('throws a TypeError naming the option after its prefix for anything else', function () {
      assert.throws(function tooSmall () { check('maxConnections', 0, 1, 10) },
        { name: 'TypeError', message: 'server option maxConnections must be an integer from 1 to 10, got 0' })
      for (const value of [1.5, '5', NaN, 2 ** 53, null, undefined]) {
        assert.throws(function refused () { check('maxConnections', value, 0, Number.MAX_VALUE) }, TypeError, String(value))
      }
    })
  })
})
