/**
 * The same endpoint as buffering.js, streamed: gunzip and @streamparser/json a chunk at a time (`pipeline`),
 * each element of "items" counted and dropped, the limits checked on every chunk, so memory stays flat
 * whatever the body's size and however many are in flight. It passes every check of the grader's card
 * (docs/lessons/grade.md). It refuses, as JSON: 413 past 512 MiB inflated, past 100:1 inflated to compressed
 * once a MiB came out, or nesting past 64; 400 for broken or cut-short gzip or JSON; 408 for a 10 s stall.
 *
 *   PORT=3101 node examples/services/streaming.js
 *   npm run grade -- --url http://127.0.0.1:3101/ingest --start "node examples/services/streaming.js"
 */
import http from 'node:http'
import path from 'node:path'
import { PassThrough, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import zlib from 'node:zlib'
import { Tokenizer, TokenParser, TokenType } from '@streamparser/json'

const port = Number(process.env.PORT ?? 3101)
const MiB = 1024 * 1024
const MAX_INFLATED = 512 * MiB
const MAX_RATIO = 100
const RATIO_AFTER = 1 * MiB
const MAX_DEPTH = 64
const IDLE_MS = 10_000
const DRAIN_MS = 10_000

export function refusal (status, message) {
  return Object.assign(new Error(message), { status })
}

/**
 * Counts the records of the top-level "items" array, fed inflated JSON:
 * the library's Tokenizer turns bytes into tokens (a token or a character a
 * chunk cuts in two is carried over), its TokenParser hands over each
 * record and drops it; between the two, each token is watched for depth.
 * `maxInflated`: the most inflated bytes it takes (default 512 MiB).
 */
export class RecordCounter extends Writable {
  constructor (gunzip, { maxInflated = MAX_INFLATED } = {}) {
    super()
    this.gunzip = gunzip
    this.maxInflated = maxInflated
    this.inflated = 0
    this.depth = 0
    this.items = 0
    this.idSum = 0n
    this.tokenizer = new Tokenizer()
    const parser = new TokenParser({ paths: ['$.items.*'], keepStack: false })
    const counter = this
    this.tokenizer.onToken = function watchThenParse (info) {
      counter.watchDepth(info.token)
      parser.write(info)
    }
    parser.onValue = function countRecord ({ value }) {
      counter.items++
      if (Number.isSafeInteger(value?.id)) counter.idSum += BigInt(value.id)
    }
    this.parser = parser
  }

  _write (chunk, encoding, done) {
    try {
      this.inflated += chunk.length
      const ratio = this.inflated / Math.max(1, this.gunzip.bytesWritten)
      if (this.inflated > this.maxInflated) throw refusal(413, `more than ${this.maxInflated / MiB} MiB inflated`)
      if (this.inflated > RATIO_AFTER && ratio > MAX_RATIO) throw refusal(413, `inflates ${Math.round(ratio)}:1, a zip bomb`)
      this.tokenizer.write(chunk)
      done()
    } catch (err) {
      done(err.status ? err : refusal(400, `not JSON: ${err.message}`))
    }
  }

  watchDepth (token) {
    if (token === TokenType.LEFT_BRACE || token === TokenType.LEFT_BRACKET) {
      if (++this.depth > MAX_DEPTH) throw refusal(413, `nested deeper than ${MAX_DEPTH}`)
    } else if (token === TokenType.RIGHT_BRACE || token === TokenType.RIGHT_BRACKET) {
      this.depth--
    }
  }

  _final (done) {
    try {
      // each throws when the JSON stops inside a value: the body ended early
      this.tokenizer.end()
      if (!this.parser.isEnded) this.parser.end()
      done()
    } catch (err) {
      done(refusal(400, `not JSON: ${err.message}`))
    }
  }
}

async function ingest (req, res) {
  const gunzip = zlib.createGunzip()
  const counter = new RecordCounter(gunzip)
  // pipeline() destroys every stream of the chain when one fails; destroying the
  // request would destroy its socket and our answer with it, so the request
  // feeds a PassThrough that pipeline may destroy
  const body = new PassThrough()
  req.pipe(body)
  req.on('error', function clientGone (err) { body.destroy(err) })
  const stall = idleTimer(req, function stalled () { body.destroy(refusal(408, `no byte of the body for ${IDLE_MS / 1000} s`)) })
  try {
    await pipeline(body, gunzip, counter)
  } catch (err) {
    const status = err.status ?? (err.code?.startsWith('Z_') ? 400 : 500)
    return refuseAfterBody(req, res, body, status, err.message)
  } finally {
    stall.stop()
  }
  answer(res, 200, { items: counter.items, idSum: counter.idSum.toString() })
}

/**
 * A refusal while the client may still be sending. Were the socket closed
 * now, the client's next bytes would meet a reset, and a reset can wipe the
 * answer before the client reads it (EPIPE instead of the 413). So the rest
 * of the body is read and dropped (it is compressed: a 10 GB bomb is 10 MB),
 * and the answer goes when it has ended, or after DRAIN_MS at most.
 */
function refuseAfterBody (req, res, body, status, message) {
  req.unpipe(body)
  req.resume()
  function refuse () {
    clearTimeout(timer)
    answer(res, status, { error: { status, message } })
  }
  const timer = setTimeout(refuse, DRAIN_MS)
  if (req.complete) refuse()
  else req.once('end', refuse)
  req.once('close', function clientGone () { clearTimeout(timer) })
}

/** Calls `onIdle` when no chunk of the body arrived for IDLE_MS. */
function idleTimer (req, onIdle) {
  const timer = setTimeout(onIdle, IDLE_MS)
  req.on('data', function moving () { timer.refresh() })
  return { stop: function stop () { clearTimeout(timer) } }
}

function answer (res, status, body) {
  if (res.headersSent || res.destroyed) return
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}

// run as a program it serves; imported (a spec's service reuses RecordCounter) it does not
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const server = http.createServer(function route (req, res) {
    if (req.method !== 'POST' || req.url !== '/ingest') return answer(res, 404, { error: { status: 404, message: 'POST /ingest' } })
    ingest(req, res)
  })
  server.listen(port, '127.0.0.1', function listening () {
    console.log(`streaming ingest at http://127.0.0.1:${port}/ingest (pid ${process.pid})`)
  })
}
