/**
 * POST /express-json: what most Express apps run, `express.json()` (body-parser 2), given the lab's
 * inflated limit. raw-body keeps every inflated chunk up to `limit`, joins them, decodes one string
 * and `JSON.parse`s it whole: a zip bomb stops at the limit, but up to it everything is held.
 * The middleware is left as it is; around it the lab adds only what it asks of every route that
 * buffers (docs/limits.md): admission of what raw-body holds and JSON.parse builds (projected in
 * the `verify` hook, which may throw to refuse), the compressed limit body-parser lacks for an
 * encoded body, the deadline and a vanished client (nothing would end body-parser's decoder).
 */
import { createHash } from 'node:crypto'
import express from 'express'
import { guardBody } from '../limits/body-deadline.js'
import { EXPRESS_JSON_FORMATS, negotiateJson } from './negotiate.js'
import { admitWithinBudget } from './admit.js'
import { clientGone } from './client-gone.js'
import { codecByName } from './codecs.js'
import { decoderBytes, layerWindow } from './decoder-memory.js'
import { detectFormat, DETECT_BYTES } from '../json/records.js'
import { ParseCostMeter } from '../json/parse-cost.js'
import { createTally, finishTally, locateJsonError, recordsOf, tallyRecords } from '../parse/tally.js'
import {
  LabError, charsetUnsupported, compressedTooLarge, expressJsonEncodingUnsupported,
  fromZlibError, encodingInvalid, gzipInvalid, inflatedTooLarge, jsonInvalid, requestAborted, toLabError
} from '../errors/index.js'

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf])
const EXPRESS_JSON_ENCODINGS = ['gzip', 'deflate', 'br', 'identity']
const NDJSON_HINT = ' (this looks like NDJSON: express.json parses one JSON document; send NDJSON to /bad or /good)'

/** POST /express-json, with one `express.json()` for the app, its place a reservation in the memory budget. */
export function expressJsonRoute (opts) {
  const reads = new WeakMap() // each request's read in progress, for body-parser's `verify`
  const parseJson = express.json({
    inflate: true,
    limit: opts.limits.inflated,
    type: 'application/json',
    // the lab's answer for a document that is not an object with items, or an array, is its own (json.items.missing)
    strict: false,
    verify: function verifyInflated (req, res, inflated) {
      reads.get(req)?.verify(inflated)
    }
  })

  /** Stages 3 to 7: express.json reads, inflates, decodes and parses in one call, watched from outside. */
  async function ingestExpressJson (req, plan, { reservation, holding }, { opts }) {
    const read = new ExpressJsonRead(req, plan, opts.limits, reservation)
    read.watch(holding)
    reads.set(req, read)
    let doc
    try {
      doc = await read.run(parseJson)
    } finally {
      reads.delete(req)
    }
    // the document, not body-parser's req.body, is what stays alive until it is tallied
    req.body = undefined
    const tally = tallyRecords(createTally(), recordsOf(doc, read.format))
    return {
      format: read.format,
      tally: finishTally(tally),
      inflatedBytes: read.inflatedBytes,
      compressedBytes: read.compressedBytes,
      sha256: read.sha256
    }
  }

  return Object.freeze({
    name: 'express-json',
    formats: EXPRESS_JSON_FORMATS,
    negotiate: negotiateJson,
    admit: admitWithinBudget,
    // raw-body keeps the inflated chunks and then their join: twice the body. JSON inflates to at least its
    // encoded size, so twice Content-Length is reserved at admission, the rest as it inflates.
    holds: 'this body (inflated)',
    ingest: ingestExpressJson
  })
}

/**
 * One request read by express.json, watched from outside: the compressed bytes, the inflated bytes
 * out of body-parser's decoder, the deadline and the client. The first refusal settles it at once
 * and stops body-parser by an error on the stream it reads; its own late callback changes nothing.
 */
class ExpressJsonRead {
  constructor (req, plan, limits, reservation) {
    this.req = req
    this.plan = plan
    this.limits = limits
    this.reservation = reservation
    this.compressedBytes = 0
    this.inflatedBytes = 0
    this.holding = null
    this.inflater = null // body-parser's decoder, once it pipes the request into it
    // the window body-parser's decoder was fitted for (-1: not yet), and what is reserved for it
    this.window = -1
    this.decoderBytes = 0
    this.inflated = null
    this.verified = false
    this.format = null
    this.sha256 = null
    this.settled = false
    // a refusal of the lab's (budget, limit, deadline, client gone) wins over body-parser's words
    this.refusal = null
    this.releaseDeadline = null
    this.resolve = null
    this.reject = null
    const read = this
    this.onCompressed = function countCompressed (chunk) { read.countCompressed(chunk) }
    this.onInflated = function countInflated (chunk) { read.reserveInflated(read.inflatedBytes + chunk.length) }
    this.onClose = function requestClosed () {
      if (!read.req.complete) read.fail(requestAborted(read.compressedBytes))
    }
  }

