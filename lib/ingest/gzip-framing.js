/**
 * Stage 4, inflate (lib/ingest/README.md): each layer decoded whole (`inflateWhole`) or streamed
 * (`decoderStreams`), in any codec of codecs.js, with one rule of what ends a layer. gzip: members,
 * then nothing or zeros (else 400 `gzip.trailing.data`); deflate, br, zstd: nothing after the
 * stream or frames (400 `encoding.trailing.data`). zlib stops at the end and ignores the rest, in
 * ways that depend on where reads fall (a stream may even push after its end), so the lab judges it
 * here (docs/errors.md, "What ends a gzip body"). An empty layer is truncated.
 */
import { kMaxLength } from 'node:buffer'
import { encodingTrailingData, gzipTrailingData } from '../errors/index.js'
import { CODECS } from './codecs.js'
import { decoderBytes, layerWindow } from './decoder-memory.js'

/** zstd frames a layer may have and still be decoded in synchronous calls, on the main thread. */
const SYNC_PIECES = 16

/** The first byte of `bytes[from..]` the codec does not allow past a layer's end, as an error, or null. */
function trailingError (codec, bytes, from, base) {
  for (let i = from; i < bytes.length; i++) {
    if (!codec.padding) return encodingTrailingData(codec.name, base + i, bytes[i])
    if (bytes[i] !== 0) return gzipTrailingData(base + i, bytes[i])
  }
  return null
}

/**
 * Decode a whole layer at once, as `zlib.gunzip` does, on an engine of our own so that what it
 * has gathered can be read meanwhile (`progress`); then judge what zlib left unread.
 */
function decodeWhole (codec, body, framed, options = {}, progress = noProgress) {
  return new Promise(function inflate (resolve, reject) {
    const engine = new codec.Stream({ ...codec.options, ...options })
    const max = options.maxOutputLength ?? kMaxLength
    const chunks = []
    let gathered = 0
    let settled = false
    progress(function gatheredSoFar () { return gathered })
    function fail (err) {
      if (settled) return
      settled = true
      engine.close()
      // the caller maps zlib's error by the layer's codec (lib/errors/body.js fromZlibError)
      err.codec ??= codec.name
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
      const error = framed.error ?? trailingError(codec, body, engine.bytesWritten, 0)
      if (error) reject(error)
      else resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, gathered))
      engine.close()
    })
    if (framed.error === null) {
      for (const piece of framed.pieces) engine.write(piece)
      engine.end()
      return
    }
    // the frames end in a refusal: the frames before it are decoded (an error of theirs comes first,
    // as streamed), then the refusal, with no finishing flush to find them cut short
    if (framed.pieces.length === 0) return fail(framed.error)
    framed.pieces.forEach(function writePiece (piece, k) {
      engine.write(piece, k === framed.pieces.length - 1 ? function refuse () { fail(framed.error) } : undefined)
    })
  })
}

/**
 * A whole layer as the writes its codec's stream decodes: the body, or for zstd each frame apart;
 * the refusal the frames end in, if any; and the decoder's window (0 for gzip and deflate).
 */
function piecesOf (codec, body) {
  if (codec.Frames === null) return { pieces: [body], error: null, window: layerWindow(codec, body[0]) }
  const pieces = []
  let from = 0
  const frames = new codec.Frames(function frameEnded (end) {
    pieces.push(body.subarray(from, end))
    from = end
  })
  const error = frames.cut(body).error ?? frames.end()
  // a refusal names its offset, or (a frame's window) comes at a header that no piece reached
  const stop = error === null ? body.length : error.details.offset ?? from
  if (stop > from) pieces.push(body.subarray(from, stop))
  return { pieces, error, window: frames.window }
}

/** zlib's own refusal of a layer that ended before its end, for a layer of no bytes (its codec's `truncated`). */
function emptyLayer (codec) {
  const error = new Error('unexpected end of file: the layer has no bytes')
  error.code = 'Z_BUF_ERROR'
  error.codec = codec.name
  return error
}

