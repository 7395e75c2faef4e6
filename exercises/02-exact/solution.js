/**
 * Exercise 2, a worked solution: the starter's pipeline and limits, with an
 * exact counter. Searching each chunk for `{"id":` fails three ways: a
 * record split across two chunks is missed (or its id cut in two), text
 * inside strings and nested objects is counted, and JSON that is not JSON
 * is counted too. So the counter follows the JSON itself: whether it is
 * inside a string (and after a backslash), how deep it is, and which key
 * opened the array it is in. A record is a value of the top-level "items"
 * array: its bytes, carried across chunks as Buffers (never decoded one
 * chunk at a time: a character may be cut in two), go to JSON.parse whole.
 *
 * Grade it: npm run grade -- exercises/02-exact/solution.js --quick
 */
import { PassThrough, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import zlib from 'node:zlib'

const MiB = 1024 * 1024
const MAX_INFLATED = 256 * MiB
const MAX_RATIO = 100
const RATIO_AFTER = 1 * MiB
const MAX_DEPTH = 64
const MAX_RECORD = 1 * MiB

const QUOTE = 0x22
const BACKSLASH = 0x5C
const COLON = 0x3A
const OPEN_BRACE = 0x7B
const CLOSE_BRACE = 0x7D
const OPEN_BRACKET = 0x5B
const CLOSE_BRACKET = 0x5D
const ITEMS = Buffer.from('items')

function httpError (status, message) {
  return Object.assign(new Error(message), { status })
}

class ExactCounter extends Writable {
  constructor (gunzip) {
    super()
    this.gunzip = gunzip
    this.inflated = 0
    this.items = 0
    this.idSum = 0n
    // where we are in the JSON
    this.depth = 0
    this.inString = false
    this.escaped = false
    // the top level's latest string (a key when a colon follows: only "items" matters, so 16 bytes will do)
    this.topString = []
    this.itemsKey = false
    this.itemsOpen = false
    this.itemsSeen = false
    // the record being read: its parts so far (Buffers), or null between records
    this.parts = null
    this.partBytes = 0
  }

  _write (chunk, encoding, callback) {
    this.inflated += chunk.length
    if (this.inflated > MAX_INFLATED) return callback(httpError(413, 'too much JSON'))
    if (this.inflated > RATIO_AFTER && this.inflated / this.gunzip.bytesWritten > MAX_RATIO) return callback(httpError(413, 'a zip bomb'))
    try {
      this.read(chunk)
      callback()
    } catch (err) {
      callback(err)
    }
  }

  read (chunk) {
    let from = this.parts === null ? -1 : 0
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false
        } else if (b === BACKSLASH) {
          this.escaped = true
        } else if (b === QUOTE) {
          this.inString = false
        } else if (this.depth === 1 && this.topString.length < 16) {
          this.topString.push(b)
        }
        continue
      }
      switch (b) {
        case QUOTE:
          this.inString = true
          if (this.depth === 1) this.topString = []
          break
        case COLON:
          if (this.depth === 1) this.itemsKey = ITEMS.equals(Buffer.from(this.topString))
          break
        case OPEN_BRACE:
        case OPEN_BRACKET:
          this.depth++
          if (this.depth > MAX_DEPTH) throw httpError(413, `nested deeper than ${MAX_DEPTH}`)
          if (this.depth === 2 && b === OPEN_BRACKET && this.itemsKey) {
            this.itemsOpen = true
          } else if (this.depth === 3 && this.itemsOpen) {
            this.parts = []
            this.partBytes = 0
            from = i
          }
          break
        case CLOSE_BRACE:
        case CLOSE_BRACKET:
          if (this.depth === 3 && this.parts !== null) {
            this.parts.push(chunk.subarray(from, i + 1))
            this.count(this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts))
            this.parts = null
          } else if (this.depth === 2 && this.itemsOpen) {
            this.itemsOpen = false
            this.itemsSeen = true
          }
          this.depth--
          if (this.depth < 0) throw httpError(400, 'a bracket closes that never opened')
          break
      }
    }
    if (this.parts !== null) {
      const rest = chunk.subarray(from)
      this.partBytes += rest.length
      if (this.partBytes > MAX_RECORD) throw httpError(413, `a record larger than ${MAX_RECORD} bytes`)
      this.parts.push(rest)
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
    else if (!this.itemsSeen) callback(httpError(400, 'no top-level "items" array'))
    else callback()
  }
}

export default async function exactCount (req, res) {
  const gunzip = zlib.createGunzip()
  const counter = new ExactCounter(gunzip)
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
