/**
 * The one Express error handler, registered last: every error reaches the
 * client as the lab's JSON (lib/errors/index.js), with its status and headers. A
 * body refused before it was read is read and dropped, within bounds
 * (discardRestOfBody), so that the answer gets through. The lab's app uses
 * it, and so does the grader's student process, which answers errors as the
 * lab does.
 */
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