/** zlib's own refusal of an output past `maxOutputLength`, as `zlib.gunzip` gives it. */
function bufferTooLarge (max) {
  const error = new RangeError(`Cannot create a Buffer larger than ${max} bytes`)
  error.code = 'ERR_BUFFER_TOO_LARGE'
  return error
}

function noProgress () {}

/** As decodeWhole, in synchronous calls (one per zstd frame): no trip to zlib's thread pool and back. */
function decodeWholeSync (codec, body, framed, options = {}) {
  const max = options.maxOutputLength ?? kMaxLength
  const buffers = []
  let size = 0
  let used = 0
  for (const piece of framed.pieces) {
    let decoded
    try {
      // a frame after the cap is reached may still be empty: 1 byte more is past it
      decoded = codec.decodeSync(piece, { ...codec.options, ...options, maxOutputLength: Math.max(1, max - size), info: true })
    } catch (err) {
      err.codec ??= codec.name
      throw err
    }
    buffers.push(decoded.buffer)
    size += decoded.buffer.length
    used += decoded.engine.bytesWritten
    if (size > max) throw bufferTooLarge(max)
    if (decoded.engine.bytesWritten < piece.length) break
  }
  const error = framed.error ?? trailingError(codec, body, used, 0)
  if (error) throw error
  return buffers.length === 1 ? buffers[0] : Buffer.concat(buffers, size)
}

/**
 * Decode a body held whole, one layer after another (`codecs` in decoding order), each held to its
 * codec's rule. `sync`: zlib's synchronous call, for a small body; `capFor`: a layer's
 * `maxOutputLength`; `holding`: told what the stage holds; `memory`: where each decoder is fitted.
 * @throws zlib's errors as they are, and 400 `gzip.trailing.data` or `encoding.trailing.data`
 */
export async function inflateWhole (body, codecs, { sync = false, capFor = noCap, afterLayer = nothingAfter, holding, memory } = {}) {
  let data = body
  for (const [layer, codec] of listOf(codecs).entries()) {
    if (data.length === 0) throw emptyLayer(codec)
    const framed = piecesOf(codec, data)
    await memory?.fit(layer, decoderBytes(codec, framed.window))
    const cap = capFor(data, layer, codec)
    const options = cap === undefined ? {} : { maxOutputLength: cap }
    // the body itself is the read stage's; a later layer's input is this stage's
    const input = layer === 0 ? 0 : data.length
    // a zstd layer of many frames is as many calls: those go to zlib's thread pool
    data = sync && framed.pieces.length <= SYNC_PIECES
      ? decodeWholeSync(codec, data, framed, options)
      : await decodeWhole(codec, data, framed, options, holding && function watchGathered (gathered) {
        holding.watch('inflate', function heldInflating () { return input + gathered() + (memory?.held ?? 0) })
      })
    holding?.set('inflate', data.length)
    await memory?.fit(layer, 0)
    afterLayer(data, layer)
  }
  return data
}

/** A number of layers means that many gzip layers (the lab's own tests and tools speak so). */
function listOf (codecs) {
  return typeof codecs === 'number' ? Array.from({ length: codecs }, function gzipLayer () { return CODECS.gzip }) : codecs
}

function noCap () { return undefined }
function nothingAfter () {}

/**
 * A decoding stream that keeps the codec's rule whatever the reads: once zlib stops, the rest must
 * be zeros (gzip) or nothing, and zlib sees none of it. Its output ends only when its input has, so
 * that a parser cannot answer before the bytes after the end are judged.
 */
