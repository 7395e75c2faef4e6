/**
 * The error catalogue (lib/errors/index.js `ERROR_CATALOGUE`) and docs/errors.md say the same thing,
 * as fastify's test/internals/errors.test.js holds its errors to its docs: every type the lab
 * sends is documented with its status, everything documented exists, every exported factory is
 * catalogued and makes the type its entry says, and every error reaches the client in one shape.
 * Errors are made only in lib/errors/index.js: the last spec reads the sources for calls elsewhere.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import * as errors from '../lib/errors/index.js'

const { ERROR_CATALOGUE, ERROR_MAPPERS, LabError, createError } = errors
const ROOT = fileURLToPath(new URL('..', import.meta.url))
const DOCS = path.join(ROOT, 'docs', 'errors.md')

/**
 * Arguments for each factory, one list per call: enough calls to make every type the factory's
 * entries name. A new factory needs a line here (the spec says so) as well as its catalogue entry.
 */
const EXAMPLES = {
  badParameter: [['size', 'x', 'an integer from 0 to 10']],
  compressedTooLarge: [[100, 200]],
  uploadTooLarge: [[100, 200]],
  inflatedTooLarge: [[100, 200]],
  unsupportedMediaType: [['text/plain', ['application/gzip']], [undefined, ['application/gzip']]],
  unsupportedEncoding: [['br']],
  gzipInvalid: [['incorrect header check', 10]],
  gzipTrailingData: [[30, 0x78]],
  encodingInvalid: [['br', 'Decompression failed', 44]],
  encodingTrailingData: [['deflate', 12, 0x41]],
  encodingTruncated: [['zstd', 30]],
  gzipTruncated: [[10]],
  tooManyLayers: [[2, 3]],
  tooManyFrames: [['zstd', 4096, 36870]],
  jsonInvalid: [['Unexpected token', 7], ['Unexpected end of JSON input', -1]],
  requestAborted: [[5]],
  notFound: [['GET', '/nowhere']],
  recordTooLarge: [[4, 5, 0]],
  shapeInvalid: [['array', 0], ['json', 0]],
  ratioTooLarge: [[200, 250.5, 2500, 10]],
  tooDeep: [[1000, 1001]],
  methodNotAllowed: [['PUT', ['GET', 'HEAD']]],
  overloaded: [[256, 1]],
  bodyTimeout: [[10_000, 5]],
  diskQuotaExceeded: [[1000, 900, 200]],
  saveBusy: [[1]],
  uploadNotFound: [['upload-1.bin']],
  bodyTooSlow: [[4096, 10.4, 100, 12_000, 10_000]],
  tooManyConnections: [[512, 1]],
  tooManyStreams: [[64, 5]],
  serverClosing: [[1]],
  budgetExceeded: [[{ route: 'bad', budget: 512 * 2 ** 20, projected: 900 * 2 ** 20, available: 400 * 2 ** 20, what: 'this body' }],
    [{ route: 'db', budget: 512 * 2 ** 20, projected: 900 * 2 ** 20, available: 400 * 2 ** 20, what: 'these rows' }]],
  bufferCapExceeded: [[{ route: 'backpressure', limit: 128 * 2 ** 20, held: 128 * 2 ** 20 + 65536, stage: 'consumer' }]],
  memoryBusy: [[{ route: 'bad', budget: 512 * 2 ** 20, projected: 300 * 2 ** 20, available: 100 * 2 ** 20, what: 'this body', retryAfter: 2 }]],
  recordTooDense: [[12 * 2 ** 20, 30 * 2 ** 20, 100_000, 0], [12 * 2 ** 20, null, 100_000, 0]],
  pipelinesBusy: [[8, 10_000, 1]],
  decodersBusy: [[24 * 1024 * 1024, 10_000, 12_000, 1]],
  hostMissing: [[]],
  hostNotAllowed: [['evil.example', []]],
  crossSiteRefused: [['POST', '/good', 'cross-site', null], ['POST', '/good', null, 'https://evil.example']],
  tokenRequired: [[false], [true]],
  requestMalformed: [['HPE_INVALID_HEADER_TOKEN', 'Invalid header value char'], [null, null]],
  bodyLengthInvalid: [['HPE_UNEXPECTED_CONTENT_LENGTH', 'Content-Length can\'t be present with Transfer-Encoding']],
  chunkExtensionsTooLarge: [['HPE_CHUNK_EXTENSIONS_OVERFLOW']],
  headersTooLarge: [['HPE_HEADER_OVERFLOW']],
  requestTooLong: [['ERR_HTTP_REQUEST_TIMEOUT']],
  httpVersionUnsupported: [['HTTP/9.9', 'HPE_INVALID_VERSION'], [null]],
  expectationFailed: [['200-ok']],
  expressJsonMediaUnsupported: [['application/x-ndjson'], ['application/gzip']],
  expressJsonEncodingUnsupported: [['x-gzip']],
  charsetUnsupported: [['latin1']],
  mediaNotAcceptable: [['image/png', ['text/event-stream', 'application/json']], [undefined, ['application/json']]],
  experimentUnknown: [['nope', ['ingest', 'upload']]],
  experimentNotFound: [['abc', 20]],
  experimentBusy: [[{ id: 'abc', name: 'ingest' }]],
  experimentNotRunning: [['abc', 'done']],
  runNotFound: [['abc', 50]],
  runIdAmbiguous: [['2f8', ['2f814b19-a', '2f8c0000-b']]],
  runInvalid: [['abc', 'format', 'is 2; this lab reads format 1'], ['run.json', '(json)', 'is not JSON']],
  workerCrashed: [[{ reason: 'memory-limit', rss: 600, budget: 512, route: 'bad' }], [{ reason: 'exit' }]],
  databaseUnavailable: [
    [{ database: 'postgres', when: 'connect', cause: 'ECONNREFUSED', detail: 'connect ECONNREFUSED', target: 'postgres://127.0.0.1:1/x' }],
    [{ database: 'embedded', when: 'closed' }],
    [{ database: 'embedded', when: 'export' }],
    [{ database: 'postgres', when: 'query', cause: '57P01', detail: 'terminating connection' }]
  ],
  databaseBusy: [['embedded', 1, 10_000], ['postgres', 4, 10_000]],
  databaseNotSeeded: [['postgres']],
  internalError: [[], ['a bug in a run']],
  requestInvalid: [['incorrect header check']]
}

