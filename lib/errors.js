/**
 * Every error the lab sends is made here: an HTTP status, a dotted `type`
 * and the figures that explain it. The Express error handler in
 * `lib/app.js` turns them into JSON; `docs/errors.md` lists them all.
 */

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

/** Build a LabError. */
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

function mib (bytes) {
  return `${(bytes / 1048576).toFixed(1)} MiB`
}

/**
 * 413 memory.budget.exceeded: this request alone would pass the memory budget (lib/admission.js).
 * @param {{ route: string, budget: number, projected: number, available: number, what: string }} figures
 */
export function budgetExceeded ({ route, budget, projected, available, what }) {
  const hint = WAYS_AROUND_BUDGET[route] ?? WAYS_AROUND_BUDGET.default
  return createError(413, 'memory.budget.exceeded',
    `${what} would need ${mib(projected)}, more than the ${mib(available)} this lab can give one request ` +
    `(memory budget ${mib(budget)}): ${hint}`,
    { route, budget, projected, available, hint })
}

/**
 * 503 memory.busy: the request fits the memory budget, but not beside what runs now.
 * @param {{ route: string, budget: number, projected: number, available: number, what: string, retryAfter: number }} figures
 */
export function memoryBusy ({ route, budget, projected, available, what, retryAfter }) {
  const error = createError(503, 'memory.busy',
    `${what} would need ${mib(projected)} and only ${mib(available)} of the memory budget (${mib(budget)}) ` +
    'is free while other requests run: try again shortly',
    { route, budget, projected, available, retryAfter })
  error.headers['Retry-After'] = String(retryAfter)
  return error
}

/** 413 record.too.dense: JSON.parse of one record (or batch) is projected past what a parse thread may hold. */
export function recordTooDense (limit, projected, bytes, offset) {
  return createError(413, 'record.too.dense',
    `one record of ${bytes} bytes would take about ${Math.ceil(projected / 1048576)} MiB to parse, more than the ` +
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
