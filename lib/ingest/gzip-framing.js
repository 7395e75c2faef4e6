/**
 * Stage 4, inflate (lib/ingest/README.md): whole (`inflateWhole`) or
 * streamed (`gunzipLayers`), with the one rule of what ends a gzip body.
 *
 * A gzip body is one or more members (RFC 1952, 2.2) back to back, then
 * nothing or only zero bytes; anything else once the padding starts is
 * refused (400 `gzip.trailing.data`, at its offset). Node's zlib stops at a
 * zero and ignores what follows, in ways that depend on where the reads
 * fall (a stream may even push after its end: a 500), so the lab would drop
 * those bytes without a word. zlib still judges the members, and its errors
 * keep their meaning. test/gzip-framing.test.js splits every case at every
 * byte.
 */
import zlib from 'node:zlib'
import { kMaxLength } from 'node:buffer'
import { gzipTrailingData } from '../errors/index.js'

/**
 * The first byte of `bytes[from..]` that is not zero padding, as an error, or null.
 * @param {Buffer} bytes
 * @param {number} from where the padding starts in `bytes`
 * @param {number} base the offset of `bytes[0]` in the body
 */
function paddingError (bytes, from, base) {
  for (let i = from; i < bytes.length; i++) {
    if (bytes[i] !== 0) return gzipTrailingData(base + i, bytes[i])
  }
  return null
}

/**
 * Inflate a whole gzip body at once, as `zlib.gunzip` does (its output
 * chunks gathered and joined, `maxOutputLength` checked as they come), on an
 * engine of our own so that what it has gathered can be read meanwhile
 * (`progress`); then hold what zlib left unread to the padding rule.
 * @param {Buffer} body
 * @param {zlib.ZlibOptions} [options] e.g. `maxOutputLength`
 * @param {(gathered: () => number) => void} [progress] given a reader of the bytes gathered so far
 * @returns {Promise<Buffer>}
 */
function gunzipWhole (body, options = {}, progress = noProgress) {
  return new Promise(function inflate (resolve, reject) {
    const engine = new zlib.Gunzip(options)
    const max = options.maxOutputLength ?? kMaxLength
    const chunks = []
    let gathered = 0
    let settled = false
    progress(function gatheredSoFar () { return gathered })
    function fail (err) {
      if (settled) return
      settled = true
      engine.close()
      reject(err)
    }
    engine.on('data', function gather (chunk) {
      chunks.push(chunk)
      gathered += chunk.length
      if (gathered > max) fail(bufferTooLarge(max))
    })
    engine.once('error', fail)
    engine.once('end', function joined () {
      if (settled) return
      settled = true
      const error = paddingError(body, engine.bytesWritten, 0)
      if (error) reject(error)
      else resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, gathered))
      engine.close()
    })
    engine.end(body)
  })
}

/** zlib's own refusal of an output past `maxOutputLength`, as `zlib.gunzip` gives it. */
function bufferTooLarge (max) {
  const error = new RangeError(`Cannot create a Buffer larger than ${max} bytes`)
  error.code = 'ERR_BUFFER_TOO_LARGE'
  return error
}

function noProgress () {}

/** As gunzipWhole, in one synchronous call: no trip to zlib's thread pool and back. */
function gunzipWholeSync (body, options = {}) {
  const { buffer, engine } = zlib.gunzipSync(body, { ...options, info: true })
  const error = paddingError(body, engine.bytesWritten, 0)
  if (error) throw error
  return buffer
}

/**
 * Inflate a body held whole, one gzip layer after another, each held to
 * the padding rule. zlib gathers a layer's output chunks and joins them:
 * twice that layer's inflated size at the end.
 * @param {Buffer} body
 * @param {number} layers
 * @param {{ sync?: boolean, capFor?: (data: Buffer, layer: number) => number|undefined,
 *   afterLayer?: (data: Buffer, layer: number) => void, holding?: import('../metrics/held.js').Holding }} [how]
 *   `sync`: zlib's synchronous call, for a body too small to be worth zlib's thread pool;
 *   `capFor`: the layer's `maxOutputLength` (undefined: none); `afterLayer`: sees each layer's output;
 *   `holding`: told what the inflate stage holds (the layer's input past the first, what zlib has gathered)
 * @returns {Promise<Buffer>}
 * @throws zlib's errors as they are (`ERR_BUFFER_TOO_LARGE` past a cap), and 400 `gzip.trailing.data`
 */
export async function inflateWhole (body, layers, { sync = false, capFor = noCap, afterLayer = nothingAfter, holding } = {}) {
  let data = body
  for (let layer = 0; layer < layers; layer++) {
    const cap = capFor(data, layer)
    const options = cap === undefined ? {} : { maxOutputLength: cap }
    // the body itself is the read stage's; a later layer's input is this stage's
    const input = layer === 0 ? 0 : data.length
    data = sync
      ? gunzipWholeSync(data, options)
      : await gunzipWhole(data, options, holding && function watchGathered (gathered) {
        holding.watch('inflate', function heldInflating () { return input + gathered() })
      })
    holding?.set('inflate', data.length)
    afterLayer(data, layer)
  }
  return data
}

function noCap () { return undefined }
function nothingAfter () {}

/**
 * A `Gunzip` stream that keeps the rule whatever the reads: once zlib stops
 * at padding, the rest of that read and every later one must be zeros, and
 * zlib sees none of them (so nothing is ever pushed after its end). Its
 * output ends only when its input has: zlib would end it at the padding,
 * and what reads the output (a parser that finds the document unfinished)
 * could answer before the bytes after the padding are judged.
 */
class GunzipBody extends zlib.Gunzip {
  constructor (options) {
    super(options)
    /** Bytes of the body taken so far. */
    this.position = 0
    /** True once zlib stopped at a zero byte: the members are over. */
    this.padding = false
    /** True once the whole body was taken: the output may end. */
    this.inputEnded = false
  }

  push (chunk, encoding) {
    // zlib ends the output where it stopped; the end waits for the input's (see _flush)
    if (chunk === null && !this.inputEnded) return false
    return super.push(chunk, encoding)
  }

  _transform (chunk, encoding, callback) {
    const base = this.position
    this.position += chunk.length
    if (this.padding) {
      callback(paddingError(chunk, 0, base))
      return
    }
    const before = this.bytesWritten
    const self = this
    super._transform(chunk, encoding, function inflated (err) {
      if (err) return callback(err)
      const used = self.bytesWritten - before
      if (used < chunk.length) {
        // zlib stopped at a zero after a member and pushed its end: padding from here on
        self.padding = true
        return callback(paddingError(chunk, used, base))
      }
      callback()
    })
  }

  _flush (callback) {
    this.inputEnded = true
    // after padding zlib is done; otherwise let it finish (and find a truncated member). Transform pushes the end.
    if (this.padding) callback()
    else super._flush(callback)
  }
}

/**
 * One Gunzip per gzip layer of a streamed body, to spread into `pipeline`.
 * @param {number} layers
 * @param {zlib.ZlibOptions} [options]
 */
export function gunzipLayers (layers, options) {
  const gunzips = []
  for (let k = 0; k < layers; k++) gunzips.push(new GunzipBody(options))
  return gunzips
}
