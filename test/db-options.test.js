/**
 * The database options (lib/db/options.js): the embedded PGlite by default, a
 * postgres:// URL taken as given, a TypeError naming a bad value. The
 * database at work is test/slow/db.test.js's.
 */
import assert from 'node:assert/strict'
import path from 'node:path'
import { createApp } from '../app.js'
import { normalizeDatabaseOptions } from '../lib/db/options.js'

describe('database options', function () {
  const app = { dataDir: '/tmp/lab' }

  it('defaults to the embedded PGlite under <dataDir>/pglite, with one connection', function () {
    const opts = normalizeDatabaseOptions(undefined, app)
    assert.equal(opts.kind, 'embedded')
    assert.equal(opts.pgliteDir, path.resolve('/tmp/lab/pglite'))
    assert.equal(opts.poolMax, 1)
    assert.ok(Object.isFrozen(opts))
  })

  it('takes a postgres:// URL, and leaves the caller\'s object alone', function () {
    const given = { url: 'postgresql://lab:secret@db.internal:5433/lab', poolMax: 4 }
    const copy = structuredClone(given)
    const opts = normalizeDatabaseOptions(given, app)
    assert.deepEqual([opts.kind, opts.poolMax, opts.pgliteDir], ['postgres', 4, null])
    assert.deepEqual(given, copy)
  })

  it('throws a TypeError for a bad value, naming it', function () {
    assert.throws(function () { normalizeDatabaseOptions({ url: 'mysql://x' }, app) }, /database\.url/)
    assert.throws(function () { normalizeDatabaseOptions({ url: '' }, app) }, TypeError)
    assert.throws(function () { normalizeDatabaseOptions({ poolMax: 4 }, app) }, /poolMax must be 1 for the embedded/)
    assert.throws(function () { normalizeDatabaseOptions({ seed: { items: -1 } }, app) }, /database\.seed\.items/)
    assert.throws(function () { normalizeDatabaseOptions({ nope: 1 }, app) }, /database\.nope is unknown/)
    assert.throws(function () { createApp({ database: { url: 42 } }) }, TypeError)
  })
})