/** Errors as Express and body-parser make them (http-errors): what `toLabError` meets. */
function httpError (status, type, message) {
  const err = new Error(message)
  err.status = status
  err.statusCode = status
  if (type !== undefined) err.type = type
  return err
}

/**
 * The main table of docs/errors.md: `| status | type | when | extra members | routes |`, up to
 * the first line that is not a row.
 * @returns {Array<{ line: number, status: number, type: string, anchor: string|null, text: string }>}
 */
function documentedRows () {
  const lines = fs.readFileSync(DOCS, 'utf8').split('\n')
  const header = lines.findIndex(function isHeader (line) { return /^\| status \| type \| when \|/.test(line) })
  assert.notEqual(header, -1, 'docs/errors.md has a table headed | status | type | when |')
  const rows = []
  for (let k = header + 2; k < lines.length && lines[k].startsWith('|'); k++) {
    const match = /^\| (\d{3}) \| (?:<a id="([^"]+)"><\/a>)?`([a-z0-9.]+)` \|/.exec(lines[k])
    assert.ok(match, `docs/errors.md line ${k + 1} is not a row of | status | \`type\` | ...: ${lines[k].slice(0, 80)}`)
    const cells = lines[k].split(' | ')
    // the members column: the names in backticks, not the values in brackets after them (`allowed` (`["utf-8"]`))
    const members = [...(cells[3] ?? '').replace(/\([^)]*\)/g, '').matchAll(/`([A-Za-z]+)`/g)].map(function name (m) { return m[1] })
    rows.push({ line: k + 1, status: Number(match[1]), anchor: match[2] ?? null, type: match[3], members, text: lines[k] })
  }
  return rows
}

function entryOf (type) {
  return ERROR_CATALOGUE.find(function sameType (e) { return e.type === type }) ?? null
}

/** Each exported function that is no factory: the class, createError itself and the mappers. */
function isFactoryExport (name, value) {
  return typeof value === 'function' && value !== LabError && value !== createError && !ERROR_MAPPERS.includes(value)
}

function factoryExports () {
  return Object.entries(errors).filter(function factory ([name, value]) { return isFactoryExport(name, value) })
}

