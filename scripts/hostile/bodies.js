/** Request bodies for the hostile bench, made as they are sent from a few reused 64 KiB pieces, never whole in memory. */
import { randomFillSync } from 'node:crypto'
import fs from 'node:fs'
import { Readable, Writable } from 'node:stream'
import { buffer } from 'node:stream/consumers'
import { pipeline } from 'node:stream/promises'
import zlib from 'node:zlib'
import { createGzipStream } from '../../lib/generate/items.js'
import { prng } from '../../lib/measure/mutate.js'

const PIECE = 64 * 1024

/** What one element of a dense record looks like, given its digit. */
const DENSE_KINDS = Object.freeze({
  objects: function objectElement (digit) { return `{"k":${digit}}` },
  arrays: function arrayElement (digit) { return `[${digit}]` },
  numbers: function numberElement (digit) { return String(digit) }
})

/** A readable that pushes what a generator yields, only as it is read. */
function fromPieces (pieces) {
  return new Readable({
    read: function readPiece () {
      const next = pieces.next()
      this.push(next.done ? null : next.value)
    }
  })
}

/** Seeded digits 1 to 9 (mulberry32): the same on every run, so two runs send the same bytes. */
function seededDigits (seed) {
  const random = prng(seed)
  return function nextDigit () {
    return Math.floor(random() * 9) + 1
  }
}

/**
 * A valid `{"items":[...]}` document of `records` records, each a JSON array of about `recordBytes`
 * bytes of tiny elements (`[{"k":3},...]`, `[[3],...]` or `[3,...]`). Seeded digits in 64 KiB runs
 * never repeat within deflate's window, so it compresses far from any ratio limit: it tests the parse.
 */
export function denseDocument ({ kind, records, recordBytes, seed = 13 }) {
  const element = DENSE_KINDS[kind]
  if (!element) throw new TypeError(`dense kind must be one of ${Object.keys(DENSE_KINDS).join(', ')}, got ${kind}`)
  const width = Buffer.byteLength(element(1)) + 1
  // n elements, n - 1 commas and two brackets fit in recordBytes
  const elements = Math.max(1, Math.floor((recordBytes - 1) / width))
  const digit = seededDigits(seed)
  const unitCount = Math.max(1, Math.floor(PIECE / width))
  let text = ''
  for (let k = 0; k < unitCount; k++) text += element(digit()) + ','
  const unit = Buffer.from(text)
  const fullUnits = Math.floor((elements - 1) / unitCount)
  const tail = unit.subarray(0, ((elements - 1) % unitCount) * width)
  const last = Buffer.from(element(digit()) + ']')
  const recordLength = 1 + fullUnits * unit.length + tail.length + last.length
  function * pieces () {
    yield Buffer.from('{"items":[')
    for (let r = 0; r < records; r++) {
      yield Buffer.from(r === 0 ? '[' : ',[')
      for (let u = 0; u < fullUnits; u++) yield unit
      if (tail.length > 0) yield tail
      yield last
    }
    yield Buffer.from(']}')
  }
  return {
    stream: fromPieces(pieces()),
    inflatedBytes: 12 + records * recordLength + (records - 1),
    elementsPerRecord: elements
  }
}

/** Exactly `bytes` bytes of one random 64 KiB piece, repeated: costs the sender nothing, and nothing on the way can shrink it. */
export function repeatedBytes (bytes) {
  const piece = randomFillSync(Buffer.allocUnsafe(PIECE))
  function * pieces () {
    for (let sent = 0; sent < bytes; sent += PIECE) yield bytes - sent >= PIECE ? piece : piece.subarray(0, bytes - sent)
  }
  return fromPieces(pieces())
}

/**
 * Write the first `bytes` bytes of a gzipped generated document to `file` (an abandoned upload's body),
 * once before the attack, so that each client costs a file read, not a gzip; answers the bytes written.
 */
export async function writeGzipPrefix (file, bytes) {
  const handle = await fs.promises.open(file, 'w')
  const enough = new Error('prefix written')
  let written = 0
  const sink = new Writable({
    write: function keepPrefix (chunk, encoding, callback) {
      const piece = chunk.subarray(0, bytes - written)
      handle.write(piece).then(function wrote () {
        written += piece.length
        // an error is how a pipeline is told to stop making the rest
        callback(written >= bytes ? enough : null)
      }, callback)
    }
  })
  // about 4.6:1, so eight times the bytes is more than enough document
  const { json, gzip } = createGzipStream({ bytes: bytes * 8 })
  try {
    await pipeline(json, gzip, sink)
  } catch (err) {
    if (err !== enough) throw err
  } finally {
    await handle.close()
  }
  return written
}

/** A generated document of `items` items, gzipped, whole: the normal request is small, made once and sent from memory. */
export async function smallGoodBody (items) {
  const { json, gzip } = createGzipStream({ size: items })
  const collected = buffer(gzip)
  await pipeline(json, gzip)
  return collected
}

/** A tiny valid /good body, gzipped, for the drip clients to send one byte at a time. */
export function tinyGoodBody () {
  return zlib.gzipSync(JSON.stringify({ items: [{ id: 1, numbers: [3, 7] }, { id: 2, numbers: [1] }] }))
}
