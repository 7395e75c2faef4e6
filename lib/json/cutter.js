/**
 * The record scanner with a WebAssembly SIMD cutter in front (cutter.wat, built to cutter.wasm by
 * `npm run build:wasm`): inside the records array the cutter reads 64 bytes at a time and hands
 * the scanner's batches over whole, so the main thread does not walk the records byte by byte.
 * The scanner (records.js) stays the reference: it reads the head and the tail of a document,
 * each record that crosses a chunk, and whatever the cutter stops at; the cutter only follows
 * records the scanner would pass without a word, and ends batches where the scanner would, with
 * the same bound on their parse cost. A runtime without WebAssembly SIMD keeps the scanner alone.
 */
import fs from 'node:fs'
import { RecordScanner } from './records.js'
import { S_AFTER_RECORD, V_RECORD } from './scanner-states.js'

const BINARY = new URL('./cutter.wasm', import.meta.url)
/** Events the cutter may write per call, four i32s each, at the start of its memory. */
const EVENT_ROOM = 4096
const EVENTS = 0
/** Bytes of a chunk copied into the cutter's memory at once, and the 64 it may read past them. */
const WINDOW = 256 * 1024
const DATA = EVENT_ROOM * 16
const PAST = 64
/** A window with fewer bytes left than this is copied again from where the scanner stands. */
const WINDOW_REST = 4096
const EVENT_START = 1
const BATCH_LIMIT = 2 ** 30
/** The deepest nesting the cutter takes as an i32: no limit (Infinity) would reach it as 0 and stop it at every bracket. */
const DEPTH_LIMIT = 2 ** 31 - 1

let loaded = null

/** The cutter's instance, or false where WebAssembly SIMD is missing (said once on stderr through `warn`). */
export function loadCutter (wasm = globalThis.WebAssembly, warn = console.warn) {
  if (loaded !== null) return loaded
  const bytes = fs.readFileSync(BINARY)
  if (wasm === undefined || !wasm.validate(bytes)) {
    warn('streamlab: no WebAssembly SIMD in this runtime: /good finds its records with the record scanner alone')
    loaded = false
    return loaded
  }
  const { exports } = new wasm.Instance(new wasm.Module(bytes))
  const pages = Math.ceil((DATA + WINDOW + PAST) / 65536) - exports.memory.buffer.byteLength / 65536
  if (pages > 0) exports.memory.grow(pages)
  loaded = { exports, u8: new Uint8Array(exports.memory.buffer), i32: new Int32Array(exports.memory.buffer) }
  return loaded
}

/** Forget the loaded cutter (specs that load it with another WebAssembly). */
export function unloadCutter () {
  loaded = null
}

/** A RecordScanner (same options, batches and errors) whose records array the cutter follows where it can. */
export class CuttingScanner extends RecordScanner {
  constructor (format, options) {
    super(format, options)
    this.cutter = loadCutter()
    // the window of the chunk now in the cutter's memory
    this.window = { chunk: null, start: 0, end: 0 }
  }

  write (chunk) {
    if (this.cutter === false) return super.write(chunk)
    const n = chunk.length
    try {
      if (this.batchStart !== -1) this.batchChunkStart = 0
      let i = 0
      while (i < n) {
        if (this.state === S_AFTER_RECORD) {
          const to = this.follow(chunk, i)
          // nothing followed: the scanner reads the rest of the chunk alone
          i = to === i ? this.scanChunk(chunk, i, false) : to
        } else {
          i = this.scanChunk(chunk, i, true)
        }
      }
      this.keepTail(chunk)
    } catch (err) {
      this.flushCompleted(chunk)
      throw err
    }
    this.offset += n
  }

  /** Copy the chunk's bytes from index i into the cutter's memory, unless they are there. */
  windowFrom (chunk, i) {
    const w = this.window
    if (w.chunk === chunk && i >= w.start && (w.end - i >= WINDOW_REST || w.end === chunk.length)) return w
    const { u8 } = this.cutter
    w.chunk = chunk
    w.start = i
    w.end = Math.min(chunk.length, i + WINDOW)
    u8.set(chunk.subarray(i, w.end), DATA)
    u8.fill(0, DATA + w.end - i, DATA + w.end - i + PAST)
    return w
  }

  /**
   * The cutter from index i of chunk, just after a record: its batches go out as the scanner's would, and
   * the scanner is left where it would be after the last record followed. Returns the index after it.
   */
  follow (chunk, i) {
    const w = this.windowFrom(chunk, i)
    const { exports, i32 } = this.cutter
    const ptr = DATA + i - w.start
    const batch = Math.min(this.batchBytes, BATCH_LIMIT)
    const target = this.batchStart === -1 ? -1 : ptr + this.batchStart + batch - (this.offset + i)
    const depth = Math.min(this.maxInnerDepth, DEPTH_LIMIT)
    // no further than the record limit: a record the cutter ends is within it, a longer one the scanner's
    const span = Math.min(w.end - i, this.maxValueBytes)
    const followed = exports.cut(ptr, span, target, batch, depth, EVENTS, EVENT_ROOM)
    if (followed === 0) return i
    const events = exports.events.value
    // string bytes and brackets counted from ptr where the batch being gathered began
    let fromStrings = 0
    let fromOpens = 0
    for (let e = 0; e < events; e++) {
      const at = EVENTS / 4 + e * 4
      const index = i + i32[at + 1] - ptr
      if (i32[at] === EVENT_START) {
        this.batchStart = this.offset + index
        this.batchChunkStart = index
        this.batchKind = V_RECORD
      } else {
        this.stringBytes += i32[at + 2] - fromStrings
        this.opens += i32[at + 3] - fromOpens
        this.lastValueEnd = this.offset + index
        this.flush(chunk, index, this.offset + index)
      }
      fromStrings = i32[at + 2]
      fromOpens = i32[at + 3]
    }
    if (this.batchStart !== -1) {
      this.stringBytes += exports.strings.value - fromStrings
      this.opens += exports.opens.value - fromOpens
    }
    this.lastValueEnd = this.offset + i + followed
    this.scalar = false
    return i + followed
  }
}