function assertWireShape (error, where) {
  assert.ok(error instanceof LabError, `${where} makes a LabError`)
  const wire = JSON.parse(JSON.stringify(error))
  assert.deepEqual(Object.keys(wire), ['error'], `${where}: { error } and nothing beside it`)
  assert.deepEqual(Object.keys(wire.error).slice(0, 3), ['status', 'type', 'message'], `${where}: status, type, message first`)
  assert.equal(wire.error.status, error.status, `${where}: status repeats the HTTP status`)
  assert.equal(error.statusCode, error.status, `${where}: statusCode, for Node and Express`)
  assert.ok(error.status >= 400 && error.status < 600, `${where}: an error status, got ${error.status}`)
  assert.match(wire.error.type, /^[a-z]+(\.[a-z]+)*$/, `${where}: a dotted type`)
  assert.equal(typeof wire.error.message, 'string', `${where}: a message`)
  assert.notEqual(wire.error.message, '', `${where}: a message`)
  for (const [name, value] of Object.entries(error.headers)) {
    assert.equal(typeof value, 'string', `${where}: header ${name} is a string`)
  }
  return wire.error
}

describe('the error catalogue and docs/errors.md', function () {
  it('lists each type once, with a status and its factories', function () {
    assert.ok(Object.isFrozen(ERROR_CATALOGUE))
    const types = ERROR_CATALOGUE.map(function type (e) { return e.type })
    assert.equal(new Set(types).size, types.length)
    for (const entry of ERROR_CATALOGUE) {
      assert.ok(Object.isFrozen(entry) && Object.isFrozen(entry.factories), `${entry.type} is frozen`)
      assert.ok(Number.isInteger(entry.status) && entry.status >= 400 && entry.status < 600, `${entry.type}: status ${entry.status}`)
      assert.ok(entry.factories.length > 0 || entry.passedThrough !== null,
        `${entry.type}: nothing makes it (no factory) and nothing passes it through`)
    }
  })

  it('documents every catalogued type in docs/errors.md, with the same status', function () {
    const rows = documentedRows()
    const missing = []
    for (const entry of ERROR_CATALOGUE) {
      const documented = rows.filter(function sameType (r) { return r.type === entry.type })
      if (documented.length === 0) missing.push(`${entry.status} ${entry.type}`)
      for (const row of documented) {
        assert.equal(row.status, entry.status, `docs/errors.md line ${row.line}: ${entry.type} is ${entry.status} in lib/errors/index.js`)
      }
    }
    assert.deepEqual(missing, [], 'catalogued in lib/errors/index.js but not in docs/errors.md')
  })

  it('catalogues every type docs/errors.md documents', function () {
    const unknown = documentedRows().filter(function notCatalogued (r) { return entryOf(r.type) === null })
      .map(function where (r) { return `line ${r.line}: ${r.status} ${r.type}` })
    assert.deepEqual(unknown, [], 'documented in docs/errors.md but not in lib/errors/index.js ERROR_CATALOGUE')
  })

  it('says so in the docs where a type comes from express.json, and catalogues it as passed through', function () {
    const rows = documentedRows()
    for (const row of rows.filter(function fromExpress (r) { return /from `express\.json`/.test(r.text) })) {
      assert.equal(entryOf(row.type).passedThrough, 'express.json',
        `docs/errors.md line ${row.line} has ${row.type} from express.json: its catalogue entry must say passedThrough: 'express.json'`)
    }
    for (const entry of ERROR_CATALOGUE.filter(function passed (e) { return e.passedThrough !== null })) {
      assert.ok(rows.some(function says (r) { return r.type === entry.type && /from `express\.json`/.test(r.text) }),
        `${entry.type} is passed through from express.json: a row of docs/errors.md must say "from \`express.json\`"`)
    }
  })

  it('names in its members column every figure a factory sends', function () {
    const rows = documentedRows()
    for (const [name, calls] of Object.entries(EXAMPLES)) {
      for (const args of calls) {
        const error = errors[name](...args)
        const documented = new Set(rows.filter(function sameType (r) { return r.type === error.type }).flatMap(function members (r) { return r.members }))
        const undocumented = Object.keys(error.details).filter(function missing (key) { return !documented.has(key) })
        assert.deepEqual(undocumented, [], `${name} sends ${error.type} with members docs/errors.md does not name`)
      }
    }
  })

  it('gives every type an anchor named after it on its first row', function () {
    const seen = new Set()
    for (const row of documentedRows()) {
      if (seen.has(row.type)) continue
      seen.add(row.type)
      assert.equal(row.anchor, row.type.replaceAll('.', '-'), `docs/errors.md line ${row.line}: the first row of ${row.type} needs <a id="${row.type.replaceAll('.', '-')}"></a>`)
    }
  })
})

