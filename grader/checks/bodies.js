/** The bodies the checks send, each drawn from the run's seed (`withSeed`): no handler can table them; `--seed N` repeats them. */
import { AsyncLocalStorage } from 'node:async_hooks'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { Readable } from 'node:stream'
import zlib from 'node:zlib'
import { ensureInput } from '../../lib/measure/inputs.js'
import { createJsonStream } from '../../lib/generate/items.js'
import { referenceOf, referenceOfGenerated } from './reference.js'

/** gzip's default inflate chunk: where a handler's chunks end unless it chose otherwise. */
const INFLATE_CHUNK = 16 * 1024

/** The seed of documents made outside a grading run (a spec, a script). */
const SEED_OUTSIDE_A_RUN = 1

/** The two ways a body is sent: whole with its Content-Length, or chunked without one. */
export const FRAMINGS = Object.freeze(['length', 'chunked'])
export const FRAMING_LABELS = Object.freeze({ length: 'with Content-Length', chunked: 'chunked, no Content-Length' })

const runSeed = new AsyncLocalStorage()

/** Run `fn` with `seed`: documents made anywhere below it draw from that seed; two runs in one process keep their own. */
export function withSeed (seed, fn) {
  return runSeed.run(seed, fn)
}

function currentSeed () {
  return runSeed.getStore() ?? SEED_OUTSIDE_A_RUN
}

/** A `(min, max) => whole number` draw: the same seed and label give the same sequence. */
function seededDraws (seed, label) {
  let counter = 0
  return function draw (min, max) {
    const digest = createHash('sha256').update(`${seed}:${label}:${counter++}`).digest()
    return min + Number(digest.readBigUInt64BE(0) % BigInt(max - min + 1))
  }
}

