/**
 * Exercise 1, a worked solution: the same answer as the starter, streamed.
 *
 * The body goes through gunzip and a small scanner a chunk at a time. The
 * scanner follows just enough JSON (strings, escapes, nesting) to see where
 * each record of the top-level "items" array starts and ends; it keeps the
 * bytes of the record being read and nothing else, and hands each whole
 * record to JSON.parse. Memory: one record and two totals, whatever the size.
 *
 * Grade it: npm run grade -- exercises/01-stream/solution-stream.js --quick
 */
import { PassThrough, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import zlib from 'node:zlib'

const MiB = 1024 * 1024
/** More than any honest body we take (the grader's largest is 200 MB). */
const MAX_INFLATED = 256 * MiB
/** Honest JSON gzips about 4.5:1; a zip bomb about 1000:1. Judged once a MiB has come out. */
const MAX_RATIO = 100
const RATIO_AFTER = 1 * MiB
/** Our records nest two or three levels; a million nested arrays is an attack. */
const MAX_DEPTH = 64
const MAX_RECORD = 1 * MiB

const QUOTE = 0x22
const BACKSLASH = 0x5C
const COLON = 0x3A
const OPEN_BRACE = 0x7B
const CLOSE_BRACE = 0x7D
const OPEN_BRACKET = 0x5B
const CLOSE_BRACKET = 0x5D

function httpError (status, message) {
  return Object.assign(new Error(message), { status })
}

/** Finds the records of the top-level "items" array in JSON bytes, chunk by chunk. */
class RecordScanner extends Writable {
  constructor (gunzip) {
    super()
    this.gunzip = gunzip
    this.inflated = 0
    this.items = 0
    this.idSum = 0n
    this.depth = 0
    this.inString = false
    this.escaped = false
    this.key = [] // the bytes of the latest string at depth 1 (a key, if a colon follows)
    this.lastKey = ''
    this.inItems = false
    this.sawItems = false
    this.record = null // the parts of the record being read, across chunks
    this.recordBytes = 0
  }

  _write (chunk, encoding, callback) {
    try {
      this.inflated += chunk.length
      this.checkLimits()
      this.scan(chunk)
      callback()
    } catch (err) {
      callback(err)
    }
  }

  checkLimits () {
    if (this.inflated > MAX_INFLATED) throw httpError(413, `more than ${MAX_INFLATED} bytes inflated`)
    const ratio = this.inflated / Math.max(1, this.gunzip.bytesWritten)
    if (this.inflated > RATIO_AFTER && ratio > MAX_RATIO) throw httpError(413, `compression ratio ${Math.round(ratio)}:1 looks like a zip bomb`)
  }

  scan (chunk) {
    let start = this.record === null ? -1 : 0
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]
      if (this.inString) {
        if (this.escaped) this.escaped = false
        else if (b === BACKSLASH) this.escaped = true
        else if (b === QUOTE) this.inString = false
        else if (this.depth === 1 && this.key.length < 16) this.key.push(b)
        continue
      }
      if (b === QUOTE) {
        this.inString = true
        if (this.depth === 1) this.key = []
      } else if (b === COLON && this.depth === 1) {
        this.lastKey = Buffer.from(this.key).toString()
      } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
        this.depth++
        if (this.depth > MAX_DEPTH) throw httpError(413, `nested deeper than ${MAX_DEPTH}`)
        if (this.depth === 2 && b === OPEN_BRACKET && this.lastKey === 'items') this.inItems = true
        else if (this.depth === 3 && this.inItems) {
          this.record = []
          this.recordBytes = 0
          start = i
        }
      } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
        if (this.depth === 3 && this.record !== null) {
          this.record.push(chunk.subarray(start, i + 1))
          this.count(Buffer.concat(this.record))
          this.record = null
          start = -1
        } else if (this.depth === 2 && this.inItems) {
          this.inItems = false
          this.sawItems = true
        }
        this.depth--
        if (this.depth < 0) throw httpError(400, 'a bracket closes that never opened')
      }
    }
    // the record goes on in the next chunk: keep its bytes so far
    if (this.record !== null) {
      const rest = chunk.subarray(start)
      this.recordBytes += rest.length
      if (this.recordBytes > MAX_RECORD) throw httpError(413, `a record larger than ${MAX_RECORD} bytes`)
      this.record.push(rest)
    }
  }

  count (bytes) {
    let record
    try {
      record = JSON.parse(bytes.toString('utf8'))
    } catch (err) {
      throw httpError(400, `record ${this.items + 1} is not JSON: ${err.message}`)
    }
    this.items++
    if (record !== null && typeof record === 'object' && Number.isSafeInteger(record.id)) this.idSum += BigInt(record.id)
  }

  _final (callback) {
    if (this.depth !== 0 || this.inString) callback(httpError(400, 'the JSON ends early'))
    else if (!this.sawItems) callback(httpError(400, 'no top-level "items" array'))
    else callback()
  }
}

export default async function streamedCount (req, res) {
  const gunzip = zlib.createGunzip()
  const scanner = new RecordScanner(gunzip)
  // pipeline() destroys every stream when one fails, and destroying the request
  // destroys its socket, and our 4xx with it. So the request feeds a PassThrough
  // that pipeline may destroy; a client that hangs up fails it too.
  const body = new PassThrough()
  req.pipe(body)
  req.on('error', function clientGone (err) { body.destroy(err) })
  try {
    await pipeline(body, gunzip, scanner)
  } catch (err) {
    // read and drop the rest of the body, so the answer reaches a client still sending
    // (when the client hung up instead, there is nobody to answer and this does nothing)
    req.unpipe(body)
    req.resume()
    const status = err.status ?? (err.code?.startsWith('Z_') ? 400 : 500)
    if (!res.headersSent) res.status(status).json({ error: { status, message: err.message } })
    return
  }
  res.json({ items: scanner.items, idSum: scanner.idSum.toString() })
}
