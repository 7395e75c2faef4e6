// The HTTP server around the app: timeouts, a cap on open connections, and JSON answers to requests
// too broken to reach Express. What bounds each connection, and what Node would answer on its own: README.md.
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
  /** Open connections; past it, 503 `server.busy` (an answer, not a reset). Why 512: README.md. */
  maxConnections: 512
})

/** Seconds a client turned away at the connection cap is asked to wait. */
const CONNECTION_RETRY_AFTER = 1
/** How long a connection answered and closed here is given to read its answer and hang up. */
const ANSWER_LINGER_MS = 2000
/** `req.httpVersion` of the versions the lab speaks. */
const SPOKEN_VERSIONS = Object.freeze(['1.0', '1.1'])

const checkServerInteger = integerOptions('server option ')

/** Frozen defaults with the given options over them; a TypeError for a bad value. */
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

/** The server for an app; `openConnections` counts the connections admitted and still open. */
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

  // No 'upgrade' listener, on purpose: an Upgrade request gets the route's own answer (README.md).

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
    // Nothing answered yet: closing the socket aborts the route as a client hang-up would (request.aborted).
    answerAndClose(socket, error)
  })
  return server
}

/**
 * Half-close after an answer that ends the connection while the client still sends its body, drain the
 * rest, then close (RFC 9112 section 9.6): a close at once could reset the answer away. README.md.
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

/** Remember the response to the latest request on a connection until it finishes. */
function trackResponse (answering, socket, res) {
  answering.set(socket, res)
  res.once('finish', function responseFinished () {
    if (answering.get(socket) === res) answering.delete(socket)
  })
}

/** The methods the app's routes answer (HEAD wherever GET is): what a CONNECT's `Allow` names. */
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

/** A LabError's JSON body and headers, as the app's error handler would send them. */
function errorAnswer (error, extra) {
  const body = JSON.stringify(error.toJSON())
  const type = 'application/json; charset=utf-8'
  const headers = { ...error.headers, 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), ...extra }
  return { body, headers }
}

/** Answer a LabError through a response the app never saw. */
function sendError (res, error) {
  const { body, headers } = errorAnswer(error)
  res.writeHead(error.status, headers)
  res.end(body)
}

/** A whole HTTP answer for a LabError, as raw bytes for a socket that no response object owns. */
function rawErrorAnswer (error) {
  const { body, headers } = errorAnswer(error, { Connection: 'close' })
  let head = `HTTP/1.1 ${error.status} ${http.STATUS_CODES[error.status]}\r\n`
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`
  return `${head}\r\n${body}`
}

/**
 * Write the answer on the raw socket and close it, reading and dropping what the client still sends for a
 * moment: closing with unread bytes resets the socket, and a reset can destroy the answer unread.
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
 * Admit at most `limit` connections; past it, a 503 on the raw socket (Node's own cap closes without a word).
 * HTTP's 'connection' listener is wrapped, so it also sees the sockets the supervisor hands the worker.
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

/** Answer 503 before the request is read, and close; past `limit` refusals in flight, a flood is just closed. */
function refuseConnection (socket, limit, refusing) {
  if (refusing.size >= limit) {
    socket.destroy()
    return
  }
  refusing.add(socket)
  socket.once('close', function forgetRefusal () { refusing.delete(socket) })
  answerAndClose(socket, tooManyConnections(limit, CONNECTION_RETRY_AFTER))
}
