/**
 * Exercise 1, a second worked solution: the same answer as the starter,
 * streamed through a JSON library instead of a scanner of our own.
 *
 * The body goes through gunzip and @streamparser/json a chunk at a time, as
 * its README wires the two halves of the library: a Tokenizer turns bytes
 * into tokens (it carries a token, or a character, that a chunk cuts in two
 * over to the next chunk), a TokenParser builds values from those tokens and
 * hands over each element of the top-level "items" array
 * (`paths: ['$.items.*']`), then drops it (`keepStack: false`). Memory: the
 * record being built, the stack of arrays and objects around it, and two
 * totals, whatever the size.
 *
 * The library parses whatever it is given, so the limits are ours, and the
 * tokens between the two halves are where we watch: each `[` or `{` is one
 * level deeper (a million nested arrays would otherwise become a million
 * arrays), and the key before the array at depth 1 tells whether the
 * top-level "items" is an array at all (an empty one emits no value).
 *
 * What this does not bound: one huge record. The library gathers a string or
 * a record whole, so one 200 MB string in a record costs 200 MB and more; the
 * lab's own route on this library counts the bytes of the value being read
 * (lib/ingest/token-guard.js).
 *
 * Grade it: npm run grade -- exercises/01-stream/solution-library.js --quick
 */
import { PassThrough, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import zlib from 'node:zlib'
import { Tokenizer, TokenParser, TokenType } from '@streamparser/json'

const MiB = 1024 * 1024
/** More than any honest body we take (the grader's largest is 200 MB). */
const MAX_INFLATED = 256 * MiB
/** Honest JSON gzips about 4.5:1; a zip bomb about 1000:1. Judged once a MiB has come out. */
const MAX_RATIO = 100
const RATIO_AFTER = 1 * MiB
/** Our records nest two or three levels; a million nested arrays is an attack. */
const MAX_DEPTH = 64

function httpError (status, message) {
  return Object.assign(new Error(message), { status })
}

/** Counts the records of the top-level "items" array, fed inflated JSON chunk by chunk. */
class LibraryCounter extends Writable {
  constructor (gunzip) {
    super()
    this.gunzip = gunzip
    this.inflated = 0
    this.items = 0
    this.idSum = 0n
    this.depth = 0
    this.tokens = 0
    this.lastKey = null // the latest string at depth 1: the key, when an array follows it
    this.sawItems = false
    this.tokenizer = new Tokenizer()
    this.parser = new TokenParser({ paths: ['$.items.*'], keepStack: false })
    const counter = this
    // the README's wiring (tokenizer.onToken feeds parser.write), with our watch in between
    this.tokenizer.onToken = function watchThenParse (info) {
      counter.watch(info)
      counter.parser.write(info)
    }
    this.parser.onValue = function countRecord ({ value }) {
      counter.count(value)
    }
  }

  _write (chunk, encoding, callback) {
    try {
      this.inflated += chunk.length
      this.checkLimits()
      this.tokenizer.write(chunk)
      callback()
    } catch (err) {
      callback(asHttpError(err))
    }
  }

  checkLimits () {
    if (this.inflated > MAX_INFLATED) throw httpError(413, `more than ${MAX_INFLATED} bytes inflated`)
    const ratio = this.inflated / Math.max(1, this.gunzip.bytesWritten)
    if (this.inflated > RATIO_AFTER && ratio > MAX_RATIO) throw httpError(413, `compression ratio ${Math.round(ratio)}:1 looks like a zip bomb`)
  }

  /** One token, before the parser sees it: the nesting depth, and which key at depth 1 opens an array. */
  watch ({ token, value }) {
    if (this.tokens++ === 0 && token !== TokenType.LEFT_BRACE) throw httpError(400, 'expected {"items":[...]}')
    if (token === TokenType.RIGHT_BRACE || token === TokenType.RIGHT_BRACKET) {
      this.depth--
    } else if (token === TokenType.LEFT_BRACE || token === TokenType.LEFT_BRACKET) {
      // in the root object an array's key comes just before it, so the last string there is its key
      if (this.depth === 1 && token === TokenType.LEFT_BRACKET && this.lastKey === 'items') this.sawItems = true
      this.depth++
      if (this.depth > MAX_DEPTH) throw httpError(413, `nested deeper than ${MAX_DEPTH}`)
    } else if (token === TokenType.STRING && this.depth === 1) {
      this.lastKey = value
    }
  }

  count (record) {
    this.items++
    if (record !== null && typeof record === 'object' && Number.isSafeInteger(record.id)) this.idSum += BigInt(record.id)
  }

  _final (callback) {
    try {
      // each throws when the JSON stops inside a token or a value: the body ended early
      this.tokenizer.end()
      if (!this.parser.isEnded) this.parser.end()
      if (!this.sawItems) throw httpError(400, 'no top-level "items" array')
      callback()
    } catch (err) {
      callback(asHttpError(err))
    }
  }
}

/** What the library throws is about the body (bad JSON, JSON that ends early): a 400. Our own refusals keep their status. */
function asHttpError (err) {
  return err.status ? err : httpError(400, `not JSON: ${err.message}`)
}

export default async function libraryCount (req, res) {
  const gunzip = zlib.createGunzip()
  const counter = new LibraryCounter(gunzip)
  // pipeline() destroys every stream when one fails, and destroying the request
  // destroys its socket, and our 4xx with it. So the request feeds a PassThrough
  // that pipeline may destroy; a client that hangs up fails it too.
  const body = new PassThrough()
  req.pipe(body)
  req.on('error', function clientGone (err) { body.destroy(err) })
  try {
    await pipeline(body, gunzip, counter)
  } catch (err) {
    // read and drop the rest of the body, so the answer reaches a client still sending
    // (when the client hung up instead, there is nobody to answer and this does nothing)
    req.unpipe(body)
    req.resume()
    const status = err.status ?? (err.code?.startsWith('Z_') ? 400 : 500)
    if (!res.headersSent) res.status(status).json({ error: { status, message: err.message } })
    return
  }
  res.json({ items: counter.items, idSum: counter.idSum.toString() })
}