describe('the factories of lib/errors/index.js', function () {
  it('are each in the catalogue, or declared a mapper', function () {
    const catalogued = new Set(ERROR_CATALOGUE.flatMap(function factories (e) { return e.factories }))
    const loose = factoryExports().filter(function notCatalogued ([, fn]) { return !catalogued.has(fn) })
      .map(function name ([name]) { return name })
    assert.deepEqual(loose, [], 'exported from lib/errors/index.js without a catalogue entry (ERROR_CATALOGUE) or a place in ERROR_MAPPERS')
    for (const fn of catalogued) assert.equal(errors[fn.name], fn, `${fn.name} is catalogued: export it`)
  })

  it('each have examples in this spec', function () {
    const without = factoryExports().map(function name ([name]) { return name })
      .filter(function noExample (name) { return !Object.hasOwn(EXAMPLES, name) })
    assert.deepEqual(without, [], 'add the arguments of a call or two to EXAMPLES')
    const stale = Object.keys(EXAMPLES).filter(function gone (name) { return typeof errors[name] !== 'function' })
    assert.deepEqual(stale, [], 'EXAMPLES names no such factory')
  })

  for (const [name, calls] of Object.entries(EXAMPLES)) {
    it(`${name} makes its catalogued types, sent as { error: { status, type, message, ... } }`, function () {
      const factory = errors[name]
      const made = new Set()
      for (const args of calls) {
        const error = factory(...args)
        const wire = assertWireShape(error, `${name}(${args.map(function show (a) { return JSON.stringify(a) }).join(', ')})`)
        const entry = entryOf(wire.type)
        assert.ok(entry, `${name} made ${wire.type}, which is not catalogued`)
        assert.ok(entry.factories.includes(factory), `${name} made ${wire.type}, whose entry does not list ${name}`)
        assert.equal(wire.status, entry.status, `${name} made ${wire.type} with ${wire.status}; the catalogue says ${entry.status}`)
        made.add(wire.type)
      }
      const promised = ERROR_CATALOGUE.filter(function lists (e) { return e.factories.includes(factory) })
        .map(function type (e) { return e.type })
      assert.deepEqual([...made].sort(), promised.sort(), `the types ${name} is catalogued for, made by its examples`)
    })
  }

  it('put the figures after status, type and message, and Retry-After beside retryAfter', function () {
    const error = errors.overloaded(256, 1)
    assert.deepEqual(error.toJSON(), {
      error: { status: 503, type: 'server.busy', message: error.message, limit: 256, retryAfter: 1 }
    })
    assert.deepEqual(error.headers, { 'Retry-After': '1' })
    assert.equal(errors.methodNotAllowed('PUT', ['GET', 'HEAD']).headers.Allow, 'GET, HEAD')
  })
})

