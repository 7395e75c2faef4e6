/**
 * lib/errors/index.js, the factory every error the lab sends comes from: what a LabError carries, and
 * the figures, headers and words each factory derives from its arguments. That every factory is
 * catalogued and documented is test/errors-catalogue.test.js's business.
 */
import assert from 'node:assert/strict'
import * as errors from '../../lib/errors/index.js'

const { LabError } = errors
const MiB = 1024 * 1024

describe('LabError', function () {
  it('is an Error with a status (statusCode too, for Node and Express), a type, figures and headers', function () {
    const error = new LabError(413, 'entity.too.large', 'too big', { limit: 1 })
    assert.ok(error instanceof Error)
    assert.equal(error.name, 'LabError')
    assert.deepEqual([error.status, error.statusCode, error.type, error.message, error.expose], [413, 413, 'entity.too.large', 'too big', true])
    assert.deepEqual(error.details, { limit: 1 })
    assert.deepEqual(error.headers, {})
    assert.deepEqual(new LabError(500, 'internal', 'x').details, {})
  })

  it('serialises as { error: { status, type, message, ...figures } }', function () {
    const error = new LabError(400, 'gzip.truncated', 'cut short', { compressedBytes: 7 })
    assert.equal(JSON.stringify(error), '{"error":{"status":400,"type":"gzip.truncated","message":"cut short","compressedBytes":7}}')
  })
})