function gzip (text, level = 6) {
  return zlib.gzipSync(Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8'), { level })
}

function body (name, json, level = 6) {
  const bytes = Buffer.from(json, 'utf8')
  return Object.freeze({ name, json: bytes, gzip: gzip(bytes, level), reference: referenceOf(bytes) })
}

/** A body as client.js `send` takes it: whole with its Content-Length, or chunked; `writes` sends it in pieces. */
export function framed (buffer, framing, writes = null) {
  if (framing === 'length') return writes === null ? { buffer } : { buffer, writes }
  const source = writes === null ? [buffer] : inPieces(buffer, writes)
  return { streams: [Readable.from(source, { objectMode: false })] }
}

/** A generated document's file as the client sends it: streamed from disk, with or without its Content-Length. */
export function framedFile (file, framing) {
  return framing === 'length' ? { file } : { streams: [fs.createReadStream(file)] }
}

/** Pieces of `min` to `max` bytes in a fixed pattern of sizes, a macrotask apart. */
async function * inPieces (buffer, { min, max }) {
  let at = 0
  let turn = 0
  while (at < buffer.length) {
    const size = min + (turn++ * 7919) % (max - min + 1)
    yield buffer.subarray(at, at + size)
    at += size
    await new Promise(function nextMacrotask (resolve) { setImmediate(resolve) })
  }
}

/** Record look-alikes: `"id":`, `},{`, `]}` inside strings, nested ids, "items" below the top. 50 to 70 records. */
export function lookalikeStrings (seed = currentSeed()) {
  const draw = seededDraws(seed, 'lookalikes')
  const count = draw(50, 70)
  const first = draw(1, 5000)
  const turn = draw(0, 3)
  const records = []
  for (let k = 0; k < count; k++) {
    const id = first + k
    const decoys = [
      { id, text: `"id":${id * 100} and },{"id":${id + 1}},{ then ]} and ]}]}` },
      { id, child: { id: id * 1000, items: [{ id: 1 }, { id: 2 }] }, s: '{"id":5},{"id":6}' },
      { id, list: [{ id: 7 }, { id: 8 }], end: ']}', start: '{"items":[' },
      { note: '},{', id, tail: '"id":1' }
    ]
    records.push(decoys[(k + turn) % decoys.length])
  }
  return body('strings that look like records', JSON.stringify({ meta: { about: 'lookalikes' }, items: records }))
}

/** Escapes: `\\"`, a trailing backslash, `\u0022`, `\u007b`, a surrogate pair, the key `"i\u0064"`. 40 to 56 records. */
export function escapes (seed = currentSeed()) {
  const draw = seededDraws(seed, 'escapes')
  const count = draw(40, 56)
  const first = draw(1, 5000)
  const records = []
  const strings = [
    String.raw`"she said \"}]{\" twice"`,
    String.raw`"ends in a backslash \\"`,
    String.raw`"\\\"},{\"id\":99"`,
    String.raw`"\u0022},{\u0022id\u0022:5,\u0022x\u0022:\u007b"`,
    String.raw`"slash \/ tab \t newline \n \ud83d\ude00"`,
    String.raw`"\\\\\\"`
  ]
  for (let k = 0; k < count; k++) {
    const id = first + k
    const key = id % 4 === 0 ? String.raw`"i\u0064"` : '"id"'
    records.push(`{${key}:${id},"s":${strings[id % strings.length]},"t":${strings[(id + 1) % strings.length]}}`)
  }
  return body('escapes', `{"items":[${records.join(',')}]}`)
}

/** Multi-byte UTF-8 in values and keys, drawn so at least two gunzip chunk ends fall inside characters. About 100 KB. */
export function multiByte (seed = currentSeed()) {
  const draw = seededDraws(seed, 'multi-byte')
  const pieces = ['é', '東京', '😀', 'ß', '한국어', '🚀🎉', 'ü']
  for (let attempt = 0; attempt < 20; attempt++) {
    const first = draw(1, 5000)
    let id = first - 1
    let json = '{"items":['
    while (Buffer.byteLength(json) < 6 * INFLATE_CHUNK) {
      id++
      const text = pieces[id % pieces.length].repeat(draw(40, 89))
      const record = `{"id":${id},"名前":"${text}","emoji":"${'😀'.repeat(draw(0, 8))}"}`
      json += (id > first ? ',' : '') + record
    }
    json += ']}'
    const made = body('multi-byte characters split across chunks', json)
    // the point of the document: chunk ends fall inside characters (UTF-8 continuation bytes)
    const splits = [1, 2, 3, 4, 5].filter(function insideCharacter (k) { return (made.json[k * INFLATE_CHUNK] & 0xC0) === 0x80 })
    if (splits.length >= 2) return made
  }
  throw new Error(`multiByte: seed ${seed} drew no document with two chunk ends inside a character in 20 attempts`)
}

/** Layout: tabs and CRLF, keys around `items`, id-bearing arrays elsewhere, an "items" in `meta` first. 30 to 50 records. */
export function layout (seed = currentSeed()) {
  const draw = seededDraws(seed, 'layout')
  const count = draw(30, 50)
  const first = draw(1, 5000)
  const items = []
  for (let k = 0; k < count; k++) items.push({ id: (first + k) * 3, name: `n${first + k}`, tags: ['items', '"id":1'], nested: { id: 5 } })
  const doc = {
    tags: [{ id: 100 }, { id: 200 }],
    meta: { items: [{ id: 999 }, { id: 998 }], note: 'items' },
    items,
    after: { items: [{ id: 1 }] }
  }
  const json = JSON.stringify(doc, null, '\t').replace(/\n/g, '\r\n')
  return body('layout: whitespace, other keys and arrays around items', json)
}

/** Values that are not JSON, for the record that does not parse. */
const NOT_JSON = Object.freeze(['tru', 'nul', '01', '+1', '.5', "'x'", '[1,2', '{"a"}'])

/** A record that does not parse, among 3 to 8 good ones, inside perfectly good gzip. */
export function brokenRecord (seed = currentSeed()) {
  const draw = seededDraws(seed, 'broken record')
  const count = draw(3, 8)
  const broken = draw(1, count - 1)
  const bad = NOT_JSON[draw(0, NOT_JSON.length - 1)]
  const records = []
  for (let k = 0; k < count; k++) records.push(k === broken ? `{"id":${k + 1},"b":${bad}}` : `{"id":${k + 1},"a":[1,2]}`)
  const json = `{"items":[${records.join(',')}]}`
  return Object.freeze({ name: 'a record that does not parse', json: Buffer.from(json), gzip: gzip(json) })
}

/** The same document, cut into gzip members at `parts` places (inside records and characters). */
export function multiMember (source, parts = 4) {
  const cuts = []
  for (let k = 1; k < parts; k++) cuts.push(Math.floor(source.json.length * k / parts) + k)
  const members = []
  let at = 0
  for (const cut of [...cuts, source.json.length]) {
    members.push(gzip(source.json.subarray(at, cut)))
    at = cut
  }
  return Object.freeze({ ...source, name: `${source.name}, in ${parts} gzip members`, gzip: Buffer.concat(members) })
}

/** Stored gzip (level 0): sent in tiny writes, the handler's inflated chunks are as tiny as the writes. */
export function stored (source) {
  return Object.freeze({ ...source, gzip: gzip(source.json, 0) })
}

/** The tricky documents together: one body with every trap. */
export function everyTrap (seed = currentSeed()) {
  const parts = [lookalikeStrings(seed), escapes(seed), multiByte(seed), layout(seed)]
  const items = []
  // a tenth of the multi-byte records is enough to split characters at every write
  for (const part of parts) items.push(...JSON.parse(part.json.toString('utf8')).items.slice(0, 60))
  return body('every trap at once', JSON.stringify({ items }), 0)
}

/** Truncated bodies: gzip cut short, and whole gzip of JSON cut short inside a record; where, drawn from the seed. */
export function truncated (source, seed = currentSeed()) {
  const draw = seededDraws(seed, 'truncated')
  const text = source.json.toString('utf8')
  const cutJson = text.slice(0, Math.floor(text.length * draw(30, 80) / 100))
  return [
    { name: 'gzip cut short', gzip: source.gzip.subarray(0, Math.floor(source.gzip.length * draw(30, 80) / 100)) },
    { name: 'JSON cut short in whole gzip', gzip: gzip(cutJson) }
  ]
}

/** Corrupt bodies: bytes flipped inside the deflate data, a wrong CRC, not gzip at all; which bytes, drawn from the seed. */
export function corrupt (source, seed = currentSeed()) {
  const draw = seededDraws(seed, 'corrupt')
  const flipped = Buffer.from(source.gzip)
  // inside the deflate data: past the 10-byte header, before the 8-byte trailer
  const from = draw(Math.floor(flipped.length / 4), Math.floor(flipped.length / 2))
  for (let k = 0; k < 8; k++) flipped[from + k * 37] ^= 0x5A
  const badCrc = Buffer.from(source.gzip)
  badCrc[badCrc.length - 8 + draw(0, 3)] ^= 0xFF
  return [
    { name: 'bytes flipped inside the deflate data', gzip: flipped },
    { name: 'a wrong CRC-32 in the trailer', gzip: badCrc },
    { name: 'not gzip at all', gzip: Buffer.from(source.json) }
  ]
}

/** The record counts of the generated documents the correctness check sends: none, ~1,000, ~20,000. */
export function generatedSizes (seed = currentSeed()) {
  const draw = seededDraws(seed, 'generated sizes')
  return [0, draw(800, 1200), draw(15000, 25000)]
}

/** A zip bomb's parameters (lib/generate/bombs.js createBomb), drawn from the seed; make a bomb per send (its streams read once). */
export function bombParams (variant, bombBytes, seed = currentSeed()) {
  const draw = seededDraws(seed, `bomb ${variant}`)
  if (variant === 'depth') return { variant, depth: draw(900_000, 1_100_000) }
  const bytes = bombBytes - draw(0, Math.floor(bombBytes / 10))
  return variant === 'members' ? { variant, bytes, members: draw(800, 1200) } : { variant, bytes }
}

const generatedReferences = new Map()

/** A generated document (lib/generate/items.js) gzipped into `dir` once, with its reference (ids 1..N); the run's seed unless named. */
export async function generatedDocument ({ bytes = null, size = null, seed = currentSeed(), dir }) {
  const input = await ensureInput({ bytes, size, seed, format: 'json', dir })
  let known = generatedReferences.get(input.file)
  if (known === undefined) {
    // the generator is deterministic: making the JSON again (no gzip) counts its items and bytes
    const json = createJsonStream({ bytes, size, seed, format: 'json' })
    for await (const chunk of json) void chunk
    known = { inflatedBytes: json.bytes, reference: referenceOfGenerated(json.items) }
    generatedReferences.set(input.file, known)
  }
  return { file: input.file, compressedBytes: input.compressedBytes, seed, ...known }
}

/** A generated document read into memory (small ones only: the abort check cuts it at chosen places). */
export async function generatedBuffer (params) {
  const doc = await generatedDocument(params)
  return { ...doc, gzip: await fs.promises.readFile(doc.file), name: path.basename(doc.file) }
}
