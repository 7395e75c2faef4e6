/**
 * lib/experiments/params.js: an experiment declares its parameters once, and a client's raw
 * params are read against that schema: defaults filled in, numbers accepted as strings, anything
 * else a 400 parameter.invalid naming params.<name>.
 */
import assert from 'node:assert/strict'
import { LabError } from '../../lib/errors/index.js'
import {
  deepFreeze, enumParam, integerParam, isPresent, normalizeBySchema, round, sizeParam, stepsUpTo
} from '../../lib/experiments/params.js'

const SCHEMA = deepFreeze([
  { name: 'route', type: 'enum', values: ['bad', 'good', 'both'], default: 'both' },
  { name: 'concurrency', type: 'integer', min: 1, max: 200, default: 1 },
  { name: 'bytes', type: 'size', min: 1, max: 1e9, default: '15MB' },
  { name: 'requests', type: 'integer', min: 1, max: 1000, default: null }
])

/** The error body a call throws, as the client would read it. */
function refusal (fn) {
  try {
    fn()
  } catch (err) {
    assert.ok(err instanceof LabError, `a LabError, got ${err}`)
    return err.toJSON().error
  }
  assert.fail('did not throw')
}

describe('normalizeBySchema', function () {
  it('fills in every default when nothing is given, sizes parsed and null left to the module', function () {
    for (const raw of [undefined, null, {}]) {
      assert.deepEqual(normalizeBySchema(SCHEMA, raw), { route: 'both', concurrency: 1, bytes: 15e6, requests: null })
    }
  })

  it('reads what was given, numbers given as strings included, into a new object', function () {
    const raw = { route: 'good', concurrency: '10', bytes: '1.5MiB', requests: 40 }
    const out = normalizeBySchema(SCHEMA, raw)
    assert.deepEqual(out, { route: 'good', concurrency: 10, bytes: 1.5 * 2 ** 20, requests: 40 })
    assert.deepEqual(raw, { route: 'good', concurrency: '10', bytes: '1.5MiB', requests: 40 }, 'the caller\'s object is not changed')
  })

  it('takes an empty field (what a form sends) for one not given', function () {
    assert.equal(normalizeBySchema(SCHEMA, { concurrency: '' }).concurrency, 1)
    assert.equal(isPresent(''), false)
    assert.equal(isPresent(0), true)
  })

  it('refuses a parameter the schema does not have, by name', function () {
    const error = refusal(function unknown () { normalizeBySchema(SCHEMA, { route: 'good', speed: 'fast' }) })
    assert.equal(error.type, 'parameter.invalid')
    assert.equal(error.parameter, 'params.speed')
    assert.match(error.allowed, /route, concurrency, bytes, requests/)
  })

  it('refuses params that are not an object', function () {
    for (const raw of [[], 'route=good', 3]) {
      assert.equal(refusal(function notObject () { normalizeBySchema(SCHEMA, raw) }).parameter, 'params', JSON.stringify(raw))
    }
  })

  it('names the parameter whose value is out of range or of the wrong kind', function () {
    const cases = [
      [{ concurrency: 0 }, 'params.concurrency'],
      [{ concurrency: '201' }, 'params.concurrency'],
      [{ concurrency: 1.5 }, 'params.concurrency'],
      [{ route: 'worse' }, 'params.route'],
      [{ bytes: '2GB' }, 'params.bytes'],
      [{ bytes: 'lots' }, 'params.bytes']
    ]
    for (const [raw, parameter] of cases) {
      assert.equal(refusal(function outOfRange () { normalizeBySchema(SCHEMA, raw) }).parameter, parameter, JSON.stringify(raw))
    }
  })

  it('holds a parameter to a tighter maximum from the app\'s options', function () {
    assert.equal(normalizeBySchema(SCHEMA, { concurrency: 50 }, { max: { concurrency: 50 } }).concurrency, 50)
    const error = refusal(function tighter () { normalizeBySchema(SCHEMA, { concurrency: 51 }, { max: { concurrency: 50 } }) })
    assert.equal(error.allowed, 'an integer from 1 to 50')
  })

  it('throws a TypeError for a schema entry of an unknown type: a bug, not a client error', function () {
    assert.throws(function badSchema () { normalizeBySchema([{ name: 'x', type: 'float' }], { x: 1 }) }, TypeError)
  })
})

describe('the single-parameter checks', function () {
  it('integerParam takes digits or a whole number from min to max', function () {
    assert.equal(integerParam('n', '0', 0, 5), 0)
    assert.equal(integerParam('n', 5, 0, 5), 5)
    for (const value of ['-1', '6', '1e2', ' 3', 2.5, NaN, null]) {
      assert.deepEqual(refusal(function refused () { integerParam('n', value, 0, 5) }).allowed, 'an integer from 0 to 5', String(value))
    }
  })

  it('sizeParam takes a byte size as text or a number of bytes', function () {
    assert.equal(sizeParam('bytes', '10MB', 1, 1e9), 10e6)
    assert.equal(sizeParam('bytes', 2048, 1, 1e9), 2048)
    const error = refusal(function tooBig () { sizeParam('bytes', '2GB', 1, 1e9) })
    assert.deepEqual([error.parameter, error.value, error.allowed], ['params.bytes', '2GB', 'a byte size from 1 to 1000000000 bytes, e.g. 15MB or 1.5GiB'])
  })

  it('enumParam compares as text, so 65536 matches "65536"', function () {
    assert.equal(enumParam('hwm', 65536, ['4096', '65536']), '65536')
    assert.equal(refusal(function other () { enumParam('hwm', '1', ['4096', '65536']) }).allowed, 'one of 4096, 65536')
  })
})

describe('the helpers experiments share', function () {
  it('stepsUpTo keeps the steps below the top and ends with the top', function () {
    assert.deepEqual(stepsUpTo([1, 10, 50, 100, 200], 75), [1, 10, 50, 75])
    assert.deepEqual(stepsUpTo([1, 10, 50], 10), [1, 10])
    assert.deepEqual(stepsUpTo([10, 50], 1), [1])
  })

  it('round rounds to 1/scale and keeps null for what is not a finite number', function () {
    assert.equal(round(1.2345, 100), 1.23)
    assert.equal(round(2.5, 1), 3)
    for (const value of [null, undefined, NaN, Infinity, '1.5']) assert.equal(round(value, 10), null)
  })

  it('deepFreeze freezes an object and everything in it, and returns it', function () {
    const value = { a: [{ b: 1 }], c: { d: [] } }
    assert.equal(deepFreeze(value), value)
    assert.ok(Object.isFrozen(value) && Object.isFrozen(value.a) && Object.isFrozen(value.a[0]) && Object.isFrozen(value.c.d))
    assert.equal(deepFreeze(null), null)
  })
})