describe('the factories', function () {
  it('badParameter keeps at most 200 characters of what the client sent, as text', function () {
    const error = errors.badParameter('seed', 'x'.repeat(500), 'an integer')
    assert.equal(error.details.value.length, 200)
    assert.equal(errors.badParameter('size', 12, 'a size').details.value, '12')
    assert.equal(error.message, 'parameter "seed" is invalid: expected an integer')
  })

  it('jsonInvalid names the byte only when it is known', function () {
    assert.equal(errors.jsonInvalid('unexpected end of input', 12).message, 'body is not valid JSON: unexpected end of input (at byte 12)')
    assert.equal(errors.jsonInvalid('unexpected end of input', -1).message, 'body is not valid JSON: unexpected end of input')
  })

  it('shapeInvalid says what the format needed: an array, or an object with items', function () {
    assert.equal(errors.shapeInvalid('array', 0).type, 'json.shape.invalid')
    assert.equal(errors.shapeInvalid('json', 0).type, 'json.items.missing')
  })

  it('ratioTooLarge rounds the ratio it reports', function () {
    assert.equal(errors.ratioTooLarge(200, 251.6, 4e6, 15900).details.received, 252)
  })

  it('gzipTrailingData writes the byte in hex', function () {
    assert.match(errors.gzipTrailingData(30, 0x7).message, /^byte 30 of the gzip body is 0x07 after zero padding/)
  })

  it('puts the headers that belong to an error on it: Allow, Retry-After, WWW-Authenticate', function () {
    assert.deepEqual(errors.methodNotAllowed('PUT', ['GET', 'HEAD']).headers, { Allow: 'GET, HEAD' })
    for (const error of [errors.overloaded(256, 1), errors.tooManyConnections(512, 1), errors.pipelinesBusy(8, 10_000, 12_000, 1), errors.saveBusy(1)]) {
      assert.deepEqual(error.headers, { 'Retry-After': '1' }, error.message)
    }
    assert.deepEqual(errors.tooManyStreams(64, 5).headers, { 'Retry-After': '5' })
    const busy = errors.memoryBusy({ route: 'bad', budget: 512 * MiB, projected: 300 * MiB, available: 100 * MiB, what: 'this body', retryAfter: 2 })
    assert.deepEqual(busy.headers, { 'Retry-After': '2' })
    assert.equal(errors.tokenRequired(false).headers['WWW-Authenticate'], 'Bearer realm="streamlab"')
  })

  it('tokenRequired tells a missing token from a wrong one', function () {
    assert.equal(errors.tokenRequired(false).type, 'token.required')
    assert.equal(errors.tokenRequired(true).type, 'token.invalid')
  })

  it('budgetExceeded says in MiB what the request needs and how to run it anyway, by route', function () {
    const figures = { budget: 512 * MiB, projected: 900 * MiB, available: 400 * MiB, what: 'this body' }
    const bad = errors.budgetExceeded({ route: 'bad', ...figures })
    assert.equal(bad.message, 'this body would need 900.0 MiB, more than the 400.0 MiB this lab can give one request ' +
      '(memory budget 512.0 MiB): run the lab with a larger --memory-limit, or with --unsafe-bad to watch the worker die')
    assert.equal(errors.budgetExceeded({ route: 'db', ...figures }).details.hint, 'run the lab with a larger --memory-limit')
  })

  it('recordTooDense says when the parse thread ran out of heap instead of a projection', function () {
    assert.match(errors.recordTooDense(12 * MiB, 30.2 * MiB, 1000, 0).message, /would take about 31 MiB to parse, more than the 12 MiB/)
    assert.match(errors.recordTooDense(12 * MiB, null, 1000, 0).message, /ran its parse thread out of heap/)
  })

  it('expectationFailed keeps at most 200 characters of the Expect header', function () {
    assert.equal(errors.expectationFailed('x'.repeat(300)).details.expect.length, 200)
  })

  it('databaseUnavailable says when it happened, names the cause and never takes an unknown when', function () {
    const connect = errors.databaseUnavailable({ database: 'postgres', when: 'connect', cause: 'ECONNREFUSED', detail: 'connect ECONNREFUSED 127.0.0.1:5432', target: 'postgres://127.0.0.1:5432/lab' })
    assert.deepEqual(connect.toJSON().error, {
      status: 503,
      type: 'database.unavailable',
      message: 'the database is unavailable (postgres://127.0.0.1:5432/lab): connect ECONNREFUSED 127.0.0.1:5432',
      database: 'postgres',
      cause: 'ECONNREFUSED'
    })
    assert.deepEqual(errors.databaseUnavailable({ database: 'embedded', when: 'closed' }).toJSON().error.cause, 'closed')
    assert.equal(errors.databaseUnavailable({ database: 'embedded', when: 'closed' }).message, 'the database handle is closed (the lab is shutting down)')
    assert.deepEqual(errors.databaseUnavailable({ database: 'embedded', when: 'export' }).details, { database: 'embedded', cause: 'connection ended' })
    assert.equal(errors.databaseUnavailable({ database: 'postgres', when: 'query', cause: '57P01', detail: 'terminating' }).message,
      'the database went away during the query: terminating')
    assert.throws(function unknownWhen () { errors.databaseUnavailable({ database: 'postgres', when: 'later' }) }, TypeError)
  })

  it('databaseBusy says the embedded database serves one request at a time', function () {
    assert.equal(errors.databaseBusy('embedded', 1, 10_000).message,
      'all 1 database connection is in use and none came free within 10000 ms (the embedded database serves one request at a time)')
    assert.equal(errors.databaseBusy('postgres', 4, 10_000).message, 'all 4 database connections are in use and none came free within 10000 ms')
  })

  it('workerCrashed tells a kill past the budget from another death, and keeps the figures it has', function () {
    const killed = errors.workerCrashed({ reason: 'memory-limit', rss: 600, budget: 512, route: 'bad' })
    assert.match(killed.message, /passed its memory budget and was killed/)
    assert.deepEqual(killed.details, { reason: 'memory-limit', rss: 600, budget: 512, route: 'bad' })
    const died = errors.workerCrashed({ reason: 'exit' })
    assert.equal(died.message, 'the worker process died during this run; the lab restarted it')
    assert.deepEqual(died.details, { reason: 'exit', rss: null, budget: null, route: null })
  })

  it('experimentUnknown and experimentNotFound keep at most 100 characters of what the client named', function () {
    assert.equal(errors.experimentUnknown('n'.repeat(300), ['ingest']).details.name.length, 100)
    assert.equal(errors.experimentNotFound('i'.repeat(300), 20).details.id.length, 100)
  })

  it('internalError hides the bug by default and keeps the words when asked (an experiment run\'s error)', function () {
    assert.equal(errors.internalError().message, 'internal server error')
    assert.equal(errors.internalError('boom').message, 'boom')
  })
})