  /** Tell the holding (lib/metrics/held.js) what can be read from outside body-parser. */
  watch (holding) {
    const read = this
    this.holding = holding
    holding.watch('read', function heldReading () {
      return (read.req.readableLength ?? 0) + (read.inflater?.writableLength ?? 0)
    })
    holding.watch('inflate', function heldInflating () {
      return read.inflatedBytes + (read.inflater?.readableLength ?? 0)
    })
    holding.unread.push('the string and the document body-parser builds from the inflated Buffer')
  }

  /** Hand the request to express.json and wait for the document. */
  run (parseJson) {
    const read = this
    const req = this.req
    return new Promise(function readWithExpressJson (resolve, reject) {
      read.resolve = resolve
      read.reject = reject
      req.on('data', read.onCompressed)
      req.on('close', read.onClose)
      const { bodyIdleMs: idleMs, minBodyRate: minRate, bodyRateWindowMs: windowMs } = read.limits
      read.releaseDeadline = guardBody(req, { idleMs, minRate, windowMs }, function bodyDeadlinePassed (err) { read.fail(err) })
      // body-parser pipes the request into the Gunzip it makes, synchronously, before it reads:
      // this request's own `pipe` shows it to us, and is gone again once express.json has started
      req.pipe = function pipeIntoInflater (destination, options) {
        read.inflater = destination
        read.fitDecoder(destination)
        destination.on('data', read.onInflated)
        return Object.getPrototypeOf(req).pipe.call(req, destination, options)
      }
      try {
        parseJson(req, req.res, function parsed (err) { read.parsed(err) })
      } finally {
        delete req.pipe
      }
      // a client gone before its request got here sends no more 'close'
      if (clientGone(req)) read.fail(requestAborted(read.compressedBytes))
    })
  }

  /**
   * body-parser makes its decoder with zlib's defaults (a zstd window up to 128 MiB): what it will
   * hold is read from the bytes on their way to it and reserved first, and a zstd frame is held to
   * every route's window rule (zstd-frame.js).
   */
  fitDecoder (decoder) {
    const read = this
    const codec = codecByName(this.plan.encoding)
    let frames = codec.Frames === null ? null : new codec.Frames()
    const write = decoder.write
    decoder.write = function fitThenWrite (chunk, ...rest) {
      if (read.settled || chunk.length === 0) return write.call(this, chunk, ...rest)
      let window = read.window
      if (frames !== null) {
        const { error } = frames.cut(chunk)
        if (error?.type === 'encoding.invalid') {
          read.fail(error)
          return false
        }
        window = frames.window
        if (error !== null) frames = null
      } else if (read.window === -1) {
        window = layerWindow(codec, chunk[0])
      }
      if (window > read.window) {
        read.window = window
        const need = decoderBytes(codec, window)
        const refusal = read.reservation.tryGrow(need - read.decoderBytes, 'its decoder\'s window')
        if (refusal) {
          read.fail(refusal)
          return false
        }
        read.decoderBytes = need
      }
      return write.call(this, chunk, ...rest)
    }
  }

  countCompressed (chunk) {
    this.compressedBytes += chunk.length
    if (this.compressedBytes > this.limits.compressed) {
      this.fail(compressedTooLarge(this.limits.compressed, this.compressedBytes))
      return
    }
    // an identity body is its own inflated bytes, read by raw-body straight off the request
    if (this.plan.encoding === null) this.reserveInflated(this.compressedBytes)
  }

  /** raw-body keeps each chunk, then joins them: twice what inflated so far, reserved chunk by chunk. */
  reserveInflated (total) {
    this.inflatedBytes = total
    const want = 2 * total + this.decoderBytes - this.reservation.bytes
    if (want <= 0 || this.settled) return
    const refusal = this.reservation.tryGrow(want, 'this body (inflated)')
    if (refusal) this.fail(refusal)
  }

