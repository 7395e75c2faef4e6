// The one Express error handler, registered last: every error reaches the client as the lab's JSON, and a
// body refused unread is drained within bounds so the answer gets through. The grader's student process uses it too.
import { toLabError } from '../errors/index.js'
import { discardRestOfBody } from '../ingest/read.js'

export function sendError (err, req, res, next) {
  const labError = toLabError(err)
  if (labError.status === 500) console.error(err)
  if (res.headersSent) {
    res.destroy(err)
    return
  }
  res.status(labError.status).set(labError.headers ?? {}).json(labError.toJSON())
  discardRestOfBody(req)
}
