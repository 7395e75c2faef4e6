/**
 * What /bad and /good share before they part ways: which bodies they
 * accept, how many gzip layers to peel, which JSON format to expect, and a
 * request source that can be abandoned without killing the socket.
 */
import { Readable } from 'node:stream'
import { Transform } from 'node:stream'
import { createHash } from 'node:crypto'
import { FORMATS } from '../json/records.js'
import {
  badParameter, compressedTooLarge, inflatedTooLarge, requestAborted,
  unsupportedEncoding, unsupportedMediaType, tooManyLayers, ratioTooLarge
} from '../errors/index.js'
import { guardBody } from '../limits/body-deadline.js'

const GZIP_TYPES = ['application/octet-stream', 'application/gzip', 'application/x-gzip']
const JSON_TYPES = ['application/json', 'application/x-ndjson']
export const ACCEPTED_TYPES = Object.freeze([...GZIP_TYPES, ...JSON_TYPES])

/**
 * Read the headers and query of an ingest request.
 * @returns {{ layers: number, format: 'json'|'array'|'ndjson'|null }} format null = detect
 * @throws {LabError} 415 for media types and encodings, 400 for a bad ?format=
 */
export function negotiateBody (req, limits) {
  const mediaType = String(req.headers['content-type'] || '').split(';')[0].trim().toLowerCase()
  let layers
  if (GZIP_TYPES.includes(mediaType)) layers = 1
  else if (JSON_TYPES.includes(mediaType)) layers = 0
  else throw unsupportedMediaType(req.headers['content-type'], ACCEPTED_TYPES)

  const encoding = String(req.headers['content-encoding'] || '')
  for (const token of encoding.split(',')) {
    const name = token.trim().toLowerCase()
    if (name === '' || name === 'identity') continue
    if (name === 'gzip' || name === 'x-gzip') layers++
    else throw unsupportedEncoding(token.trim())
  }
  if (layers === 0) throw unsupportedMediaType(req.headers['content-type'] + ' without Content-Encoding: gzip', ACCEPTED_TYPES)
  if (layers > limits.layers) {
    throw tooManyLayers(limits.layers, layers)
  }

  let format = null
  const asked = req.query?.format
  if (asked !== undefined) {
    if (typeof asked !== 'string' || !FORMATS.includes(asked)) throw badParameter('format', asked, FORMATS.join(' | '))
    format = asked
  } else if (mediaType === 'application/x-ndjson') {
    format = 'ndjson'
  }
  return { layers, format }
}

/** 413 before reading a byte when Content-Length already says too much. */
export function checkContentLength (req, limit) {
  const length = Number(req.headers['content-length'])
  if (Number.isFinite(length) && length > limit) throw compressedTooLarge(limit, length)
}

/**
 * The request body as a stream that `pipeline` may destroy without
 * destroying the socket: when the pipeline fails, the rest of the body is
 * read and discarded, so the client still gets its JSON error. A body that
 * stalls, or arrives too slowly, fails with 408: the request's one watch
 * (lib/limits/body-deadline.js), which the app arms with its `limits`; the options
 * here count only where no app armed one.
 * @param {import('node:http').IncomingMessage} req
 * @param {{ idleMs?: number, minRate?: number, rateWindowMs?: number }} [options]
 */
export function requestBody (req, { idleMs = 0, minRate = 0, rateWindowMs = 0 } = {}) {
  let received = 0
  let releaseDeadline = null
  function armDeadline () {
    releaseDeadline = guardBody(req, { idleMs, minRate, windowMs: rateWindowMs }, function bodyDeadlinePassed (err) {
      source.destroy(err)
    })
  }
  const source = new Readable({
    highWaterMark: 64 * 1024,
    read: function readRequest () {
      req.resume()
    },
    destroy: function releaseRequest (err, callback) {
      cleanup()
      if (!req.complete) discardRestOfBody(req)
      callback(err)
    }
  })
  function onData (chunk) {
    received += chunk.length
    if (!source.push(chunk)) req.pause()
  }
  function onEnd () {
    cleanup()
    source.push(null)
  }
  function onClose () {
    if (!req.complete) source.destroy(requestAborted(received))
  }
  function onError (err) {
    // a reset after the last byte arrived, before 'end' was read, is an abort too
    const aborted = !req.complete || err.code === 'ECONNRESET' || err.message === 'aborted'
    source.destroy(aborted ? requestAborted(received) : err)
  }
  function cleanup () {
    if (releaseDeadline) releaseDeadline()
    releaseDeadline = null
    req.removeListener('data', onData)
    req.removeListener('end', onEnd)
    req.removeListener('close', onClose)
    req.removeListener('error', onError)
  }
  req.on('data', onData)
  req.on('end', onEnd)
  req.on('close', onClose)
  req.on('error', onError)
  armDeadline()
  // a client gone before its request got here (queued for a pipeline, say) sends no more 'close'
  if (clientGone(req)) process.nextTick(function alreadyGone () { source.destroy(requestAborted(received)) })
  return source
}