describe('the mappers of lib/errors/index.js', function () {
  it('toLabError passes a LabError on as it is', function () {
    const error = errors.gzipTruncated(3)
    assert.equal(errors.toLabError(error), error)
  })

  it('toLabError keeps the status and type body-parser gave, and nothing else', function () {
    const err = httpError(400, 'entity.parse.failed', 'Unexpected token } in JSON at position 3')
    err.body = '{"a"}'
    const wire = assertWireShape(errors.toLabError(err), 'toLabError(entity.parse.failed)')
    assert.deepEqual(wire, { status: 400, type: 'entity.parse.failed', message: err.message })
    assert.equal(entryOf(wire.type).passedThrough, 'express.json')
  })

  it('toLabError makes a typeless client error request.invalid, keeping its status', function () {
    assert.deepEqual(errors.toLabError(httpError(400, undefined, 'incorrect header check')).toJSON().error,
      { status: 400, type: 'request.invalid', message: 'incorrect header check' })
    assert.equal(errors.toLabError(httpError(414, undefined, 'too long')).status, 414)
  })

  it('toLabError makes anything else a 500 internal without its words', function () {
    for (const err of [new Error('secret path /home/x'), httpError(500, undefined, 'secret'), Object.assign(new Error('x'), { status: 200 })]) {
      assert.deepEqual(errors.toLabError(err).toJSON(), { error: { status: 500, type: 'internal', message: 'internal server error' } })
    }
  })

  it('fromZlibError maps zlib codes to gzip.truncated and gzip.invalid, and nothing else', function () {
    assert.equal(errors.fromZlibError(Object.assign(new Error('unexpected end of file'), { code: 'Z_BUF_ERROR' }), 9).type, 'gzip.truncated')
    for (const code of ['Z_DATA_ERROR', 'Z_STREAM_ERROR', 'Z_NEED_DICT']) {
      const error = errors.fromZlibError(Object.assign(new Error('incorrect header check'), { code }), 9)
      assert.deepEqual(error.toJSON().error, errors.gzipInvalid('incorrect header check', 9).toJSON().error)
    }
    assert.equal(errors.fromZlibError(Object.assign(new Error('x'), { code: 'ENOENT' }), 9), null)
  })

  it('fromParserError maps every parser code to a catalogued type', function () {
    const cases = [
      [{ code: 'HPE_HEADER_OVERFLOW' }, 'headers.too.large'],
      [{ code: 'ERR_HTTP_REQUEST_TIMEOUT' }, 'request.timeout'],
      [{ code: 'HPE_HEADERS_TIMEOUT' }, 'request.timeout'],
      [{ code: 'HPE_CHUNK_EXTENSIONS_OVERFLOW' }, 'chunk.extensions.too.large'],
      [{ code: 'HPE_PAUSED_H2_UPGRADE' }, 'http.version.unsupported'],
      [{ code: 'HPE_INVALID_VERSION', reason: 'Invalid HTTP version', rawPacket: Buffer.from('GET / HTTP/9.9\r\n') }, 'http.version.unsupported'],
      [{ code: 'HPE_INVALID_VERSION', reason: 'Expected CRLF after version' }, 'request.malformed'],
      [{ code: 'HPE_UNEXPECTED_CONTENT_LENGTH' }, 'body.length.invalid'],
      [{ code: 'HPE_INVALID_CHUNK_SIZE' }, 'body.length.invalid'],
      [{ code: 'HPE_INVALID_EOF_STATE' }, 'request.malformed'],
      [{ code: 'HPE_INVALID_HEADER_TOKEN', reason: 'Invalid header value char' }, 'request.malformed'],
      [{}, 'request.malformed']
    ]
    for (const [fields, type] of cases) {
      const error = errors.fromParserError(Object.assign(new Error('parse'), fields))
      const wire = assertWireShape(error, `fromParserError(${fields.code})`)
      assert.equal(wire.type, type, fields.code)
      assert.equal(wire.status, entryOf(type).status)
    }
    assert.equal(errors.fromParserError(Object.assign(new Error('x'), {
      code: 'HPE_INVALID_VERSION', reason: 'Invalid HTTP version', rawPacket: Buffer.from('GET / HTTP/9.9\r\n')
    })).details.version, 'HTTP/9.9')
  })
})

/** Files that still build an error themselves, each with why; not a place for new ones. */
const KNOWN_ELSEWHERE = Object.freeze({})

describe('errors are made only in lib/errors/index.js', function () {
  it('no source of the server calls createError or new LabError elsewhere', function () {
    const found = {}
    for (const dir of ['lib', 'routes', 'generators']) {
      for (const file of fs.readdirSync(path.join(ROOT, dir), { recursive: true })) {
        const relative = path.posix.join(dir, file.split(path.sep).join('/'))
        if (!relative.endsWith('.js') || relative === 'lib/errors/index.js' || relative.startsWith('lib/errors/')) continue
        const text = fs.readFileSync(path.join(ROOT, relative), 'utf8')
        const calls = (text.match(/\bcreateError\s*\(|\bnew LabError\s*\(/g) ?? []).length
        if (calls > 0) found[relative] = calls
      }
    }
    for (const [file, count] of Object.entries(found)) {
      assert.ok(Object.hasOwn(KNOWN_ELSEWHERE, file) && count <= KNOWN_ELSEWHERE[file],
        `${file} builds ${count} error(s) itself: add a factory to lib/errors/index.js (and its catalogue entry and docs row)`)
    }
  })
})
