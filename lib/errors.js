/**
 * Every error the lab sends is made here: an HTTP status, a dotted `type`
 * and the figures that explain it. The Express error handler in
 * `lib/app.js` turns them into JSON; `docs/errors.md` lists them all, and
 * `ERROR_CATALOGUE` (at the end) is the same list as data.
 */
import { formatMiB } from './units.js'

/** Error with an HTTP status, a dotted type and explanatory figures. */
export class LabError extends Error {
  /**
   * @param {number} status HTTP status code
   * @param {string} type dotted type, e.g. `entity.too.large`
   * @param {string} message human-readable sentence
   * @param {object} [details] figures that explain the error (limit, received, offset ...)
   */
  constructor (status, type, message, details = {}) {
    super(message)
    this.name = 'LabError'
    this.status = status
    this.statusCode = status
    this.type = type
    this.expose = true
    this.details = details
    /** Response headers that belong to the error (Allow, Retry-After). */
    this.headers = {}
  }

  /** The JSON body sent to the client. */
  toJSON () {
    return { error: { status: this.status, type: this.type, message: this.message, ...this.details } }
  }
}

/**
 * Build a LabError. For the factories below: everything else asks a factory, so that every
 * type the lab sends is in the catalogue at the end of this file (test/errors-catalogue.test.js
 * fails on a call elsewhere).
 */
export function createError (status, type, message, details) {
  return new LabError(status, type, message, details)
}

/** A query parameter, or a member of a JSON body (`params.concurrency`), out of range or of the wrong kind. */
export function badParameter (name, value, allowed) {
  return createError(400, 'parameter.invalid',
    `parameter "${name}" is invalid: expected ${allowed}`,
    { parameter: name, value: String(value).slice(0, 200), allowed })
}

export function compressedTooLarge (limit, received) {
  return createError(413, 'entity.too.large',
    `request body is larger than the ${limit}-byte limit on compressed bytes`,
    { limit, received })
}

export function inflatedTooLarge (limit, received) {
  return createError(413, 'inflated.too.large',
    `inflated body passed the ${limit}-byte limit`,
    { limit, received })
}

export function unsupportedMediaType (contentType, allowed) {
  return createError(415, 'media.unsupported',
    `unsupported media type "${contentType || '(none)'}": send gzip, or JSON/NDJSON with Content-Encoding: gzip`,
    { contentType: contentType || null, allowed })
}

export function unsupportedEncoding (encoding) {
  return createError(415, 'encoding.unsupported',
    `unsupported Content-Encoding "${encoding}": only gzip (or identity for a gzip media type)`,
    { encoding })
}

export function gzipInvalid (cause, compressedBytes) {
  return createError(400, 'gzip.invalid',
    `body is not valid gzip: ${cause}`,
    { cause, compressedBytes })
}

/** A byte other than zero after a body's gzip members ended in padding (lib/gzip-framing.js). */
export function gzipTrailingData (offset, value) {
  return createError(400, 'gzip.trailing.data',
    `byte ${offset} of the gzip body is 0x${value.toString(16).padStart(2, '0')} after zero padding: ` +
    'a gzip body is members back to back, then only zero bytes',
    { offset, value })
}

export function gzipTruncated (compressedBytes) {
  return createError(400, 'gzip.truncated',
    'gzip stream ended before its end marker (truncated upload?)',
    { compressedBytes })
}

export function jsonInvalid (reason, offset) {
  return createError(422, 'json.invalid',
    `body is not valid JSON: ${reason}${offset >= 0 ? ` (at byte ${offset})` : ''}`,
    { reason, offset })
}

/** 413 encoding.too.many: more gzip layers (media type plus `Content-Encoding`) than `limits.layers`. */
export function tooManyLayers (limit, received) {
  return createError(413, 'encoding.too.many', `more than ${limit} gzip layers`, { limit, received })
}

export function requestAborted (received) {
  return createError(400, 'request.aborted', 'client closed the connection before the body ended', { received })
}

export function notFound (method, path) {
  return createError(404, 'route.not.found', `no route for ${method} ${path}`, { method, path })
}

/**
 * Map a zlib error (from `zlib.gunzip` or a `createGunzip` stream) to a LabError.
 * @param {Error & {code?: string}} err
 * @param {number} compressedBytes
 */
