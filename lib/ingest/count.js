/**
 * The body's counters, part of stage 3 (lib/ingest/README.md): compressed bytes against
 * `limits.compressed`; inflated bytes against `limits.inflated` and the expansion ratio, with the
 * sha256 every summary carries. A counter passes chunks through for `pipeline`, and `count`s bytes
 * held whole with the same check.
 */
import { Transform } from 'node:stream'
import { createHash } from 'node:crypto'
import { compressedTooLarge, inflatedTooLarge, ratioTooLarge } from '../errors/index.js'

/**
 * A pass-through that counts bytes and fails the moment `check(total, chunk)` says so; with `hash`,
 * it digests them too, the hex digest its property of that name (`sha256`) once all are counted.
 */
function countingStream (check, hash) {
  const digest = hash ? createHash(hash) : null
  const counter = new Transform({
    transform: function countChunk (chunk, encoding, callback) {
      const error = counter.count(chunk)
      if (error) callback(error)
      else callback(null, chunk)
    }
  })
  counter.bytes = 0
  /** Count (and, when the check passes, digest) bytes held whole: the check's verdict. */
  counter.count = function countBytes (chunk) {
    counter.bytes += chunk.length
    const error = check(counter.bytes, chunk)
    if (error) return error
    if (digest) digest.update(chunk)
    return null
  }
  if (digest) {
    let hex = null
    Object.defineProperty(counter, hash, { get: function hexDigest () { return (hex ??= digest.digest('hex')) } })
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
 * Counts and digests inflated bytes; fails past the inflated limit, or past the expansion ratio once
 * `ratioAfter` bytes are out (small bodies of repetitive JSON compress well too, and must pass).
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
