/**
 * The HTTP server around the app, with the timeouts, a cap on open
 * connections, and the answers to requests too broken to reach Express
 * (oversized headers, slow headers, garbage) or past the cap, given as JSON
 * like every other error.
 *
 * What bounds each kind of connection: one that sends nothing, or its
 * headers slowly, `headersTimeout`; one idle between requests,
 * `keepAliveTimeout`; one that sends its body slowly, the body deadline
 * (lib/limits/body-deadline.js) and `requestTimeout`; a /metrics stream, the hub's
 * `maxClients`; all of them together, `maxConnections`.
 *
 * What Node would answer on its own, and is answered here as JSON instead
 * (docs/errors.md): parser errors (`clientError`: 400 `request.malformed`,
 * 400 `body.length.invalid`, 408, 413, 431, 505), a request line in a version
 * other than 1.0 and 1.1 (505, which Node's parser lets through for HTTP/0.9
 * and HTTP/2.0), an `Expect` other than `100-continue` (417, where Node sends
 * an empty one), `CONNECT` (405, where Node closes the connection). A request
 * without Host goes on to the app, whose guard answers 400 `host.missing`
 * (lib/limits/request-guard.js), where Node would send an empty 400.
 */
import http from 'node:http'
import {
  tooManyConnections, fromParserError, expectationFailed, httpVersionUnsupported, methodNotAllowed
} from '../errors/index.js'
import { discardRestOfBody } from '../ingest/read.js'
import { integerOptions } from '../config/integers.js'

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
/** How long a connection answered and closed here is given to read its answer and hang up. */
const ANSWER_LINGER_MS = 2000
/** `req.httpVersion` of the versions the lab speaks. */
const SPOKEN_VERSIONS = Object.freeze(['1.0', '1.1'])

const checkServerInteger = integerOptions('server option ')

/**
 * Normalise server options: frozen defaults, a new object, a TypeError for a bad value.
 * @param {Partial<typeof SERVER_DEFAULTS>} [options]
 * @returns {typeof SERVER_DEFAULTS}
 */