/**
 * Whether the client hung up before the body was read: its 'close' may have
 * passed while the request waited, so ask the state, not the events. A small
 * body arrives whole with its headers (`complete`), but when the socket
 * closes before it is read, Node destroys the request and drops the body:
 * no 'data' and no 'end' will ever come, and a reader waiting for them
 * would hold its place for good.
 * @param {import('node:http').IncomingMessage} req
 */
export function clientGone (req) {
  if (req.readableEnded) return false
  if (req.destroyed) return true
  if (req.complete) return false
  return req.socket === null || req.socket?.destroyed === true
}

/** How much of an abandoned body the lab reads and drops, at most: bytes, time in all, and a gap. */
const DRAIN = Object.freeze({ bytes: 64 * 1024 * 1024, ms: 10_000, idleMs: 2000 })

/** Requests whose rest is being discarded: once is enough. */
const discarding = new WeakSet()

/**
 * Read and discard the rest of an abandoned body, so the client, still
 * sending, gets to read its error answer; but only so much: a client that
 * sends a 10 GB body, or stops sending, must not keep the lab reading. A
 * 10 MB bomb is drained whole, however busy the machine; what passes 64 MiB,
 * 10 s, or a 2 s pause loses its connection. The ingest body stream calls
 * it when its pipeline fails; the app's error handler, for a body refused
 * before it was read (a Content-Length over the limit).
 * @param {import('node:http').IncomingMessage} req
 */
export function discardRestOfBody (req) {
  if (req.complete || discarding.has(req)) return
  discarding.add(req)
  let drained = 0
  function stopDraining () {
    cleanup()
    if (!req.complete) req.socket?.destroy()
  }
  const total = setTimeout(stopDraining, DRAIN.ms)
  const idle = setTimeout(stopDraining, DRAIN.idleMs)
  total.unref()
  idle.unref()
  function onData (chunk) {
    drained += chunk.length
    if (drained > DRAIN.bytes) stopDraining()
    else idle.refresh()
  }
  function cleanup () {
    clearTimeout(total)
    clearTimeout(idle)
    req.removeListener('data', onData)
    req.removeListener('end', cleanup)
    req.removeListener('close', cleanup)
  }
  req.on('data', onData)
  req.once('end', cleanup)
  req.once('close', cleanup)
  req.resume()
}

/**
 * A pass-through that counts bytes and fails the moment `check` says so.
 * @param {(bytes: number, chunk: Buffer) => Error|null} check called with the running total (and the chunk) on every chunk
 * @param {string} [hash] also digest the bytes with this algorithm
 */
export function countingStream (check, hash) {
  const digest = hash ? createHash(hash) : null
  const counter = new Transform({
    transform: function countChunk (chunk, encoding, callback) {
      const error = counter.count(chunk)
      if (error) callback(error)
      else callback(null, chunk)
    }
  })
  counter.bytes = 0
  /**
   * Count (and digest) bytes that do not flow through the stream: the same
   * check, for a caller that holds them whole.
   * @returns {Error|null} the check's verdict; the bytes are digested only when it passes
   */
  counter.count = function countBytes (chunk) {
    counter.bytes += chunk.length
    const error = check(counter.bytes, chunk)
    if (error) return error
    if (digest) digest.update(chunk)
    return null
  }
  counter.digest = function hexDigest () {
    return digest.digest('hex')
  }
  return counter
}

/** Counts compressed bytes against `limit`. */
export function compressedCounter (limit) {
  return countingStream(function checkCompressed (bytes) {
    return bytes > limit ? compressedTooLarge(limit, bytes) : null
  })
}

/**
 * Counts and digests inflated bytes; fails past the inflated limit, or past
 * the expansion ratio once `ratioAfter` bytes are out (small bodies of
 * repetitive JSON compress well too, and must pass).
 * @param {{ inflated: number, ratio: number, ratioAfter: number }} limits
 * @param {{ bytes: number }} compressed the compressed counter upstream
 */
export function inflatedCounter (limits, compressed) {
  return countingStream(function checkInflated (bytes) {
    if (bytes > limits.inflated) return inflatedTooLarge(limits.inflated, bytes)
    if (bytes >= limits.ratioAfter && bytes > limits.ratio * compressed.bytes) {
      return ratioTooLarge(limits.ratio, bytes / compressed.bytes, bytes, compressed.bytes)
    }
    return null
  }, 'sha256')
}

/** The answer both routes give, in one fixed key order. */
export function makeSummary ({ format, tally, inflatedBytes, compressedBytes, sha256 }) {
  return {
    format,
    items: tally.items,
    idSum: tally.idSum,
    numbers: tally.numbers,
    numbersChecksum: tally.numbersChecksum,
    inflatedBytes,
    compressedBytes,
    sha256
  }
}
