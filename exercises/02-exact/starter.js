/**
 * Exercise 2, the starter: a streaming counter. It never holds the body:
 * each inflated chunk is searched for `{"id":` and forgotten. Memory stays
 * flat, bombs are refused, and on small documents it even looks right.
 *
 * Grade it, and look at the correctness lines:
 *   npm run grade -- exercises/02-exact/starter.js --quick
 * Then make it exact (exercises/02-exact/README.md).
 */
import { PassThrough, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import zlib from 'node:zlib'

const MiB = 1024 * 1024
const MAX_INFLATED = 256 * MiB
const MAX_RATIO = 100
const RATIO_AFTER = 1 * MiB

const RECORD_START = /\{"id":(\d+)/g

function httpError (status, message) {
  return Object.assign(new Error(message), { status })
}

class ChunkCounter extends Writable {
  constructor (gunzip) {
    super()
    this.gunzip = gunzip
    this.inflated = 0
    this.items = 0
    this.idSum = 0n
    this.tail = ''
  }

  _write (chunk, encoding, callback) {
    this.inflated += chunk.length
    if (this.inflated > MAX_INFLATED) return callback(httpError(413, 'too much JSON'))
    if (this.inflated > RATIO_AFTER && this.inflated / this.gunzip.bytesWritten > MAX_RATIO) return callback(httpError(413, 'a zip bomb'))
    const text = chunk.toString('utf8')
    for (const match of text.matchAll(RECORD_START)) {
      this.items++
      this.idSum += BigInt(match[1])
    }
    // remembered to check the end of the document
    this.tail = text.slice(-16)
    callback()
  }

  _final (callback) {
    if (!this.tail.trimEnd().endsWith(']}')) callback(httpError(400, 'the document does not end with ]}'))
    else callback()
  }
}

export default async function chunkCount (req, res) {
  const gunzip = zlib.createGunzip()
  const counter = new ChunkCounter(gunzip)
  // pipeline() would destroy the request on an error, and the socket with our answer:
  // the request feeds a PassThrough that pipeline may destroy instead
  const body = new PassThrough()
  req.pipe(body)
  req.on('error', function clientGone (err) { body.destroy(err) })
  try {
    await pipeline(body, gunzip, counter)
  } catch (err) {
    req.unpipe(body)
    req.resume()
    const status = err.status ?? (err.code?.startsWith('Z_') ? 400 : 500)
    if (!res.headersSent) res.status(status).json({ error: { status, message: err.message } })
    return
  }
  res.json({ items: counter.items, idSum: counter.idSum.toString() })
}
