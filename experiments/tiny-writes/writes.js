/**
 * Many tiny writes vs coalesced ones on a TCP socket, each way honouring 'drain': `per-byte` (a write per byte, each
 * maybe its own system call), `cork` (the same writes, uncorked every `batch` bytes into one writev) and `coalesce`
 * (a `batch`-byte Buffer written when full, as .NET's BufferedStream). Byte k is k mod 256: the sink checks order.
 */

export const TINY_MODES = Object.freeze(['per-byte', 'cork', 'coalesce'])

/** Batch sizes a sweep visits below the chosen one. */
export const BATCH_STEPS = Object.freeze([16, 256, 4096, 65536])

const PATTERN = Buffer.from(Array.from({ length: 256 }, function byteAt (_, k) { return k }))
// one-byte views made once: the per-byte mode measures writes, not allocations
const ONE_BYTE = Array.from({ length: 256 }, function view (_, k) { return PATTERN.subarray(k, k + 1) })

/** A fixed-size Buffer in front of a socket, written only when full (or flushed): N byte writes become N / size socket writes. */
class CoalescingWriter {
  constructor (socket, size) {
    this.socket = socket
    this.size = size
    this.buffer = Buffer.allocUnsafe(size)
    this.used = 0
    this.writes = 0
  }

  /** Add one byte; false when the socket asks the caller to wait for 'drain'. */
  writeByte (value) {
    this.buffer[this.used++] = value
    return this.used === this.size ? this.flush() : true
  }

  /** Write what has been gathered; false when the socket asks the caller to wait for 'drain'. */
  flush () {
    if (this.used === 0) return true
    const chunk = this.used === this.size ? this.buffer : this.buffer.subarray(0, this.used)
    // the written Buffer belongs to the socket until it is sent: gather into a new one
    this.buffer = Buffer.allocUnsafe(this.size)
    this.used = 0
    this.writes++
    return this.socket.write(chunk)
  }
}

/** Send `bytes` bytes (k mod 256) on a connected socket, one of three ways, without ending it; the socket.write() calls made. */
export async function sendBytes (socket, { bytes, mode, batch }) {
  if (mode === 'per-byte') {
    for (let k = 0; k < bytes; k++) {
      if (!socket.write(ONE_BYTE[k & 255])) await drained(socket)
    }
    return { writeCalls: bytes }
  }
  if (mode === 'cork') {
    let k = 0
    while (k < bytes) {
      const end = Math.min(bytes, k + batch)
      socket.cork()
      // write() says false past the socket's highWaterMark; corked, the batch is finished first on purpose
      for (; k < end; k++) socket.write(ONE_BYTE[k & 255])
      socket.uncork()
      if (socket.writableNeedDrain) await drained(socket)
    }
    return { writeCalls: bytes }
  }
  if (mode === 'coalesce') {
    const writer = new CoalescingWriter(socket, batch)
    for (let k = 0; k < bytes; k++) {
      if (!writer.writeByte(k & 255)) await drained(socket)
    }
    if (!writer.flush()) await drained(socket)
    return { writeCalls: writer.writes }
  }
  throw new TypeError(`mode must be one of ${TINY_MODES.join(', ')}, got ${mode}`)
}

/** Resolves on 'drain'; rejects if the socket fails or closes first. Leaves no listener behind. */
function drained (socket) {
  return new Promise(function waitForDrain (resolve, reject) {
    function settle (err) {
      socket.off('drain', settle).off('error', settle).off('close', onClose)
      if (err) reject(err)
      else resolve()
    }
    function onClose () { settle(new Error('the socket closed before it drained')) }
    socket.on('drain', settle).on('error', settle).on('close', onClose)
  })
}

/** The byte sucker's side of one connection: count bytes to the end, checking their order, then answer `{ bytes, inOrder, reads }`. */
export async function suckBytes (socket) {
  let bytes = 0
  let reads = 0
  let inOrder = true
  let tally = null
  try {
    await readToEnd(socket, function onData (chunk) {
      reads++
      if (inOrder) {
        for (let i = 0; i < chunk.length; i++) {
          if (chunk[i] !== ((bytes + i) & 255)) {
            inOrder = false
            break
          }
        }
      }
      bytes += chunk.length
    }, function answer () {
      // at once, in 'end': a socket that is not half-open ends its side right after it
      tally = { bytes, inOrder, reads }
      socket.end(JSON.stringify(tally) + '\n')
    })
  } catch (err) {
    socket.destroy()
    throw err
  }
  return tally
}

/** Read a socket to its end, each chunk to `onChunk`, `atEnd()` in the 'end' event itself; leaves no listener behind. */
export function readToEnd (socket, onChunk, atEnd = function nothing () {}) {
  return new Promise(function untilEnd (resolve, reject) {
    function settle (err) {
      socket.off('data', onChunk).off('end', settle).off('error', settle)
      if (err) return reject(err)
      atEnd()
      resolve()
    }
    socket.on('data', onChunk).on('end', settle).on('error', settle)
  })
}