function normalizeServerOptions (options = {}) {
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

/**
 * Build the server for an app.
 * @param {import('express').Express} app
 * @param {Partial<typeof SERVER_DEFAULTS>} [options]
 * @returns {http.Server & { readonly openConnections: number }} the connections admitted and still open
 * @throws {TypeError} for a bad option
 */
export function createLabServer (app, options = {}) {
  const settings = normalizeServerOptions(options)
  /** Per connection, the response to its latest request until it finishes: what a parse error must not cut into. */
  const answering = new WeakMap()
  const server = http.createServer({
    maxHeaderSize: settings.maxHeaderSize,
    connectionsCheckingInterval: settings.connectionsCheckingInterval,
    headersTimeout: settings.headersTimeout,
    requestTimeout: settings.requestTimeout,
    // Node's own check answers an empty 400: the app's guard answers it as JSON (400 host.missing)
    requireHostHeader: false
  }, function serveRequest (req, res) {
    trackResponse(answering, req.socket, res)
    closeInStages(req, res)
    if (!SPOKEN_VERSIONS.includes(req.httpVersion)) {
      sendError(res, httpVersionUnsupported(`HTTP/${req.httpVersion}`))
      discardRestOfBody(req)
      return
    }
    app(req, res)
  })
  server.keepAliveTimeout = settings.keepAliveTimeout
  capConnections(server, settings.maxConnections)

  // `Expect: 100-continue` keeps Node's default ('checkContinue' unheard: it writes 100 Continue, then 'request')
  server.on('checkExpectation', function refuseExpectation (req, res) {
    trackResponse(answering, req.socket, res)
    sendError(res, expectationFailed(req.headers.expect))
    discardRestOfBody(req)
  })

  // No 'upgrade' listener, on purpose. Without one Node hands an `Upgrade:` request (WebSocket, h2c)
  // to the app as an ordinary request, which RFC 9110 section 7.8 allows ("A server MAY ignore a received
  // Upgrade header field"): the client gets the route's own answer (a 404 as JSON, or the data it
  // asked for over HTTP/1.1) instead of 101, and a WebSocket client fails its handshake on that.
  // An error here would be worse: 426 means the server *requires* an upgrade, and refusing every
  // Upgrade would break `curl --http2 http://...`, which offers h2c and is happy with HTTP/1.1.

  // CONNECT asks for a tunnel; the lab is no proxy. Node would close the connection unanswered.
  server.on('connect', function refuseTunnel (req, socket) {
    answerAndClose(socket, methodNotAllowed('CONNECT', appMethods(app)))
  })

  /** Connections already answered after a parse error: the parser reports every later packet too. */
  const answered = new WeakSet()
  server.on('clientError', function answerClientError (err, socket) {
    if (answered.has(socket)) return
    if (!socket.writable || err.code === 'ECONNRESET') {
      socket.destroy()
      return
    }
    answered.add(socket)
    const error = fromParserError(err)
    const res = answering.get(socket)
    if (res !== undefined && (res.req.complete || res.writableEnded)) {
      // the error is in what follows a request already answered, or being answered (pipelined): that answer goes first
      res.once('finish', function answerAfterResponse () {
        if (socket.writable) answerAndClose(socket, error)
      })
      return
    }
    if (res !== undefined && res.headersSent) {
      // the error is in the body of a request whose answer has begun: no other can be written (Node does the same)
      socket.destroy()
      return
    }
    // Nothing is being answered, or the error is in the body of a request whose route has not answered
    // yet. That route loses its connection when this answer closes it, as if its client had hung up
    // (it records request.aborted). Not through its response: once that finished, Node would forget
    // the request, and the route would wait for a body that never ends or aborts.
    answerAndClose(socket, error)
  })
  return server
}

/**
 * Close a connection in stages when its answer ends it (`Connection: close`,
 * HTTP/1.0) while the client is still sending the request body: RFC 9112
 * section 9.6. Node would close the socket as soon as the answer is flushed;
 * the client's next bytes then meet a closed socket, the kernel answers
 * with a reset, and the reset can destroy the answer in the client's buffer
 * before it reads it (EPIPE or ECONNRESET instead of the JSON error). So the
 * lab half-closes after the answer, reads and drops the rest of the body
 * within discardRestOfBody's bounds (64 MiB, 10 s, a 2 s pause), and closes
 * once the client hangs up, or `ANSWER_LINGER_MS` after the body ended.
 * @param {http.IncomingMessage} req
 * @param {http.ServerResponse} res
 */
function closeInStages (req, res) {
  res.once('prefinish', function lingerIfStillSending () {
    const socket = req.socket
    if (req.complete || socket === null || socket.destroyed) return
    // the lab closes a connection itself only for a body too slow to wait for (lib/limits/body-deadline.js): no lingering then
    if (!clientEndsConnection(req) && /close/i.test(String(res.getHeader('connection') ?? ''))) return
    // Node calls destroySoon() on this socket once the answer is flushed, if the answer ends the connection
    socket.destroySoon = function halfCloseThenDrain () {
      delete socket.destroySoon
      if (socket.writable) socket.end()
      discardRestOfBody(req)
      function closeSoon () {
        const linger = setTimeout(function hangUp () { socket.destroy() }, ANSWER_LINGER_MS)
        linger.unref()
        socket.once('close', function forget () { clearTimeout(linger) })
      }
      if (req.complete) closeSoon()
      else req.once('end', closeSoon)
    }
  })
}

/** The client asked for one request only: `Connection: close`, or HTTP/1.0 without keep-alive. */
function clientEndsConnection (req) {
  const connection = String(req.headers.connection ?? '').toLowerCase()
  if (req.httpVersion === '1.0') return !connection.includes('keep-alive')
  return connection.split(',').some(function isClose (token) { return token.trim() === 'close' })
}

/**
 * Remember the response to the latest request on a connection until it finishes.
 * @param {WeakMap<import('node:net').Socket, http.ServerResponse>} answering
 */
function trackResponse (answering, socket, res) {
  answering.set(socket, res)
  res.once('finish', function responseFinished () {
    if (answering.get(socket) === res) answering.delete(socket)
  })
}

/**
 * The methods the app's routes answer (HEAD wherever GET is), as lib/limits/method-guard.js counts them
 * for one path: what a CONNECT's `Allow` names.
 * @param {import('express').Express} app
 * @returns {string[]}
 */
function appMethods (app) {
  const found = new Set()
  function collect (stack) {
    for (const layer of stack) {
      if (layer.route) for (const method of Object.keys(layer.route.methods)) found.add(method.toUpperCase())
      else if (layer.handle?.stack) collect(layer.handle.stack)
    }
  }
  collect(app.router?.stack ?? [])
  if (found.has('GET')) found.add('HEAD')
  return [...found].sort()
}

/**
 * Answer a LabError through a response the app never saw, as the app's error handler would.
 * @param {http.ServerResponse} res
 * @param {import('../errors/index.js').LabError} error
 */
function sendError (res, error) {
  const body = JSON.stringify(error.toJSON())
  res.writeHead(error.status, {
    ...error.headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body)
  })
  res.end(body)
}

