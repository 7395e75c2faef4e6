// Errors about the request as HTTP: parameters, routes, methods, negotiation, the guard, the parser, and
// `toLabError`, which makes any error one the lab sends.
import { LabError, createError } from './lab-error.js'

/** A query parameter, or a member of a JSON body (`params.concurrency`), out of range or of the wrong kind. */
export function badParameter (name, value, allowed) {
  return createError(400, 'parameter.invalid',
    `parameter "${name}" is invalid: expected ${allowed}`,
    { parameter: name, value: String(value).slice(0, 200), allowed })
}

export function notFound (method, path) {
  return createError(404, 'route.not.found', `no route for ${method} ${path}`, { method, path })
}

export function methodNotAllowed (method, allow) {
  const error = createError(405, 'method.not.allowed', `${method} is not allowed here: use ${allow.join(', ')}`, { method, allow })
  error.headers.Allow = allow.join(', ')
  return error
}

/** 406 media.not.acceptable: GET /metrics with an `Accept` it cannot meet. */
export function mediaNotAcceptable (accept, available) {
  return createError(406, 'media.not.acceptable',
    'GET /metrics answers text/event-stream, application/json or Prometheus text (text/plain; version=0.0.4)',
    { accept: accept ?? null, available })
}

/** 400 host.missing: an HTTP/1.1 request without a Host header (lib/limits/request-guard.js). */
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
const SPOKEN_HTTP_VERSIONS = Object.freeze(['HTTP/1.0', 'HTTP/1.1'])

/** Node refuses chunk extensions (`2;name=value`) longer than this, in bytes, for one chunk. */
const CHUNK_EXTENSIONS_LIMIT = 16 * 1024

/** 400 request.malformed: bytes Node's HTTP parser refuses, with its `code` and `reason` words. */
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

/** 505 http.version.unsupported: a version other than 1.0 and 1.1 (null if unreadable), or the HTTP/2 preface. */
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
 * An error of Node's parser or its timeouts ('clientError') as a LabError. Its `reason` tells a version it does
 * not speak (`Invalid HTTP version`) from a merely broken request line (`Expected CRLF after version`).
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

/** 500 internal: a bug. The error handler logs the error and sends only this; an experiment run keeps the bug's words. */
export function internalError (message = 'internal server error') {
  return createError(500, 'internal', message, {})
}

/** 400 request.invalid: an error from Express or body-parser with a status but no type of its own (the status it had is kept). */
export function requestInvalid (message, status = 400) {
  return createError(status, 'request.invalid', message, {})
}

/**
 * Any error as the lab sends it: a LabError as it is; an http-errors one with its status and type only
 * (`request.invalid` without a type); anything else a 500 `internal`, its words kept from the client.
 */
export function toLabError (err) {
  if (err instanceof LabError) return err
  const status = Number.isInteger(err?.status) && err.status >= 400 && err.status < 600 ? err.status : 500
  if (typeof err?.type !== 'string') return status === 500 ? internalError() : requestInvalid(err.message, status)
  // passed through as Express typed it: the catalogue lists the ones the lab documents (passedThrough)
  return new LabError(status, err.type, status === 500 ? 'internal server error' : err.message)
}