function framedStream (codec) {
  return class FramedBody extends codec.Stream {
    constructor (options, { memory = null, layer = 0 } = {}) {
      super(options)
      this.memory = memory
      this.layer = layer
      this.fitted = -1 // the window fitted for (-1: not yet); zstd's grows with a frame that asks more
      this.gone = new AbortController() // ends a wait for decoder memory when the pipeline is destroyed
      this.position = 0
      this.padding = false // zlib stopped: the layer is over
      this.inputEnded = false
      this.frames = codec.Frames === null ? null : new codec.Frames() // zstd: one frame a write
    }

    push (chunk, encoding) {
      // zlib ends the output where it stopped; the end waits for the input's (see _flush)
      if (chunk === null && !this.inputEnded) return false
      return super.push(chunk, encoding)
    }

    _transform (chunk, encoding, callback) {
      if (this.frames === null || this.padding) {
        if (this.fitted !== -1 || this.padding || chunk.length === 0) return this.decodeRead(chunk, callback)
        // the first bytes: the decoder's memory is known from them, and fitted before zlib sees them
                this.fitThen(layerWindow(codec, chunk[0]), function decodeFirstRead (self) { self.decodeRead(chunk, callback) }, callback)
        return
      }
      // zlib gets each frame's bytes in writes of their own; a byte after a frame that starts none is judged here
      const { pieces, error } = this.frames.cut(chunk)
      // zstd makes its window once a frame's header is whole: fitted then, and again for a frame that asks more
      if (this.frames.window <= Math.max(0, this.fitted)) return this.decodePieces(pieces, error, callback)
      this.fitThen(this.frames.window, function decodeFrames (self) { self.decodePieces(pieces, error, callback) }, callback)
    }

    /** Fit the decoder's memory for `window` into the request's, then go on (or fail). */
    fitThen (window, next, callback) {
      this.fitted = window
      if (this.memory === null) return next(this)
      const self = this
      this.memory.fit(this.layer, decoderBytes(codec, window), this.gone.signal).then(function fitted () {
        if (!self.destroyed) next(self)
      }, callback)
    }

    /** Hand zlib the pieces one after another, then refuse the layer if the frames say so. */
    decodePieces (pieces, refusal, callback) {
      const self = this
      let next = 0
      function decodeNext (err) {
        if (err) return callback(err)
        if (next < pieces.length) return self.decodeRead(pieces[next++], decodeNext)
        if (refusal === null) return callback()
        self.padding = true
        callback(refusal)
      }
      decodeNext()
    }

    /** Hand zlib a read, or judge it, when the layer is over, by the codec's rule. */
    decodeRead (chunk, callback) {
      const base = this.position
      this.position += chunk.length
      if (this.padding) {
        callback(trailingError(codec, chunk, 0, base))
        return
      }
      const before = this.bytesWritten
      const self = this
      super._transform(chunk, 'buffer', function inflated (err) {
        if (err) {
          err.codec ??= codec.name
          return callback(err)
        }
        self.memory?.moved()
        const used = self.bytesWritten - before
        if (used < chunk.length) {
          // zlib stopped at the end of the layer (a zero after a gzip member) and pushed its end
          self.padding = true
          return callback(trailingError(codec, chunk, used, base))
        }
        callback()
      })
    }

    _destroy (err, callback) {
      this.gone.abort(err ?? new Error('the decoder was destroyed'))
      // zlib's own errors reach pipeline through destroy: they name the layer's codec, for the caller's map
      if (err !== null && typeof err === 'object' && !('status' in err)) err.codec ??= codec.name
      super._destroy(err, callback)
    }

    _flush (callback) {
      this.endLayer(callback)
    }

    endLayer (callback) {
      this.inputEnded = true
      // after the end zlib is done; otherwise an empty read with the finishing flush (zlib's own
      // _flush) lets it finish and find a truncated stream. Transform pushes the end.
      if (this.padding) return callback()
      if (this.position === 0) return callback(emptyLayer(codec))
      const refusal = this.frames?.end() ?? null
      if (refusal !== null) this.decodePieces([], refusal, callback)
      else this.decodeRead(EMPTY, callback)
    }
  }
}

const EMPTY = Buffer.alloc(0)

/** The framed stream class of each codec this Node decodes, made once. */
const FRAMED = new Map()

/** One decoding stream per layer (`codecs` in decoding order; a number: that many gzip layers). */
export function decoderStreams (codecs, options, memory = null) {
  return listOf(codecs).map(function decoderOf (codec, layer) {
    if (!FRAMED.has(codec.name)) FRAMED.set(codec.name, framedStream(codec))
    const Framed = FRAMED.get(codec.name)
    return new Framed({ ...codec.options, ...options }, { memory, layer })
  })
}
