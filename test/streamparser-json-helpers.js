/**
 * What the specs of POST /streamparser-json compare it with: /bad's answer (or
 * /good's) to the same body over HTTP, /bad's decision on the same inflated
 * bytes, and the route's handler run in this process on reads split anywhere;
 * requests sent in part, and the lab's request events watched.
 */
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import net from 'node:net'
import zlib from 'node:zlib'
import { Readable } from 'node:stream'
import { parseBuffered, post } from './helpers.js'
import { streamparser } from '../lib/ingest/streamparser.js'
import { ingestRoute } from '../lib/ingest/sequence.js'
import { INGEST_STAGES } from '../lib/ingest/stage-names.js'
import { createHeldLedger } from '../lib/metrics/held.js'
import { DEFAULTS, normalizeOptions } from '../lib/config/options.js'
import { findJsonError } from '../lib/json/validate.js'
import { findTooDeep } from '../lib/parse/tally.js'

export const KiB = 1024
export const MiB = 1024 * KiB
export const ROUTE = 'streamparser-json'
export const GZIP = Object.freeze({ 'content-type': 'application/gzip' })
const DEFAULT_DEPTH = DEFAULTS.limits.depth

/** `text` (a string or a Buffer) gzipped, with zlib's `options`. */
export function gz (text, options) {
  return zlib.gzipSync(Buffer.isBuffer(text) ? text : Buffer.from(text), options)
}

/** /bad's answer and this route's to the same body, sent at once. */
export async function answers (url, body, { query = '', headers = GZIP } = {}) {
  const [bad, streamparser] = await Promise.all([
    post(`${url}/bad${query}`, body, headers),
    post(`${url}/${ROUTE}${query}`, body, headers)
  ])
  return { bad, streamparser }
}

/** What a route said, in one line: `200` and the summary, or the status and error type. */
export function verdict (res) {
  if (res.status === 200) return { status: 200, summary: res.body.summary }
  return { status: res.status, type: res.body?.error?.type ?? res.text.slice(0, 80) }
}

/** This route must say what /bad says: the same summary, or the same status and error type. */
export function assertSameAs (other, res, what) {
  assert.deepEqual(verdict(res), verdict(other), `${what}: /${ROUTE} ${res.text.slice(0, 200)}`)
}

/**
 * What zlib inflates out of a gzip body before it finds the damage: all a
 * stream could give out, whatever its reads. A prefix of the body inflates
 * without fault (with a sync flush, its end is no fault) up to the byte
 * where the damage is found; the longest such prefix, found by bisection,
 * gives that output.
 */
function inflatedBeforeDamage (body) {
  function inflatePrefix (length) {
    return zlib.gunzipSync(body.subarray(0, length), { finishFlush: zlib.constants.Z_SYNC_FLUSH })
  }
  let sound = 0
  let damaged = body.length + 1
  while (damaged - sound > 1) {
    const middle = (sound + damaged) >> 1
    try {
      inflatePrefix(middle)
      sound = middle
    } catch {
      damaged = middle
    }
  }
  return sound === 0 ? Buffer.alloc(0) : inflatePrefix(sound)
}

/**
 * This route against /bad on a body whose gzip may be damaged. /bad inflates
 * the whole body before it parses a byte, so it refuses damaged gzip as
 * gzip (400). This route parses as it inflates: when the bytes zlib gives
 * out before it finds the damage are already no JSON (or nest past the
 * limit), it answers for them at once (422), as a streaming parser does
 * (/good too, on a body large enough to stream). Anything else must be
 * /bad's answer.
 * @returns {Promise<'same'|'sooner'>}
 */
export async function assertSameAsBadOrSooner (bad, res, body, what) {
  const type = res.body?.error?.type
  if (res.status === 422 && (type === 'json.invalid' || type === 'json.too.deep') && bad.status === 400 && bad.body.error.type.startsWith('gzip.')) {
    const prefix = inflatedBeforeDamage(body)
    const fault = type === 'json.invalid' ? findJsonError(prefix) : { offset: findTooDeep(prefix, 0, prefix.length, DEFAULT_DEPTH) }
    assert.ok(fault !== null && fault.offset >= 0 && fault.offset < prefix.length,
      `${what}: /bad ${bad.body.error.type}, /${ROUTE} ${type}, but the ${prefix.length} B before the damage hold no such fault`)
    return 'sooner'
  }
  assertSameAs(bad, res, what)
  return 'same'
}