export function fromZlibError (err, compressedBytes) {
  if (err instanceof LabError) return err
  if (err.code === 'Z_BUF_ERROR') return gzipTruncated(compressedBytes)
  if (err.code === 'Z_DATA_ERROR' || err.code === 'Z_STREAM_ERROR' || err.code === 'Z_NEED_DICT') {
    return gzipInvalid(err.message, compressedBytes)
  }
  return null
}

export function recordTooLarge (limit, received, offset) {
  return createError(413, 'record.too.large',
    `a single JSON value passed the ${limit}-byte limit`,
    { limit, received, offset })
}

export function shapeInvalid (format, offset) {
  return format === 'array'
    ? createError(422, 'json.shape.invalid', 'format "array" needs a top-level JSON array (or send ?format=json or ?format=ndjson)', { format, offset })
    : createError(422, 'json.items.missing', 'format "json" needs a top-level object with an "items" array (or send ?format=array or ?format=ndjson)', { format, offset })
}

export function ratioTooLarge (limit, received, inflatedBytes, compressedBytes) {
  return createError(413, 'ratio.too.large',
    `inflated body grew more than ${limit} times its compressed size (a zip bomb?)`,
    { limit, received: Math.round(received), inflatedBytes, compressedBytes })
}

export function tooDeep (limit, offset) {
  return createError(422, 'json.too.deep',
    `JSON nests deeper than ${limit} arrays and objects`,
    { limit, offset })
}

export function methodNotAllowed (method, allow) {
  const error = createError(405, 'method.not.allowed', `${method} is not allowed here: use ${allow.join(', ')}`, { method, allow })
  error.headers.Allow = allow.join(', ')
  return error
}

export function overloaded (limit, retryAfterSeconds) {
  const error = createError(503, 'server.busy', `more than ${limit} ingest requests in flight: try again shortly`, { limit, retryAfter: retryAfterSeconds })
  error.headers['Retry-After'] = String(retryAfterSeconds)
  return error
}

export function bodyTimeout (ms, received) {
  return createError(408, 'request.timeout', `no body bytes for ${ms} ms: the upload stalled`, { timeoutMs: ms, received })
}

/**
 * 507 disk.quota.exceeded: a write would take what the lab stores under its data
 * directory past the disk quota. `used` counts everything else, `asked` this write.
 */
export function diskQuotaExceeded (quota, used, asked) {
  return createError(507, 'disk.quota.exceeded',
    `writing ${asked} bytes would pass the ${quota}-byte disk quota (${used} bytes in use): ` +
    'free space with DELETE /uploads, or start the lab with a larger --disk-quota',
    { quota, used, asked })
}

/** 503 save.busy: one `GET /generate?save=1` at a time. */
export function saveBusy (retryAfterSeconds) {
  const error = createError(503, 'save.busy', `a save is already being written: one at a time, try again in ${retryAfterSeconds} s`, { retryAfter: retryAfterSeconds })
  error.headers['Retry-After'] = String(retryAfterSeconds)
  return error
}

/** 413 entity.too.large: an upload passed `upload.limit` (lib/upload.js). */
export function uploadTooLarge (limit, received) {
  return createError(413, 'entity.too.large', `upload is larger than the ${limit}-byte limit`, { limit, received })
}

/** 404 upload.not.found: DELETE /uploads/:file of a name the lab does not have (any more). */
export function uploadNotFound (file) {
  return createError(404, 'upload.not.found', `no upload named ${file}`, { file })
}

/** 408 request.too.slow: a body under `limits.minBodyRate` over the last `windowMs` the server was reading. */
export function bodyTooSlow (limit, rate, received, elapsedMs, windowMs) {
  return createError(408, 'request.too.slow',
    `the body arrived at ${Math.round(rate)} bytes/s over the last ${windowMs} ms, under the ${limit} bytes/s minimum`,
    { limit, rate: Math.round(rate), windowMs, received, elapsedMs })
}

/** 503 server.busy: a connection past `maxConnections`, answered on the raw socket by lib/http-server.js. */
export function tooManyConnections (limit, retryAfterSeconds) {
  const error = createError(503, 'server.busy', `more than ${limit} connections open: try again shortly`, { limit, retryAfter: retryAfterSeconds })
  error.headers['Retry-After'] = String(retryAfterSeconds)
  return error
}

