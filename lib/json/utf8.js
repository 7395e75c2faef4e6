/**
 * UTF-8 text for JSON.parse in the parse threads: well-formed UTF-8 decoded in WebAssembly
 * (utf8.wat, built to utf8.wasm by `npm run build:wasm`), a few times cheaper than
 * Buffer#toString on text far from ASCII. Anything else is Buffer#toString's, so every
 * replacement character is where it always was: malformed bytes, a batch past DECODE_MOST,
 * a runtime without WebAssembly SIMD.
 */
import fs from 'node:fs'

const BINARY = new URL('./utf8.wasm', import.meta.url)
/** Larger batches (a batch is 64 KiB but for one long record) are Buffer#toString's: the memory stays under 1 MiB. */
const DECODE_MOST = 256 * 1024
/** Smaller ones too: the copy in and out costs more than it saves. */
const DECODE_LEAST = 256
const ROOM = 3 * DECODE_MOST + 64

let loaded = null

/** The decoder's instance in this thread, or false without WebAssembly SIMD. */
function loadDecoder () {
  const bytes = fs.readFileSync(BINARY)
  if (globalThis.WebAssembly === undefined || !WebAssembly.validate(bytes)) return false
  const { exports } = new WebAssembly.Instance(new WebAssembly.Module(bytes))
  exports.memory.grow(Math.ceil(ROOM / 65536) - exports.memory.buffer.byteLength / 65536)
  return { exports, memory: Buffer.from(exports.memory.buffer) }
}

/**
 * The text of UTF-8 bytes, as `buf.toString('utf8')` gives it.
 * @param {Buffer} buf
 * @returns {string}
 */
export function decodeUtf8 (buf) {
  const n = buf.length
  if (n < DECODE_LEAST || n > DECODE_MOST) return buf.toString('utf8')
  if (loaded === null) loaded = loadDecoder()
  if (loaded === false) return buf.toString('utf8')
  const { exports, memory } = loaded
  memory.set(buf, 0)
  const dst = (n + 16) & ~15
  const units = exports.decode(0, n, dst)
  if (units < 0) return buf.toString('utf8')
  // all ASCII: a one-byte string, as Buffer#toString makes it
  if (units === n) return buf.toString('latin1')
  return memory.toString('utf16le', dst, dst + 2 * units)
}
