/**
 * Whether a request's client hung up before its body was read, asked by whoever is about to wait for
 * the body (admission, the read, /express-json's watch). Its 'close' may have passed while it waited,
 * so this asks the request's state: when the socket closes before a body that arrived whole is read,
 * Node drops the body, and a reader waiting for 'data' or 'end' would hold its place for good.
 */
export function clientGone (req) {
  if (req.readableEnded) return false
  if (req.destroyed) return true
  if (req.complete) return false
  return req.socket === null || req.socket?.destroyed === true
}