/** 503 server.busy: a GET /metrics stream past the hub's `maxClients`. */
export function tooManyStreams (limit, retryAfterSeconds) {
  const error = createError(503, 'server.busy', `more than ${limit} GET /metrics streams open: try again later, or ask for ?format=json`, { limit, retryAfter: retryAfterSeconds })
  error.headers['Retry-After'] = String(retryAfterSeconds)
  return error
}

/** How to get past a memory refusal, by route: what the message says. */
const WAYS_AROUND_BUDGET = Object.freeze({
  bad: 'run the lab with a larger --memory-limit, or with --unsafe-bad to watch the worker die',
  default: 'run the lab with a larger --memory-limit'
})

/**
 * 413 memory.budget.exceeded: this request alone would pass the memory budget (lib/admission.js).
 * @param {{ route: string, budget: number, projected: number, available: number, what: string }} figures
 */
export function budgetExceeded ({ route, budget, projected, available, what }) {
  const hint = WAYS_AROUND_BUDGET[route] ?? WAYS_AROUND_BUDGET.default
  return createError(413, 'memory.budget.exceeded',
    `${what} would need ${formatMiB(projected)}, more than the ${formatMiB(available)} this lab can give one request ` +
    `(memory budget ${formatMiB(budget)}): ${hint}`,
    { route, budget, projected, available, hint })
}

/**
 * 503 memory.busy: the request fits the memory budget, but not beside what runs now.
 * @param {{ route: string, budget: number, projected: number, available: number, what: string, retryAfter: number }} figures
 */
export function memoryBusy ({ route, budget, projected, available, what, retryAfter }) {
  const error = createError(503, 'memory.busy',
    `${what} would need ${formatMiB(projected)} and only ${formatMiB(available)} of the memory budget (${formatMiB(budget)}) ` +
    'is free while other requests run: try again shortly',
    { route, budget, projected, available, retryAfter })
  error.headers['Retry-After'] = String(retryAfter)
  return error
}

/** 413 record.too.dense: JSON.parse of one record (or batch) is projected past what a parse thread may hold. */
export function recordTooDense (limit, projected, bytes, offset) {
  const cost = projected === null ? 'ran its parse thread out of heap' : `would take about ${Math.ceil(projected / 1048576)} MiB to parse`
  return createError(413, 'record.too.dense',
    `one record of ${bytes} bytes ${cost}, more than the ` +
    `${Math.round(limit / 1048576)} MiB a parse thread may hold (many tiny values cost far more than their text): ` +
    'split it into smaller records',
    { limit, projected, bytes, offset })
}

/** 503 server.busy: a /good request waited past `ingest.queueMs` for one of the streaming pipelines. */
export function pipelinesBusy (pipelines, waitedMs, retryAfterSeconds) {
  const error = createError(503, 'server.busy',
    `all ${pipelines} streaming pipelines stayed busy for ${waitedMs} ms: try again shortly`,
    { limit: pipelines, waitedMs, retryAfter: retryAfterSeconds })
  error.headers['Retry-After'] = String(retryAfterSeconds)
  return error
}

/** 400 host.missing: an HTTP/1.1 request without a Host header (lib/request-guard.js). */
export function hostMissing () {
  return createError(400, 'host.missing', 'an HTTP/1.1 request must name its Host', {})
}

/** 403 host.not.allowed: a Host the lab does not answer to, as a page rebinding a DNS name to 127.0.0.1 would send. */
export function hostNotAllowed (host, allowedHosts) {
  return createError(403, 'host.not.allowed',
    `the lab does not answer to host "${host}": it answers to localhost, *.localhost, IP addresses and the address it is ` +
    'bound to (a web page that pointed its own name at this machine would come as that name). ' +
    'To reach it by this name, start it with --allowed-hosts (or STREAMLAB_ALLOWED_HOSTS)',
    { host, allowed: ['localhost', '*.localhost', 'IP addresses', ...allowedHosts], flag: '--allowed-hosts' })
}

/** 403 request.cross.site: a browser request from another site that would change the lab's state. */
export function crossSiteRefused (method, path, site, origin) {
  return createError(403, 'request.cross.site',
    `${method} ${path} came from another web page (${site !== null ? `Sec-Fetch-Site: ${site}` : `Origin: ${origin}`}): ` +
    'only the lab\'s own page, curl and scripts may drive it',
    { method, path, secFetchSite: site, origin })
}

