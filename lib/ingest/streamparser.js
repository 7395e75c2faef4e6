/**
 * POST /streamparser-json: the streaming route a reader writes after @streamparser/json's README, and
 * the one to copy. The body flows through `pipeline()` a chunk at a time: request, decoders, invalid
 * UTF-8 made U+FFFD (the library refuses it, JSON.parse on /bad's string does not), the tokenizer, its
 * parser picking the records out, a tally. Memory stays flat whatever the body's size. The lab's limits
 * are shared pieces, a line each; what the library cannot bound or reads otherwise than JSON.parse is
 * watched token by token (token-guard.js).
 */
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { Tokenizer, TokenParser } from '@streamparser/json'
import { negotiateBody } from './negotiate.js'
import { admitToStream } from './admit.js'
import { requestBody } from './read.js'
import { compressedCounter, inflatedCounter } from './count.js'
import { decoderStreams } from './gzip-framing.js'
import { DecoderMemory } from './decoder-memory.js'
import { JsonTokenGuard, STREAMPARSER_FORMATS, wellFormedUtf8 } from './token-guard.js'
import { fromZlibError, jsonInvalid, LabError } from '../errors/index.js'
import { bufferedIn, boundOf } from '../metrics/held.js'

/** POST /streamparser-json: no place to wait for; stages 3 to 7 in ingestWithStreamparser. */
export const streamparser = Object.freeze({
  name: 'streamparser-json',
  formats: STREAMPARSER_FORMATS,
  formatHint: 'json | array (NDJSON is many documents: POST /good reads it)',
  negotiate: negotiateBody, // 415, 400 or 413 before a byte is read
  admit: admitToStream,
  ingest: ingestWithStreamparser
})

/** Stages 3 to 7 of POST /streamparser-json: one pipeline into the library, each limit a line. */
async function ingestWithStreamparser (req, plan, { holding }, { opts, decoders }) {
  const compressed = compressedCounter(opts.limits.compressed) // 413 past the compressed limit
  const inflated = inflatedCounter(opts.limits, compressed) // 413 past the inflated limit or ratio; sha256
  const guard = new JsonTokenGuard(plan.format, opts.limits, opts.ingest.parseCost) // 422/413 past the depth, a record's size or its cost
  const tokenizer = new Tokenizer({ emitPartialTokens: true }) // a token a chunk cuts short is reported: the guard counts its bytes
  let parser = null // built at the first token, which says where the records are
  tokenizer.onToken = function checkThenParse (token) {
    guard.see(token)
    parser ??= recordParser(guard)
    parser.write(token)
  }
  const memory = new DecoderMemory(plan.codecs, decoders, { streamed: true }) // brotli's and zstd's windows, before they are made
  const parse = new Writable({
    write: function parseChunk (chunk, encoding, done) {
      try { guard.take(chunk); tokenizer.write(chunk); done() } catch (err) { done(err) }
    }
  })
  try {
    const body = requestBody(req, { idleMs: opts.limits.bodyIdleMs }) // 408 when the body stalls
    const gunzips = decoderStreams(plan.codecs, {}, memory) // each decoder's window waits for room in the app's decoder budget
    const utf8 = wellFormedUtf8()
    watchStages(holding, { req, body, compressed, gunzips, inflated, utf8, parse, tokenizer, memory, limits: opts.limits })
    await pipeline(body, compressed, ...gunzips, inflated, utf8, parse) // invalid UTF-8 as U+FFFD, as on /bad
    if (!tokenizer.isEnded) tokenizer.end() // the body is over: a document left open is invalid JSON
    if (parser !== null && !parser.isEnded) parser.end()
  } catch (err) {
    if (err instanceof LabError) throw err
    // not zlib's: the library's words for invalid JSON
    throw fromZlibError(err, compressed.bytes, err.codec ?? plan.codecs[0].name) ?? jsonInvalid(err.message, -1)
  } finally {
    memory.release()
  }
  const { format, tally } = guard.result() // 422 when the document is not what the format asks
  return { format, tally, inflatedBytes: inflated.bytes, compressedBytes: compressed.bytes, sha256: inflated.sha256 }
}

const SOCKET_CHUNK = 64 * 1024 // the most a socket hands the request at a time (libuv's read)

/**
 * What each stage holds, read at each sample (lib/metrics/held.js), with the most it may hold: the
 * pipeline's buffers and the token the tokenizer gathers (bounded by the record limit). The record
 * its parser is building cannot be read.
 */
function watchStages (holding, { req, body, compressed, gunzips, inflated, utf8, parse, tokenizer, memory, limits }) {
  holding.watch('read', function heldReading () { return bufferedIn(req, body, compressed) },
    boundOf(SOCKET_CHUNK, req, body, compressed))
  holding.watch('inflate', function heldInflating () { return bufferedIn(...gunzips, inflated, utf8) + memory.held },
    boundOf(SOCKET_CHUNK, ...gunzips, inflated, utf8) + memory.most())
  holding.watch('parse', function heldParsing () { return bufferedIn(parse) + (tokenizer.bufferedString?.byteLength ?? 0) },
    boundOf(SOCKET_CHUNK, parse) + limits.record)
  holding.unread.push('zlib\'s output chunk in each decoder', 'the record @streamparser/json\'s parser is building')
}

/** The library's parser, emitting the records where the guard says they are. */
function recordParser (guard) {
  const parser = new TokenParser({ paths: guard.paths, keepStack: false })
  parser.onValue = function countRecord ({ value }) { guard.record(value) }
  return parser
}
