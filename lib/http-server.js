/**
 * The HTTP server around the app, with the timeouts, a cap on open
 * connections, and the answers to requests too broken to reach Express
 * (oversized headers, slow headers, garbage) or past the cap, given as JSON
 * like every other error.
 *
 * What bounds each kind of connection: one that sends nothing, or its
 * headers slowly, `headersTimeout`; one idle between requests,
 * `keepAliveTimeout`; one that sends its body slowly, the body deadline
 * (lib/body-deadline.js) and `requestTimeout`; a /metrics stream, the hub's
 * `maxClients`; all of them together, `maxConnections`.
 */
import http from 'node:http'
import { tooManyConnections } from './errors.js'

export const SERVER_DEFAULTS = Object.freeze({
  /** A client must finish sending its headers within this. */
  headersTimeout: 10_000,
  /** Whole request, body included: a 500 MB upload on a slow link needs minutes. */
  requestTimeout: 15 * 60_000,
  keepAliveTimeout: 5_000,
  /** How often Node checks the two timeouts above. */
  connectionsCheckingInterval: 1_000,
  /** Largest request head (Node's default); past it, 431. */
  maxHeaderSize: 16 * 1024,
  /**
   * Open connections. Past it a new one is answered 503 `server.busy` with
   * Retry-After and closed: an answer, not a reset. Well under a default
   * `ulimit -n` of 1024, and far above the 64 /metrics streams and the 8 /good
   * pipelines, so that what is capped behind it answers for itself first.
   */
  maxConnections: 512
})

/** Seconds a client turned away at the connection cap is asked to wait. */
const CONNECTION_RETRY_AFTER = 1
/** How long a refused connection is given to read its 503 and hang up. */
const REFUSAL_LINGER_MS = 2000

function checkServerInteger (name, value, min, max) {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new TypeError(`server option ${name} must be an integer from ${min} to ${max}, got ${value}`)
  }
  return value
}

/**
 * Normalise server options: frozen defaults, a new object, a TypeError for a bad value.
 * @param {Partial<typeof SERVER_DEFAULTS>} [options]
 * @returns {typeof SERVER_DEFAULTS}
 */
export function normalizeServerOptions (options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('server options must be an object')
  const out = { ...SERVER_DEFAULTS }
  for (const [key, value] of Object.entries(options)) if (value !== undefined) out[key] = value
  checkServerInteger('headersTimeout', out.headersTimeout, 1, 3_600_000)
  checkServerInteger('requestTimeout', out.requestTimeout, 0, 24 * 3_600_000)
  checkServerInteger('keepAliveTimeout', out.keepAliveTimeout, 0, 3_600_000)
  checkServerInteger('connectionsCheckingInterval', out.connectionsCheckingInterval, 1, 3_600_000)
  checkServerInteger('maxHeaderSize', out.maxHeaderSize, 1024, 1024 * 1024)
  checkServerInteger('maxConnections', out.maxConnections, 1, 1_000_000)
  return Object.freeze(out)
}

const CLIENT_ERRORS = Object.freeze({
  HPE_HEADER_OVERFLOW: [431, 'headers.too.large', 'request headers are larger than the server accepts'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'request.timeout', 'the request took too long to arrive'],
  HPE_HEADERS_TIMEOUT: [408, 'request.timeout', 'the request headers took too long to arrive']
})

/**
 * Build the server for an app.
 * @param {import('express').Express} app
 * @param {Partial<typeof SERVER_DEFAULTS>} [options]
 * @returns {http.Server & { readonly openConnections: number }} the connections admitted and still open
 * @throws {TypeError} for a bad option
 */
export function createLabServer (app, options = {}) {
  const settings = normalizeServerOptions(options)
  const server = http.createServer({
    maxHeaderSize: settings.maxHeaderSize,
    connectionsCheckingInterval: settings.connectionsCheckingInterval,
    headersTimeout: settings.headersTimeout,
    requestTimeout: settings.requestTimeout
  }, app)
  server.keepAliveTimeout = settings.keepAliveTimeout
  capConnections(server, settings.maxConnections)
  server.on('clientError', function answerClientError (err, socket) {
    if (!socket.writable || err.code === 'ECONNRESET') {
      socket.destroy()
      return
    }
    const [status, type, message] = CLIENT_ERRORS[err.code] ?? [400, 'request.malformed', 'the request could not be parsed as HTTP']
    const body = JSON.stringify({ error: { status, type, message, code: err.code ?? null } })
    socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
  })
  return server
}

/**
 * Admit at most `limit` connections. Node's own `server.maxConnections`
 * closes the ones past it without a word; here they get a 503 written on
 * the raw socket. HTTP's own 'connection' listener is wrapped, so that a
 * refused socket never reaches the parser; it also sees the sockets the
 * supervisor hands the worker (lib/worker-main.js emits 'connection').
 * @param {http.Server} server
 * @param {number} limit
 */
function capConnections (server, limit) {
  const open = new Set()
  const refusing = new Set()
  const [serveConnection] = server.listeners('connection')
  server.removeListener('connection', serveConnection)
  server.on('connection', function admitConnection (socket) {
    if (open.size >= limit) {
      refuseConnection(socket, limit, refusing)
      return
    }
    open.add(socket)
    socket.once('close', function connectionClosed () { open.delete(socket) })
    serveConnection.call(this, socket)
  })
  /** Connections admitted and still open (the tests watch it). */
  Object.defineProperty(server, 'openConnections', {
    get: function openConnections () { return open.size }
  })
}

/**
 * Answer 503 before the request is read, then read and drop what the client
 * sends for a moment: closing a socket with unread bytes resets it, and a
 * reset can destroy the answer before the client reads it. Refusals waiting
 * to close are capped too (at `limit`): past that, a flood is just closed.
 */
function refuseConnection (socket, limit, refusing) {
  if (refusing.size >= limit) {
    socket.destroy()
    return
  }
  refusing.add(socket)
  const error = tooManyConnections(limit, CONNECTION_RETRY_AFTER)
  const body = JSON.stringify(error.toJSON())
  function forget () {
    clearTimeout(linger)
    refusing.delete(socket)
    socket.removeListener('data', ignoreData)
    socket.removeListener('end', hangUp)
    socket.removeListener('error', hangUp)
    socket.removeListener('close', forget)
  }
  function hangUp () { socket.destroy() }
  function ignoreData () {}
  const linger = setTimeout(hangUp, REFUSAL_LINGER_MS)
  linger.unref()
  socket.on('data', ignoreData)
  socket.on('end', hangUp)
  socket.on('error', hangUp)
  socket.on('close', forget)
  socket.end(`HTTP/1.1 503 ${http.STATUS_CODES[503]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Retry-After: ${error.headers['Retry-After']}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
}