/** 401 token.required: beyond loopback, a state-changing request without the access token printed at start. */
export function tokenRequired (wrong) {
  const error = createError(401, wrong ? 'token.invalid' : 'token.required',
    wrong
      ? 'the access token is wrong: use the one the lab printed when it started'
      : 'this lab is open to the network: changes need the access token it printed at start ' +
        '(open the printed URL once, or send Authorization: Bearer <token>)',
    {})
  error.headers['WWW-Authenticate'] = 'Bearer realm="streamlab"'
  return error
}

/** HTTP versions the lab speaks: the only ones `http.version.unsupported` offers. */
export const SPOKEN_HTTP_VERSIONS = Object.freeze(['HTTP/1.0', 'HTTP/1.1'])

/** Node refuses chunk extensions (`2;name=value`) longer than this, in bytes, for one chunk. */
export const CHUNK_EXTENSIONS_LIMIT = 16 * 1024

/**
 * 400 request.malformed: bytes Node's HTTP parser refuses (not HTTP, an invalid
 * header character, a bare LF, a connection that ends mid-head ...).
 * @param {string|null} code Node's parser code (`HPE_INVALID_HEADER_TOKEN`)
 * @param {string|null} reason the parser's words (`Invalid header value char`)
 */
export function requestMalformed (code, reason) {
  return createError(400, 'request.malformed',
    `the request could not be parsed as HTTP${reason ? `: ${reason}` : ''}`,
    { code, reason })
}

/**
 * 400 body.length.invalid: where the body ends cannot be told for sure: Transfer-Encoding with
 * Content-Length, two Content-Lengths, one that is not a number, a Transfer-Encoding that does not
 * end in chunked, an unreadable chunk size. The shapes request smuggling uses, so never guessed at.
 */
export function bodyLengthInvalid (code, reason) {
  return createError(400, 'body.length.invalid',
    `where the body ends is ambiguous or unreadable${reason ? ` (${reason})` : ''}: ` +
    'send one Content-Length, or Transfer-Encoding: chunked alone',
    { code, reason })
}

/** 413 chunk.extensions.too.large: a chunk's extensions past Node's limit. */
export function chunkExtensionsTooLarge (code) {
  return createError(413, 'chunk.extensions.too.large',
    `a chunk's extensions are longer than the ${CHUNK_EXTENSIONS_LIMIT} bytes the server reads`,
    { code, limit: CHUNK_EXTENSIONS_LIMIT })
}

/** 431 headers.too.large: the request head is larger than the server's `maxHeaderSize`. */
export function headersTooLarge (code) {
  return createError(431, 'headers.too.large', 'request headers are larger than the server accepts', { code })
}

/** 408 request.timeout: Node's `headersTimeout` or `requestTimeout` passed (one code for both). */
export function requestTooLong (code) {
  return createError(408, 'request.timeout', 'the request took too long to arrive', { code })
}

/**
 * 505 http.version.unsupported: a request line in a version other than HTTP/1.0 and HTTP/1.1
 * (HTTP/0.9, HTTP/2.0 as text, HTTP/9.9), or the HTTP/2 connection preface.
 * @param {string|null} version as the request gave it (`HTTP/9.9`), null when it could not be read
 */
export function httpVersionUnsupported (version, code = null) {
  return createError(505, 'http.version.unsupported',
    `${version ?? 'this HTTP version'} is not spoken here: send ${SPOKEN_HTTP_VERSIONS.join(' or ')}`,
    { version, supported: SPOKEN_HTTP_VERSIONS, code })
}

/** 417 expectation.failed: an `Expect` header other than `100-continue`. */
export function expectationFailed (expect) {
  return createError(417, 'expectation.failed',
    `cannot meet "Expect: ${String(expect).slice(0, 200)}": only 100-continue is supported`,
    { expect: String(expect).slice(0, 200), supported: ['100-continue'] })
}

/** Node's parser codes for a body whose end cannot be told. */
const BODY_LENGTH_CODES = new Set([
  'HPE_INVALID_TRANSFER_ENCODING', 'HPE_UNEXPECTED_CONTENT_LENGTH', 'HPE_INVALID_CONTENT_LENGTH', 'HPE_INVALID_CHUNK_SIZE'
])

/**
 * Map an error of Node's HTTP parser or its timeouts (a server's 'clientError') to a LabError.
 * The parser's words (`reason`) tell a version it does not speak (`Invalid HTTP version`, a
 * well-formed `HTTP/d.d`) from a request line that is merely broken (`Expected CRLF after version`).
 * @param {Error & { code?: string, reason?: string, rawPacket?: Buffer }} err
 * @returns {LabError}
 */
