/**
 * Whether a request's client hung up before its body was read, asked by
 * whoever is about to wait for the body: admission (lib/ingest/admit.js),
 * the read (lib/ingest/read.js) and /express-json's watch. Its 'close' may
 * have passed while the request waited, so this asks the request's state,
 * not its events. A small body arrives whole with its headers (`complete`),
 * but when the socket closes before it is read, Node destroys the request
 * and drops the body: no 'data' and no 'end' will come, and a reader waiting
 * for them would hold its place for good.
 * @param {import('node:http').IncomingMessage} req
 * @returns {boolean}
 */
export function clientGone (req) {
  if (req.readableEnded) return false
  if (req.destroyed) return true
  if (req.complete) return false
  return req.socket === null || req.socket?.destroyed === true
}