/**
 * Run the route's handler (lib/ingest/sequence.js ingestRoute) in this process on a gzip body given
 * as reads, with the lab's default limits (`limits` over them), no idle
 * timer and no peak reset. A level-0 gzip body (stored blocks) read a byte at a time reaches
 * the tokenizer one inflated byte per chunk, so its chunk boundaries fall
 * wherever the test puts them, which HTTP cannot promise.
 * @returns {Promise<{ summary: object }|{ status: number, type: string }>}
 */
export async function ingestInReads (reads, { query = {}, limits = {} } = {}) {
  const req = Readable.from(reads, { objectMode: false })
  req.headers = { ...GZIP }
  req.query = query
  req.complete = false
  req.once('end', function completed () { req.complete = true })
  const opts = normalizeOptions({ resetPeakPerRequest: false, limits: { bodyIdleMs: 0, ...limits } })
  const lab = { opts, events: new EventEmitter(), readPeak: function noPeak () { return { bytes: 0, source: 'none' } }, held: createHeldLedger(INGEST_STAGES), inflight: 0 }
  const res = { locals: {}, once: function noClose () {}, json: function answer (body) { res.body = body } }
  try {
    await ingestRoute(streamparser, lab)(req, res)
    return { summary: res.body.summary }
  } catch (err) {
    if (err.type === undefined) throw err
    return { status: err.status, type: err.type }
  }
}

/** The same decision in /bad's terms (test/helpers.js parseBuffered): the tally's figures, `error`, or `shape`. */
export function asBufferedDecision (result) {
  if (result.summary) {
    const { items, idSum, numbers, numbersChecksum } = result.summary
    return { summary: { items, idSum, numbers, numbersChecksum } }
  }
  if (result.type === 'json.invalid') return 'error'
  if (result.type === 'json.items.missing' || result.type === 'json.shape.invalid') return 'shape'
  return result
}

/** What /bad decides for the same inflated bytes (test/helpers.js parseBuffered), in asBufferedDecision's terms. */
export function bufferedDecision (inflated, format) {
  const got = parseBuffered(inflated, format)
  if (got.summary) return { summary: got.summary }
  return got.shape ? 'shape' : 'error'
}

/** The bytes as reads of one byte each. */
export function oneByteReads (bytes) {
  return Array.from(bytes, function single (b) { return Buffer.from([b]) })
}

/** A request that sends its headers and `part` of a body of `length` bytes, and no more until told. */
export function sendPart (port, path, length, part, headers = GZIP) {
  const socket = net.connect(port, '127.0.0.1')
  socket.on('error', function ignore () {})
  const head = Object.entries({ host: 'localhost', ...headers, 'content-length': length })
    .map(function line ([name, value]) { return `${name}: ${value}\r\n` }).join('')
  const answer = new Promise(function read (resolve) {
    const parts = []
    socket.on('data', function keep (c) { parts.push(c) })
    socket.on('close', function done () {
      const text = Buffer.concat(parts).toString()
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0)
      let json = null
      try { json = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) } catch { /* no answer: status 0 */ }
      resolve({ status, json })
    })
  })
  socket.write(`POST ${path} HTTP/1.1\r\n${head}connection: close\r\n\r\n`)
  socket.write(part)
  return { socket, answer }
}

/** Requests a lab started and did not end, from its own event bus, and how each ended. */
export function watchRequests (events) {
  const watched = { open: new Set(), ended: [] }
  function track (event) {
    if (event.phase === 'start') watched.open.add(event.id)
    else if (event.phase === 'end') {
      watched.open.delete(event.id)
      watched.ended.push(event)
    }
  }
  events.on('request', track)
  watched.stop = function stopWatching () { events.off('request', track) }
  return watched
}