export function fromParserError (err) {
  const code = typeof err.code === 'string' ? err.code : null
  const reason = typeof err.reason === 'string' ? err.reason : null
  if (code === 'HPE_HEADER_OVERFLOW') return headersTooLarge(code)
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'HPE_HEADERS_TIMEOUT') return requestTooLong(code)
  if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') return chunkExtensionsTooLarge(code)
  // `PRI * HTTP/2.0`: an HTTP/2 client with prior knowledge
  if (code === 'HPE_PAUSED_H2_UPGRADE') return httpVersionUnsupported('HTTP/2.0', code)
  if (code === 'HPE_INVALID_VERSION' && reason === 'Invalid HTTP version') {
    const line = err.rawPacket ? err.rawPacket.subarray(0, 8192).toString('latin1') : ''
    const version = /^[^ \r\n]+ [^ \r\n]+ (HTTP\/\d\.\d)\r?\n/.exec(line)?.[1] ?? null
    return httpVersionUnsupported(version, code)
  }
  if (BODY_LENGTH_CODES.has(code)) return bodyLengthInvalid(code, reason)
  // the parser says `Invalid EOF state`: the client half-closed before its head was whole
  if (code === 'HPE_INVALID_EOF_STATE') return requestMalformed(code, 'the connection ended before the request did')
  return requestMalformed(code, reason)
}

/** What POST /express-json reads: express.json's own media type, gzip by `Content-Encoding`. */
export const EXPRESS_JSON_MEDIA = Object.freeze(['application/json'])

/**
 * 415 media.unsupported on POST /express-json: `express.json` reads `application/json` only (its
 * `type`). A gzip file sent as such is what /bad and /good take; NDJSON is not one JSON document.
 */
export function expressJsonMediaUnsupported (contentType) {
  const media = String(contentType || '').split(';')[0].trim().toLowerCase()
  const why = media === 'application/x-ndjson'
    ? 'express.json parses one JSON document, not NDJSON: send NDJSON to /bad or /good'
    : 'send the JSON as Content-Type: application/json, gzipped with Content-Encoding: gzip (a gzip file as it is goes to /bad or /good)'
  return createError(415, 'media.unsupported',
    `POST /express-json reads what express.json reads, not "${contentType || '(none)'}": ${why}`,
    { contentType: contentType || null, allowed: EXPRESS_JSON_MEDIA })
}

/** 415 encoding.unsupported on POST /express-json: one gzip layer or none, named as body-parser reads the header. */
export function expressJsonEncodingUnsupported (encoding) {
  return createError(415, 'encoding.unsupported',
    `unsupported Content-Encoding "${encoding}" on POST /express-json: send "gzip" (one layer) or nothing`,
    { encoding, allowed: ['gzip', 'identity'] })
}

/** 415 charset.unsupported: a JSON body in a charset other than UTF-8 (POST /express-json; body-parser's type). */
export function charsetUnsupported (charset) {
  return createError(415, 'charset.unsupported',
    `unsupported charset "${charset}": the lab reads JSON as UTF-8`,
    { charset, allowed: ['utf-8'] })
}

/** 406 media.not.acceptable: GET /metrics with an `Accept` it cannot meet. */
export function mediaNotAcceptable (accept, available) {
  return createError(406, 'media.not.acceptable',
    'GET /metrics answers text/event-stream, application/json or Prometheus text (text/plain; version=0.0.4)',
    { accept: accept ?? null, available })
}

/** 400 experiment.unknown: POST /experiments names no experiment in the registry. */
export function experimentUnknown (name, known) {
  return createError(400, 'experiment.unknown', `no experiment named "${String(name).slice(0, 100)}": try ${known.join(', ')}`,
    { name: String(name).slice(0, 100), known })
}

/** 404 experiment.not.found: no run with this id; the engine keeps the last `keep`. */
export function experimentNotFound (id, keep) {
  return createError(404, 'experiment.not.found', `no experiment run with id "${id}" (the last ${keep} are kept)`,
    { id: String(id).slice(0, 100) })
}

/** 409 experiment.busy: one experiment at a time, so that runs do not measure each other. */
export function experimentBusy (running) {
  return createError(409, 'experiment.busy', `experiment ${running.id} (${running.name}) is still running: wait for it or cancel it`,
    { running: running.id, name: running.name })
}