/**
 * A whole HTTP answer for a LabError, as raw bytes for a socket that no
 * response object owns: JSON like every other error, and `Connection: close`.
 * @param {import('../errors/index.js').LabError} error
 * @returns {string}
 */
function rawErrorAnswer (error) {
  const body = JSON.stringify(error.toJSON())
  const headers = {
    ...error.headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    Connection: 'close'
  }
  let head = `HTTP/1.1 ${error.status} ${http.STATUS_CODES[error.status]}\r\n`
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`
  return `${head}\r\n${body}`
}

/**
 * Write the answer on the raw socket and close it; meanwhile read and drop
 * what the client still sends, for a moment: closing a socket with unread
 * bytes resets it, and a reset can destroy the answer before the client
 * reads it (a CONNECT's client may start its TLS handshake at once).
 * @param {import('node:net').Socket} socket
 * @param {import('../errors/index.js').LabError} error
 */
function answerAndClose (socket, error) {
  function hangUp () { socket.destroy() }
  function ignoreData () {}
  function forget () {
    clearTimeout(linger)
    socket.removeListener('data', ignoreData)
    socket.removeListener('end', hangUp)
    socket.removeListener('error', hangUp)
  }
  const linger = setTimeout(hangUp, ANSWER_LINGER_MS)
  linger.unref()
  socket.on('data', ignoreData)
  socket.on('end', hangUp)
  socket.on('error', hangUp)
  socket.once('close', forget)
  socket.end(rawErrorAnswer(error))
}

/**
 * Admit at most `limit` connections. Node's own `server.maxConnections`
 * closes the ones past it without a word; here they get a 503 written on
 * the raw socket. HTTP's own 'connection' listener is wrapped, so that a
 * refused socket never reaches the parser; it also sees the sockets the
 * supervisor hands the worker (worker.js emits 'connection').
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
 * Answer 503 before the request is read, and close (answerAndClose reads
 * and drops what the client sends meanwhile). Refusals waiting to close are
 * capped too (at `limit`): past that, a flood is just closed.
 */
function refuseConnection (socket, limit, refusing) {
  if (refusing.size >= limit) {
    socket.destroy()
    return
  }
  refusing.add(socket)
  socket.once('close', function forgetRefusal () { refusing.delete(socket) })
  answerAndClose(socket, tooManyConnections(limit, CONNECTION_RETRY_AFTER))
}
