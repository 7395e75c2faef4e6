/**
 * Exercise 3, a worked solution: the starter's counter, guarded.
 *
 * - A guard between gunzip and the counter counts inflated bytes on every
 *   chunk and fails the pipeline (413) past 256 MiB, or once a MiB has come
 *   out at a ratio above 100:1 (honest JSON gzips about 4.5:1, a zip bomb
 *   about 1000:1). Failing the pipeline destroys gunzip: nothing more is
 *   inflated.
 * - The counter refuses nesting deeper than 64 and a record larger than
 *   1 MiB, so a million nested arrays are refused before they are parsed.
 *
 * Grade it: npm run grade -- exercises/03-bomb-safe/solution.js --quick
 */
import { PassThrough, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import zlib from 'node:zlib'
import { RecordCounter } from './starter.js'

const MiB = 1024 * 1024
const MAX_INFLATED = 256 * MiB
const MAX_RATIO = 100
const RATIO_AFTER = 1 * MiB
const MAX_DEPTH = 64
const MAX_RECORD = 1 * MiB

function httpError (status, message) {
  return Object.assign(new Error(message), { status })
}

/** Counts what gunzip lets out, against what went in. */
class InflateGuard extends Transform {
  constructor (gunzip) {
    super()
    this.gunzip = gunzip
    this.inflated = 0
  }

  _transform (chunk, encoding, callback) {
    this.inflated += chunk.length
    if (this.inflated > MAX_INFLATED) return callback(httpError(413, `more than ${MAX_INFLATED} bytes inflated`))
    // gunzip.bytesWritten: the compressed bytes it has read so far
    const ratio = this.inflated / Math.max(1, this.gunzip.bytesWritten)
    if (this.inflated > RATIO_AFTER && ratio > MAX_RATIO) return callback(httpError(413, `compression ratio ${Math.round(ratio)}:1: a zip bomb`))
    callback(null, chunk)
  }
}

/** The starter's counter, with a depth and a record size it will not pass. */
class GuardedCounter extends RecordCounter {
  opened (b) {
    if (this.depth > MAX_DEPTH) throw httpError(413, `nested deeper than ${MAX_DEPTH}`)
    super.opened(b)
  }

  keep (part) {
    this.recordBytes = (this.recordBytes ?? 0) + part.length
    if (this.recordBytes > MAX_RECORD) throw httpError(413, `a record larger than ${MAX_RECORD} bytes`)
    super.keep(part)
  }

  count (bytes) {
    this.recordBytes = 0
    super.count(bytes)
  }
}

export default async function guardedCount (req, res) {
  const gunzip = zlib.createGunzip()
  const counter = new GuardedCounter()
  const body = new PassThrough()
  req.pipe(body)
  req.on('error', function clientGone (err) { body.destroy(err) })
  try {
    await pipeline(body, gunzip, new InflateGuard(gunzip), counter)
  } catch (err) {
    req.unpipe(body)
    req.resume()
    const status = err.status ?? (err.code?.startsWith('Z_') ? 400 : 500)
    if (!res.headersSent) res.status(status).json({ error: { status, message: err.message } })
    return
  }
  res.json({ items: counter.items, idSum: counter.idSum.toString() })
}
