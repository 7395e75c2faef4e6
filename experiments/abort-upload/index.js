/** The abort-upload experiment's registry entry: `pipe()` vs `pipeline()` on a client that aborts mid-upload (run.js runs it). */
import { badParameter } from '../../lib/errors/index.js'
import { choiceEntry, deepFreeze, integerEntry, sizeEntry, sweepEntry } from '../../lib/experiments/params.js'
import { normalizeWithinUploadLimit } from '../upload/server.js'

export { run, UPLOAD_STEPS } from './run.js'

export const name = 'abort-upload'
export const title = 'pipe() vs pipeline() on a client that aborts mid-upload'
export const description = 'Sends N uploads to POST /abort-upload/pipe (req.pipe(fs.createWriteStream(file))) and ' +
  'POST /abort-upload/pipeline (await pipeline(req, fs.createWriteStream(file))), each aborted by its client after part ' +
  'of the body, and counts on the server what each route leaves behind: file descriptors still open, half-written files ' +
  'and their bytes, and memory grown, right after and again after a GC and a wait. Everything left is closed and deleted at the end ' +
  'of each cell.'

const ROUTES = Object.freeze(['both', 'pipe', 'pipeline'])
const MAX_UPLOADS = 500
const MAX_BYTES = 64 * 1024 * 1024
/** Every upload of a cell reserves its whole body on disk at once: at most this much in all. */
const MAX_CELL_BYTES = 1024 * 1024 * 1024

/** The schema a dashboard builds its controls from (GET /experiments), and the bench its flags. */
export const params = deepFreeze([
  choiceEntry('route', {
    values: ROUTES,
    valueLabels: { both: 'Both: pipeline(), then pipe()', pipe: '/abort-upload/pipe (req.pipe)', pipeline: '/abort-upload/pipeline' },
    label: 'Route',
    help: 'pipe() leaves the file stream open when the request errors; pipeline() destroys both streams and the route removes the ' +
      'half-written file. "Both" runs pipeline() first.'
  }),
  integerEntry('uploads', {
    default: 100,
    max: MAX_UPLOADS,
    label: 'Aborted uploads (highest)',
    help: 'Uploads aborted in the last cell, at most 100 in flight at once. With the sweep on, 10, 50, 100 ... below it run first.'
  }),
  sweepEntry({
    steps: 'Sweep: 10, 50, 100, 200, 500 up to the highest',
    single: 'Only the highest',
    label: 'Uploads sweep',
    help: 'Leftovers that grow with the number of aborted uploads are a leak: sweep to see the line.'
  }),
  sizeEntry('bytes', {
    default: '1MB',
    max: MAX_BYTES,
    label: 'Upload size',
    help: 'The Content-Length each upload announces (random bytes, made by the client).'
  }),
  integerEntry('abortAt', {
    default: 50,
    min: 0,
    max: 99,
    label: 'Abort after (% of the body)',
    help: 'How much of the body each client sends before it destroys its socket.'
  }),
  integerEntry('waitSeconds', {
    default: 3,
    min: 0,
    max: 60,
    label: 'Wait before looking again (s)',
    help: 'After the first count, a garbage collection and this many seconds, then the descriptors are counted again: ' +
      'are they released later?'
  })
])

/** `upload.limit` caps `bytes`, the disk quota a cell's total. @throws {LabError} 400 parameter.invalid naming the field */
export function normalizeParams (raw, options) {
  const p = normalizeWithinUploadLimit(params, raw, options)
  const room = Math.min(MAX_CELL_BYTES, Math.floor((options?.diskQuota ?? MAX_CELL_BYTES * 2) / 2))
  if (p.uploads * p.bytes > room) {
    throw badParameter('params.bytes', p.bytes,
      `at most ${Math.floor(room / p.uploads)} bytes at ${p.uploads} uploads: each reserves its body on disk, a cell ${room} bytes in all`)
  }
  return Object.freeze(p)
}