/** 409 experiment.not.running: DELETE of a run that has already ended. */
export function experimentNotRunning (id, runStatus) {
  return createError(409, 'experiment.not.running', `experiment ${id} has already ended (${runStatus})`, { id, runStatus })
}

/**
 * 500 worker.crashed: not an answer but the error of an experiment run that was in flight when
 * the worker process died; the next worker records it under the run's id.
 * @param {{ reason: string, rss?: number, budget?: number, route?: string }} crash the supervisor's record
 */
export function workerCrashed (crash) {
  return createError(500, 'worker.crashed',
    crash.reason === 'memory-limit'
      ? 'the worker process passed its memory budget and was killed during this run; the lab restarted it'
      : 'the worker process died during this run; the lab restarted it',
    { reason: crash.reason, rss: crash.rss ?? null, budget: crash.budget ?? null, route: crash.route ?? null })
}

/** What the message of a 503 database.unavailable says happened, by when it happened. */
const DATABASE_LOST = Object.freeze({
  connect: 'the database is unavailable',
  closed: 'the database handle is closed (the lab is shutting down)',
  export: 'the database connection ended during the export',
  query: 'the database went away during the query'
})

/** `cause` when the situation, not the driver, names it. */
const DATABASE_LOST_CAUSE = Object.freeze({ closed: 'closed', export: 'connection ended' })

/**
 * 503 database.unavailable: the database could not be reached or started (`connect`), the lab is
 * shutting it down (`closed`), or its connection ended during an export or a query.
 * @param {{ database: 'embedded'|'postgres', when: 'connect'|'closed'|'export'|'query',
 *   cause?: string, detail?: string, target?: string }} figures `cause` the driver's code (or its words),
 *   `detail` its words fit for a client, `target` which database (a redacted URL, or the embedded one)
 */
export function databaseUnavailable ({ database, when, cause, detail, target }) {
  if (!Object.hasOwn(DATABASE_LOST, when)) throw new TypeError(`databaseUnavailable: unknown when "${when}"`)
  const message = DATABASE_LOST[when] + (target == null ? '' : ` (${target})`) + (detail == null ? '' : `: ${detail}`)
  return createError(503, 'database.unavailable', message,
    { database, cause: DATABASE_LOST_CAUSE[when] ?? cause ?? null })
}

/** 503 database.busy: no pooled connection came free within `waitedMs`. */
export function databaseBusy (database, poolMax, waitedMs) {
  return createError(503, 'database.busy',
    `all ${poolMax} database connection${poolMax === 1 ? ' is' : 's are'} in use and none came free within ${waitedMs} ms` +
    (database === 'embedded' ? ' (the embedded database serves one request at a time)' : ''),
    { database, poolMax, waitedMs })
}

/** 503 database.not.seeded: the export's tables are absent and the lab may not seed them. */
export function databaseNotSeeded (database) {
  return createError(503, 'database.not.seeded',
    'the desks and items tables are not there: run npm run db:seed (the lab seeds them itself unless database.seed is false)',
    { database })
}

/** 500 internal: a bug. The error handler logs the error and sends only this; an experiment run keeps the bug's words. */
export function internalError (message = 'internal server error') {
  return createError(500, 'internal', message, {})
}

/** 400 request.invalid: an error from Express or body-parser with a status but no type of its own (the status it had is kept). */
export function requestInvalid (message, status = 400) {
  return createError(status, 'request.invalid', message, {})
}

/**
 * Any error as the lab sends it. A LabError as it is; one from Express or body-parser
 * (http-errors: a 4xx or 5xx `status`, often a `type`) with its status and type and nothing
 * else, `request.invalid` if it has no type; anything else is a 500 `internal`, its words kept
 * from the client.
 * @param {Error & { status?: number, type?: string }} err
 * @returns {LabError}
 */
export function toLabError (err) {
  if (err instanceof LabError) return err
  const status = Number.isInteger(err?.status) && err.status >= 400 && err.status < 600 ? err.status : 500
  if (typeof err?.type !== 'string') return status === 500 ? internalError() : requestInvalid(err.message, status)
  // passed through as Express typed it: the catalogue lists the ones the lab documents (passedThrough)
  return new LabError(status, err.type, status === 500 ? 'internal server error' : err.message)
}

