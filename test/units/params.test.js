/**
 * lib/experiments/params.js: an experiment declares its parameters once, and a client's raw
 * params are read against that schema: defaults filled in, numbers accepted as strings, anything
 * else a 400 parameter.invalid naming params.<name>.
 */
import assert from 'node:assert/strict'
import { refusal } from '../helpers.js'
import {
  choiceEntry, deepFreeze, givenParams, integerEntry, isPresent, listEntry, normalizeBySchema,
  sizeEntry, sizeParam, stepsUpTo, sweepEntry, sweepLevels
} from '../../lib/experiments/params.js'

const SCHEMA = deepFreeze([
  { name: 'route', type: 'enum', values: ['bad', 'good', 'both'], default: 'both' },
  { name: 'concurrency', type: 'integer', min: 1, max: 200, default: 1 },
  { name: 'bytes', type: 'size', min: 1, max: 1e9, default: '15MB' },
  { name: 'requests', type: 'integer', min: 1, max: 1000, default: null }
])

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
  it('an integer entry takes digits or a whole number from min to max', function () {
    const schema = [{ name: 'n', type: 'integer', min: 0, max: 5, default: null }]
    assert.equal(normalizeBySchema(schema, { n: '0' }).n, 0)
    assert.equal(normalizeBySchema(schema, { n: 5 }).n, 5)
    assert.equal(normalizeBySchema(schema, { n: null }).n, null, 'null: not given, the default')
    for (const value of ['-1', '6', '1e2', ' 3', 2.5, NaN]) {
      assert.deepEqual(refusal(function refused () { normalizeBySchema(schema, { n: value }) }).allowed, 'an integer from 0 to 5', String(value))
    }
  })

  it('sizeParam takes a byte size as text or a number of bytes', function () {
    assert.equal(sizeParam('bytes', '10MB', 1, 1e9), 10e6)
    assert.equal(sizeParam('bytes', 2048, 1, 1e9), 2048)
    const error = refusal(function tooBig () { sizeParam('bytes', '2GB', 1, 1e9) })
    assert.deepEqual([error.parameter, error.value, error.allowed], ['params.bytes', '2GB', 'a byte size from 1 to 1000000000 bytes, e.g. 15MB or 1.5GiB'])
  })

  it('an enum entry compares as text, so 65536 matches "65536"', function () {
    const schema = [{ name: 'hwm', type: 'enum', values: ['4096', '65536'], default: '4096' }]
    assert.equal(normalizeBySchema(schema, { hwm: 65536 }).hwm, '65536')
    assert.equal(refusal(function other () { normalizeBySchema(schema, { hwm: '1' }) }).allowed, 'one of 4096, 65536')
  })
})

describe('schema entries', function () {
  it('makes each type\'s entry with its members in the order GET /experiments shows them', function () {
    const entries = [
      choiceEntry('route', { values: ['both', 'good'], valueLabels: { both: 'Both', good: 'Good' }, label: 'Route', help: 'h' }),
      integerEntry('concurrency', { default: 4, max: 200, label: 'Connections', help: 'h' }),
      sizeEntry('bytes', { default: '1MB', max: 1e9, label: 'Size', help: 'h' }),
      listEntry('sizes', { default: '1,2', label: 'Sizes', help: 'h' })
    ]
    assert.deepEqual(entries.map(function members (e) { return Object.keys(e).join(' ') }), [
      'name type values valueLabels default label help',
      'name type default min max label help',
      'name type default min max label help',
      'name type default label help'
    ])
  })

  it('takes the first choice and a minimum of 1 unless told otherwise', function () {
    assert.equal(choiceEntry('mode', { values: ['all', 'one'], valueLabels: {}, label: 'l', help: 'h' }).default, 'all')
    assert.equal(choiceEntry('mode', { values: ['all', 'one'], valueLabels: {}, default: 'one', label: 'l', help: 'h' }).default, 'one')
    assert.equal(integerEntry('n', { default: 1, max: 9, label: 'l', help: 'h' }).min, 1)
    assert.equal(integerEntry('n', { default: 0, min: 0, max: 9, label: 'l', help: 'h' }).min, 0)
    assert.equal(sizeEntry('bytes', { default: null, max: 9, label: 'l', help: 'h' }).min, 1)
  })

  it('makes the sweep a choice of steps or single, and sweepLevels the levels each runs', function () {
    const sweep = sweepEntry({ steps: 'Sweep', single: 'Only the highest', label: 'l', help: 'h' })
    assert.deepEqual([sweep.name, sweep.type, sweep.values, sweep.default], ['sweep', 'enum', ['steps', 'single'], 'steps'])
    assert.deepEqual(sweepLevels('steps', [1, 10, 50], 25), [1, 10, 25])
    assert.deepEqual(sweepLevels('single', [1, 10, 50], 25), [25])
  })

  it('passes a list through as given, or its default, for its module to read', function () {
    const schema = [listEntry('sizes', { default: '1,2', label: 'l', help: 'h' })]
    assert.deepEqual(normalizeBySchema(schema, {}), { sizes: '1,2' })
    assert.deepEqual(normalizeBySchema(schema, { sizes: [3, 4] }), { sizes: [3, 4] })
  })

  it('givenParams refuses what normalizeBySchema refuses before it reads a value, and returns the params as given', function () {
    const raw = { route: 'worse' }
    assert.equal(givenParams(SCHEMA, raw), raw)
    assert.deepEqual(givenParams(SCHEMA, undefined), {})
    assert.equal(refusal(function unknown () { givenParams(SCHEMA, { speed: 'fast' }) }).parameter, 'params.speed')
    assert.equal(refusal(function notObject () { givenParams(SCHEMA, [1]) }).parameter, 'params')
  })
})

describe('the helpers experiments share', function () {
  it('stepsUpTo keeps the steps below the top and ends with the top', function () {
    assert.deepEqual(stepsUpTo([1, 10, 50, 100, 200], 75), [1, 10, 50, 75])
    assert.deepEqual(stepsUpTo([1, 10, 50], 10), [1, 10])
    assert.deepEqual(stepsUpTo([10, 50], 1), [1])
  })

  it('deepFreeze freezes an object and everything in it, and returns it', function () {
    const value = { a: [{ b: 1 }], c: { d: [] } }
    assert.equal(deepFreeze(value), value)
    assert.ok(Object.isFrozen(value) && Object.isFrozen(value.a) && Object.isFrozen(value.a[0]) && Object.isFrozen(value.c.d))
    assert.equal(deepFreeze(null), null)
  })
})
