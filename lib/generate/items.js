// A deterministic, seeded generator of the lab's JSON documents, made lazily as they are read: a seeded
// mulberry32, timestamps from the item id, items written straight into ~64 KiB Buffers to outrun gzip.
import { Readable } from 'node:stream'
import zlib from 'node:zlib'
import { badParameter } from '../errors/index.js'
import { integerParam } from '../config/integers.js'
import { DEFAULTS } from '../config/options.js'
import { parseByteSize } from '../util/units.js'

export const FORMATS = Object.freeze(['json', 'array', 'ndjson'])

/** The fixed names `?save=1` and the CLI write: client input never becomes a path. */
export const SAVE_FILE_NAMES = Object.freeze({
  json: 'test.json.gz',
  array: 'test-array.json.gz',
  ndjson: 'test.ndjson.gz'
})

const MAX_SEED = 0xFFFFFFFF
const CHUNK_BYTES = 64 * 1024
/** Room after CHUNK_BYTES for the item that crosses it (items are under 1 KiB). */
const CHUNK_SLACK = 4096
const BASE_EPOCH = Date.UTC(2024, 0, 1)
const DAY_MS = 24 * 60 * 60 * 1000

// Four characters each (12 UTF-8 bytes), so ~10 repeats keep items near 430 bytes.
const CJK_PHRASES = Object.freeze([
  '数据处理', '内存测试', '压缩解压', '千里之行', '温故知新', '明月清风', '春眠觉晓', '黄河入海',
  '東京天気', '世界平和', '日本語文', '一期一会', '花鳥風月', '스트리밍', '메모리값', '압축해제'
])

// JSON text written as it must appear on the wire: each note holds the escapes \" \\ \n and
// \u00e9 literally, plus raw 2-byte (é), 3-byte (CJK) and 4-byte (emoji) UTF-8.
const NOTES = Object.freeze([
  String.raw`"note":"She said \"hi\" \\ then left.\nCaf\u00e9 au lait = café, 東京, 😀"`,
  String.raw`"note":"path C:\\lab\\data is \"quoted\"\nna\u00efve \u00e9t\u00e9 = naïve été, 数据 😀"`,
  String.raw`"note":"back\\slash and \"quotes\"\nr\u00e9sum\u00e9 vs résumé, こんにちは 😀🎉"`,
  String.raw`"note":"{\"nested\": \"json in a string\"}\n\u00e9 escaped, é raw, 한국어, 🚀"`
])

// Item text that never changes is encoded to UTF-8 once; per item only digits are written.
const DATA_PIECES = Object.freeze(CJK_PHRASES.flatMap(function repeatPhrase (phrase) {
  // Each phrase repeated 9, 10 or 11 times: "CJK text repeated ~10x".
  return [9, 10, 11].map(function dataPiece (times) {
    return Buffer.from(`"data":"${phrase.repeat(times)}",`)
  })
}))
const NOTE_PIECES = Object.freeze(NOTES.map(function notePiece (note) {
  return Buffer.from(`${note},"numbers":[`)
}))
const ID_OPEN = Buffer.from('{"id":')
const ITEM_CLOSE = Buffer.from(']}')
const TIMESTAMP_CLOSE = Buffer.from('Z",')
const COMMA = 0x2C
const MINUS = 0x2D
const DOT = 0x2E
const COLON = 0x3A
const ZERO = 0x30
const NEWLINE = 0x0A

/** Write `value` as exactly `width` decimal digits, zero-padded; returns the new offset. */
function writeDigits (buffer, offset, value, width) {
  for (let i = offset + width - 1; i >= offset; i--) {
    buffer[i] = ZERO + value % 10
    value = Math.floor(value / 10)
  }
  return offset + width
}

/** Write a non-negative integer in decimal; returns the new offset. */
function writeInteger (buffer, offset, value) {
  let width = 1
  for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) width++
  return writeDigits(buffer, offset, value, width)
}

