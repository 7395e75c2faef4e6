/**
 * The HTTP server around the app, with the timeouts and the answers to
 * requests too broken to reach Express (oversized headers, slow headers,
 * garbage) given as JSON like every other error.
 */
import http from 'node:http'

export const SERVER_DEFAULTS = Object.freeze({
  /** A client must finish sending its headers within this. */
  headersTimeout: 10_000,
  /** Whole request, body included: a 500 MB upload on a slow link needs minutes. */
  requestTimeout: 15 * 60_000,
  keepAliveTimeout: 5_000,
  /** How often Node checks the two timeouts above. */
  connectionsCheckingInterval: 1_000,
  /** Largest request head (Node's default); past it, 431. */
  maxHeaderSize: 16 * 1024
})

const CLIENT_ERRORS = Object.freeze({
  HPE_HEADER_OVERFLOW: [431, 'headers.too.large', 'request headers are larger than the server accepts'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'request.timeout', 'the request took too long to arrive'],
  HPE_HEADERS_TIMEOUT: [408, 'request.timeout', 'the request headers took too long to arrive']
})

/**
 * Build the server for an app.
 * @param {import('express').Express} app
 * @param {Partial<typeof SERVER_DEFAULTS>} [options]
 */
export function createLabServer (app, options = {}) {
  const settings = { ...SERVER_DEFAULTS, ...options }
  const server = http.createServer({
    maxHeaderSize: settings.maxHeaderSize,
    connectionsCheckingInterval: settings.connectionsCheckingInterval,
    headersTimeout: settings.headersTimeout,
    requestTimeout: settings.requestTimeout
  }, app)
  server.keepAliveTimeout = settings.keepAliveTimeout
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