/**
 * The catalogue: every type the lab sends, its status, and the factories that make it.
 * `passedThrough` marks a type that Express's body-parser makes and the lab passes on as it is
 * (`toLabError`); such a type may have no factory here. `docs/errors.md` lists the same types
 * with the same statuses: test/errors-catalogue.test.js fails when the two drift apart, when an
 * exported factory is missing here, or when a factory makes a type other than its entry's.
 * @type {ReadonlyArray<Readonly<{ type: string, status: number, factories: ReadonlyArray<Function>, passedThrough: string|null }>>}
 */
export const ERROR_CATALOGUE = catalogue([
  [400, 'parameter.invalid', [badParameter]],
  [400, 'gzip.invalid', [gzipInvalid]],
  [400, 'gzip.trailing.data', [gzipTrailingData]],
  [400, 'gzip.truncated', [gzipTruncated]],
  [400, 'request.aborted', [requestAborted], 'express.json'],
  [400, 'host.missing', [hostMissing]],
  [400, 'request.malformed', [requestMalformed]],
  [400, 'body.length.invalid', [bodyLengthInvalid]],
  [400, 'experiment.unknown', [experimentUnknown]],
  [400, 'entity.parse.failed', [], 'express.json'],
  [400, 'request.invalid', [requestInvalid]],
  [401, 'token.required', [tokenRequired]],
  [401, 'token.invalid', [tokenRequired]],
  [403, 'host.not.allowed', [hostNotAllowed]],
  [403, 'request.cross.site', [crossSiteRefused]],
  [404, 'route.not.found', [notFound]],
  [404, 'experiment.not.found', [experimentNotFound]],
  [404, 'upload.not.found', [uploadNotFound]],
  [405, 'method.not.allowed', [methodNotAllowed]],
  [406, 'media.not.acceptable', [mediaNotAcceptable]],
  [408, 'request.timeout', [bodyTimeout, requestTooLong]],
  [408, 'request.too.slow', [bodyTooSlow]],
  [409, 'experiment.busy', [experimentBusy]],
  [409, 'experiment.not.running', [experimentNotRunning]],
  [413, 'entity.too.large', [compressedTooLarge, uploadTooLarge], 'express.json'],
  [413, 'inflated.too.large', [inflatedTooLarge]],
  [413, 'record.too.large', [recordTooLarge]],
  [413, 'record.too.dense', [recordTooDense]],
  [413, 'memory.budget.exceeded', [budgetExceeded]],
  [413, 'ratio.too.large', [ratioTooLarge]],
  [413, 'encoding.too.many', [tooManyLayers]],
  [413, 'chunk.extensions.too.large', [chunkExtensionsTooLarge]],
  [415, 'media.unsupported', [unsupportedMediaType, expressJsonMediaUnsupported]],
  [415, 'encoding.unsupported', [unsupportedEncoding, expressJsonEncodingUnsupported], 'express.json'],
  [415, 'charset.unsupported', [charsetUnsupported], 'express.json'],
  [417, 'expectation.failed', [expectationFailed]],
  [422, 'json.invalid', [jsonInvalid]],
  [422, 'json.too.deep', [tooDeep]],
  [422, 'json.items.missing', [shapeInvalid]],
  [422, 'json.shape.invalid', [shapeInvalid]],
  [431, 'headers.too.large', [headersTooLarge]],
  [500, 'internal', [internalError]],
  [500, 'worker.crashed', [workerCrashed]],
  [503, 'server.busy', [overloaded, tooManyConnections, tooManyStreams, pipelinesBusy]],
  [503, 'memory.busy', [memoryBusy]],
  [503, 'save.busy', [saveBusy]],
  [503, 'database.unavailable', [databaseUnavailable]],
  [503, 'database.busy', [databaseBusy]],
  [503, 'database.not.seeded', [databaseNotSeeded]],
  [505, 'http.version.unsupported', [httpVersionUnsupported]],
  [507, 'disk.quota.exceeded', [diskQuotaExceeded]]
])

/** Functions that map another error to a factory's (they make no type of their own). */
export const ERROR_MAPPERS = Object.freeze([fromZlibError, fromParserError, toLabError])

function catalogue (rows) {
  const seen = new Set()
  return Object.freeze(rows.map(function entry ([status, type, factories, passedThrough = null]) {
    if (seen.has(type)) throw new TypeError(`error catalogue: ${type} is listed twice`)
    seen.add(type)
    return Object.freeze({ type, status, factories: Object.freeze(factories), passedThrough })
  }))
}