/** mulberry32: a tiny, fast 32-bit PRNG, the same everywhere; returns the next unsigned 32-bit integer. */
function mulberry32 (seed) {
  let state = seed >>> 0
  return function nextUint32 () {
    state = (state + 0x6D2B79F5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return (t ^ (t >>> 14)) >>> 0
  }
}

/** Check stream parameters given as numbers (normalizeGenerateParams makes them from strings). */
function checkStreamParams (params = {}) {
  if (params === null || typeof params !== 'object') throw new TypeError('params must be an object')
  const { format = 'json', seed = 1, level = 6 } = params
  let { size = null, bytes = null } = params
  if (size !== null && bytes !== null) throw new TypeError('give size or bytes, not both')
  if (size === null && bytes === null) size = DEFAULTS.generate.defaultSize
  if (size !== null && !(Number.isSafeInteger(size) && size >= 0)) {
    throw new TypeError(`size must be an integer >= 0, got ${size}`)
  }
  if (bytes !== null && !(Number.isSafeInteger(bytes) && bytes >= 1)) {
    throw new TypeError(`bytes must be an integer >= 1, got ${bytes}`)
  }
  if (!FORMATS.includes(format)) throw new TypeError(`format must be one of ${FORMATS.join(', ')}, got ${format}`)
  if (!(Number.isInteger(seed) && seed >= 0 && seed <= MAX_SEED)) {
    throw new TypeError(`seed must be an integer from 0 to ${MAX_SEED}, got ${seed}`)
  }
  if (!(Number.isInteger(level) && level >= 0 && level <= 9)) {
    throw new TypeError(`level must be an integer from 0 to 9, got ${level}`)
  }
  return { size, bytes, format, seed, level }
}

/** A Readable of generated JSON text; `items` and `bytes` count what has been made so far. */
class ItemsJsonStream extends Readable {
  #size
  #target
  #format
  #random
  #prefix
  #suffix
  #started = false
  #finished = false
  #day = -1
  #timestampOpen = null

  constructor (params) {
    super({ highWaterMark: CHUNK_BYTES })
    const { size, bytes, format, seed } = params
    this.params = Object.freeze({ ...params })
    /** Items made so far. */
    this.items = 0
    /** Inflated (UTF-8) bytes made so far. */
    this.bytes = 0
    this.#size = size
    this.#target = bytes
    this.#format = format
    this.#random = mulberry32(seed)
    // No newline anywhere in json/array output, so a detector never mistakes its first line for NDJSON.
    this.#prefix = format === 'json'
      ? `{"meta":{"generator":"streamlab","format":"json","seed":${seed}},"items":[`
      : format === 'array' ? '[' : ''
    this.#suffix = format === 'json' ? ']}' : format === 'array' ? ']' : ''
  }

  /** Make one chunk only when asked: this is what keeps memory flat for a 10 GB document. */
  _read () {
    const chunk = this.#nextChunk()
    if (chunk.length > 0) this.push(chunk)
    if (this.#finished) this.push(null)
  }

  /** Fill a Buffer to CHUNK_BYTES: fixed text copied as ready-made UTF-8, only digits written byte by byte. */
  #nextChunk () {
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES + CHUNK_SLACK)
    const ndjson = this.#format === 'ndjson'
    const random = this.#random
    let offset = 0
    if (!this.#started) {
      this.#started = true
      offset = chunk.write(this.#prefix, 0, 'utf8')
    }
    while (offset < CHUNK_BYTES) {
      if (this.#reachedEnd(this.bytes + offset)) {
        offset += chunk.write(this.#suffix, offset, 'utf8')
        this.#finished = true
        break
      }
      const id = ++this.items
      if (id > 1 && !ndjson) chunk[offset++] = COMMA
      chunk.set(ID_OPEN, offset)
      offset = writeInteger(chunk, offset + ID_OPEN.length, id)
      offset = this.#writeTimestamp(chunk, offset, id)
      const data = DATA_PIECES[random() % DATA_PIECES.length]
      chunk.set(data, offset)
      offset += data.length
      const note = NOTE_PIECES[random() % NOTE_PIECES.length]
      chunk.set(note, offset)
      offset += note.length
      for (let i = 0; i < 10; i++) {
        if (i > 0) chunk[offset++] = COMMA
        offset = writeNumber(chunk, offset, random(), random(), random())
      }
      chunk.set(ITEM_CLOSE, offset)
      offset += ITEM_CLOSE.length
      if (ndjson) chunk[offset++] = NEWLINE
    }
    this.bytes += offset
    return chunk.subarray(0, offset)
  }

  #reachedEnd (bytesSoFar) {
    if (this.#target === null) return this.items >= this.#size
    return this.items > 0 && bytesSoFar >= this.#target
  }

  /** `,"timestamp":"2024-01-01T00:00:01.919Z",`: a fixed base plus an id-dependent offset, never the clock. */
  #writeTimestamp (buffer, offset, id) {
    const ms = BASE_EPOCH + id * 1000 + (id * 7919) % 1000
    const day = Math.floor(ms / DAY_MS)
    if (day !== this.#day) {
      this.#day = day
      this.#timestampOpen = Buffer.from(`,"timestamp":"${new Date(day * DAY_MS).toISOString().slice(0, 11)}`)
    }
    buffer.set(this.#timestampOpen, offset)
    offset += this.#timestampOpen.length
    let rest = ms - day * DAY_MS
    const millis = rest % 1000
    rest = (rest - millis) / 1000
    const seconds = rest % 60
    rest = (rest - seconds) / 60
    const minutes = rest % 60
    offset = writeDigits(buffer, offset, (rest - minutes) / 60, 2)
    buffer[offset++] = COLON
    offset = writeDigits(buffer, offset, minutes, 2)
    buffer[offset++] = COLON
    offset = writeDigits(buffer, offset, seconds, 2)
    buffer[offset++] = DOT
    offset = writeDigits(buffer, offset, millis, 3)
    buffer.set(TIMESTAMP_CLOSE, offset)
    return offset + TIMESTAMP_CLOSE.length
  }
}

/**
 * Write a float like -523.1234567891 from three random words: ten random fraction digits give gzip the ratio of
 * real data (docs/sources.md); trailing zeros are dropped, as in a float's shortest form.
 */
function writeNumber (buffer, offset, a, b, c) {
  if (a & 1) buffer[offset++] = MINUS
  offset = writeInteger(buffer, offset, (a >>> 1) % 1000)
  buffer[offset++] = DOT
  offset = writeDigits(buffer, offset, b % 10000, 4)
  offset = writeDigits(buffer, offset, (b >>> 14) % 1000, 3)
  let last = c % 1000
  if (last === 0) return offset
  let width = 3
  while (last % 10 === 0) {
    last /= 10
    width--
  }
  return writeDigits(buffer, offset, last, width)
}

/**
 * A readable stream of generated JSON text (~64 KiB Buffers), made as it is read; `stream.items` and
 * `stream.bytes` count what it made. `size` items, or about `bytes`; format json, array or ndjson; seed 1.
 */
export function createJsonStream (params) {
  return new ItemsJsonStream(checkStreamParams(params))
}

/** The generated JSON and a gzip stream (`level`, default 6) for `pipeline(json, gzip, destination)`. */
export function createGzipStream (params) {
  const checked = checkStreamParams(params)
  return {
    json: new ItemsJsonStream(checked),
    gzip: zlib.createGzip({ level: checked.level, chunkSize: CHUNK_BYTES })
  }
}

/** The download name: `streamlab-json-10000-seed1.json.gz`, or `streamlab-ndjson-500000000B-seed1.ndjson.gz`. */
export function downloadFileName ({ format, size, bytes, seed }) {
  const amount = bytes === null || bytes === undefined ? String(size) : `${bytes}B`
  const extension = format === 'ndjson' ? 'ndjson.gz' : 'json.gz'
  return `streamlab-${format}-${amount}-seed${seed}.${extension}`
}

/**
 * Generator parameters from strings (`req.query`, CLI flags) within `limits` (`opts.generate`): exactly one of
 * size and bytes is a number. Unknown ones are ignored; 400 parameter.invalid names a bad one.
 */
export function normalizeGenerateParams (query = {}, limits = DEFAULTS.generate) {
  const q = query ?? {}
  const hasSize = q.size !== undefined
  const hasBytes = q.bytes !== undefined
  const size = hasSize
    ? integerParam('size', q.size, 0, limits.maxItems, `an integer from 0 to ${limits.maxItems}`)
    : null
  const bytes = hasBytes ? byteSizeParam(q.bytes, limits.maxBytes) : null
  if (hasSize && hasBytes) throw badParameter('bytes', q.bytes, 'either size or bytes, not both')
  return Object.freeze({
    size: hasBytes ? null : (size ?? limits.defaultSize),
    bytes,
    format: q.format === undefined ? 'json' : formatParam(q.format),
    seed: q.seed === undefined
      ? 1
      : integerParam('seed', q.seed, 0, MAX_SEED, `an integer from 0 to ${MAX_SEED}`),
    level: q.level === undefined ? 6 : integerParam('level', q.level, 0, 9, 'a gzip level from 0 to 9'),
    save: q.save === undefined ? false : booleanParam('save', q.save)
  })
}

/** Query values are strings; numbers are accepted for callers that already have them. */
function asText (value) {
  return typeof value === 'number' && Number.isFinite(value) ? String(value) : value
}

function byteSizeParam (value, max) {
  const allowed = `a byte size from 1 to ${max} bytes, e.g. 500MB or 1.5GiB`
  let bytes
  try {
    bytes = parseByteSize(asText(value))
  } catch {
    throw badParameter('bytes', value, allowed)
  }
  if (bytes < 1 || bytes > max) throw badParameter('bytes', value, allowed)
  return bytes
}

function formatParam (value) {
  if (!FORMATS.includes(value)) throw badParameter('format', value, `one of ${FORMATS.join(', ')}`)
  return value
}

function booleanParam (name, value) {
  if (value === '1' || value === 'true' || value === true) return true
  if (value === '0' || value === 'false' || value === false) return false
  throw badParameter(name, value, 'one of 1, true, 0, false')
}