  /**
   * body-parser's `verify`: the inflated body whole, before it is decoded. The chunks are garbage now;
   * reserved instead are the string and what JSON.parse will build (parse-cost.js, as /bad projects
   * it). Throwing refuses the body.
   */
  verify (inflated) {
    if (this.settled) throw this.refusal ?? requestAborted(this.compressedBytes)
    try {
      this.verified = true
      this.inflated = inflated
      this.inflatedBytes = inflated.length
      this.holding?.set('inflate', inflated.length)
      if (inflated.length === 0) {
        // express.json takes an empty body for {}; the lab, like JSON.parse, for no JSON at all
        throw jsonInvalid(locateJsonError(inflated, 0, 0, new SyntaxError('empty')).reason, 0)
      }
      this.format = this.plan.format ?? detectFormat(inflated.subarray(0, DETECT_BYTES))
      this.sha256 = createHash('sha256').update(inflated).digest('hex')
      const meter = new ParseCostMeter()
      meter.write(inflated)
      const projected = meter.result()
      // the decoder is done too: what is held is the inflated Buffer
      this.decoderBytes = 0
      this.reservation.shrink(this.reservation.bytes - inflated.length)
      // iconv-lite decodes one string (at most two bytes a byte), then JSON.parse builds the document
      this.reservation.grow(projected.sourceString, 'this body as one string')
      this.reservation.grow(projected.values, 'parsing this body')
    } catch (err) {
      this.refusal = err
      throw err
    }
  }

  /** body-parser's callback: the document is in req.body, or it failed. */
  parsed (err) {
    if (this.settled) return
    if (err) {
      this.settle(this.refusal ?? this.toLabError(err))
      return
    }
    if (!this.verified) {
      // no body at all (no Content-Length, no Transfer-Encoding): express.json skips it
      this.settle(jsonInvalid(locateJsonError(Buffer.alloc(0), 0, 0, new SyntaxError('empty')).reason, 0))
      return
    }
    this.settle(null, this.req.body)
  }

  /** A refusal from outside body-parser: answer now, and make body-parser stop reading. */
  fail (err) {
    if (this.settled) return
    this.refusal = err
    if (this.inflater !== null) {
      // raw-body fails on its stream's error and stops; body-parser unpipes and drains the request
      this.inflater.destroy(err)
    } else if (this.plan.encoding === null && !this.verified && this.req.listenerCount('error') > 0) {
      // an identity body: raw-body reads the request itself, and listens for its 'error' to stop
      this.req.emit('error', err)
    }
    this.settle(err)
  }

  settle (err, doc) {
    if (this.settled) return
    this.settled = true
    this.req.removeListener('data', this.onCompressed)
    this.req.removeListener('close', this.onClose)
    this.inflater?.removeListener('data', this.onInflated)
    this.releaseDeadline?.()
    this.releaseDeadline = null
    // the inflated Buffer is body-parser's to drop now: the error (if any) has been located
    this.inflated = null
    if (err) this.reject(err)
    else this.resolve(doc)
  }

  /** body-parser's errors (http-errors with raw-body's types, or zlib's) in the lab's types: docs/errors.md. */
  toLabError (err) {
    if (err instanceof LabError) return err
    switch (err.type) {
      case 'entity.too.large':
        return inflatedTooLarge(this.limits.inflated, err.received ?? err.length ?? null)
      case 'entity.parse.failed':
        return this.jsonError(err)
      case 'encoding.unsupported':
        return expressJsonEncodingUnsupported(err.encoding ?? this.req.headers['content-encoding'], EXPRESS_JSON_ENCODINGS)
      case 'charset.unsupported':
        return charsetUnsupported(err.charset)
      case 'request.aborted':
      case 'request.size.invalid':
        return requestAborted(err.received ?? this.compressedBytes)
    }
    const codec = this.plan.encoding ?? 'gzip'
    const zlibError = fromZlibError(err, this.compressedBytes, codec)
    if (zlibError) return zlibError
    // a decoder that failed in a way zlib has no code for (a member after its end, say): still the body's fault
    if (typeof err.code === 'string' && err.code.startsWith('ERR_STREAM')) {
      return codec === 'gzip' ? gzipInvalid(err.message, this.compressedBytes) : encodingInvalid(codec, err.message, this.compressedBytes)
    }
    // another client error keeps body-parser's status and type; anything else is the lab's to answer
    if (Number.isInteger(err.status) && err.status >= 400 && err.status < 500) return toLabError(err)
    return err
  }

  /** JSON.parse said no: where, found on the inflated bytes as /bad finds it. */
  jsonError (err) {
    const bytes = this.inflated ?? Buffer.alloc(0)
    // iconv-lite drops a leading byte order mark before JSON.parse sees the text
    const start = bytes.subarray(0, 3).equals(UTF8_BOM) ? 3 : 0
    const located = locateJsonError(bytes, start, bytes.length, err)
    const hint = this.format === 'ndjson' ? NDJSON_HINT : ''
    return jsonInvalid(located.reason + hint, located.offset)
  }
}
