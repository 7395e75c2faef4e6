/**
 * Exercise 3, the starter: a streaming, exact counter with no limits. It
 * holds one record at a time and answers every honest body right. It also
 * inflates whatever it is sent, for as long as it is sent, and reads a
 * "record" however deep and however large it is.
 *
 * Grade it, and look at the safety lines:
 *   npm run grade -- exercises/03-bomb-safe/starter.js --quick
 * Then make it bomb-safe (exercises/03-bomb-safe/README.md).
 */
import { PassThrough, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import zlib from 'node:zlib'

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

/** The records of the top-level "items" array, each parsed whole; nothing else is kept. */
export class RecordCounter extends Writable {
  constructor () {
    super()
    this.items = 0
    this.idSum = 0n
    this.depth = 0
    this.inString = false
    this.escaped = false
    this.key = []
    this.lastKey = ''
    this.inItems = false
    this.sawItems = false
    this.record = null
  }

  _write (chunk, encoding, callback) {
    try {
      this.scan(chunk)
      callback()
    } catch (err) {
      callback(err)
    }
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
        this.opened(b)
        if (this.depth === 3 && this.inItems) {
          this.record = []
          start = i
        }
      } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
        if (this.depth === 3 && this.record !== null) {
          this.record.push(chunk.subarray(start, i + 1))
          this.count(Buffer.concat(this.record))
          this.record = null
        } else if (this.depth === 2 && this.inItems) {
          this.inItems = false
          this.sawItems = true
        }
        this.depth--
        if (this.depth < 0) throw httpError(400, 'a bracket closes that never opened')
      }
    }
    if (this.record !== null) this.keep(chunk.subarray(start))
  }

  /** A bracket opened: is it the items array? */
  opened (b) {
    if (this.depth === 2 && b === OPEN_BRACKET && this.lastKey === 'items') this.inItems = true
  }

  /** The record goes on in the next chunk: keep its bytes so far. */
  keep (part) {
    this.record.push(part)
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

export default async function unguardedCount (req, res) {
  const counter = new RecordCounter()
  // pipeline() would destroy the request on an error, and the socket with our answer:
  // the request feeds a PassThrough that pipeline may destroy instead
  const body = new PassThrough()
  req.pipe(body)
  req.on('error', function clientGone (err) { body.destroy(err) })
  try {
    await pipeline(body, zlib.createGunzip(), counter)
  } catch (err) {
    req.unpipe(body)
    req.resume()
    const status = err.status ?? (err.code?.startsWith('Z_') ? 400 : 500)
    if (!res.headersSent) res.status(status).json({ error: { status, message: err.message } })
    return
  }
  res.json({ items: counter.items, idSum: counter.idSum.toString() })
}
