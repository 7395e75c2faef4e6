/**
 * The bodies the checks send, made here (small and deterministic) or by the
 * lab's generators (generated documents, zip bombs): each tricky document
 * is a trap a hand-written streaming handler tends to fall into.
 */
import fs from 'node:fs'
import path from 'node:path'
import zlib from 'node:zlib'
import { ensureInput } from '../lib/measure/inputs.js'
import { createJsonStream } from '../generators/items.js'
import { referenceOf, referenceOfGenerated } from './reference.js'

/** gzip's default inflate chunk: where a handler's chunks end unless it chose otherwise. */
const INFLATE_CHUNK = 16 * 1024

function gzip (text, level = 6) {
  return zlib.gzipSync(Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8'), { level })
}

/** A body: the JSON, its gzip and its reference answer. */
function body (name, json, level = 6) {
  const bytes = Buffer.from(json, 'utf8')
  return Object.freeze({ name, json: bytes, gzip: gzip(bytes, level), reference: referenceOf(bytes) })
}

/**
 * Strings and nested objects that look like records: `"id":` inside strings,
 * `},{` and `]}` inside strings, ids of nested objects (not records), and
 * "items" keys below the top level.
 */
export function lookalikeStrings () {
  const records = []
  for (let id = 1; id <= 60; id++) {
    const decoys = [
      { id, text: `"id":${id * 100} and },{"id":${id + 1}},{ then ]} and ]}]}` },
      { id, child: { id: id * 1000, items: [{ id: 1 }, { id: 2 }] }, s: '{"id":5},{"id":6}' },
      { id, list: [{ id: 7 }, { id: 8 }], end: ']}', start: '{"items":[' },
      { note: '},{', id, tail: '"id":1' }
    ]
    records.push(decoys[id % decoys.length])
  }
  return body('strings that look like records', JSON.stringify({ meta: { about: 'lookalikes' }, items: records }))
}

/**
 * Escapes: quotes and backslashes inside strings (a string that ends in a
 * backslash, `\\"`), unicode escapes of structure (`\u0022`, `\u007b`),
 * a surrogate pair, and a key spelled with an escape (`"i\u0064"` is "id").
 */
export function escapes () {
  const records = []
  const strings = [
    String.raw`"she said \"}]{\" twice"`,
    String.raw`"ends in a backslash \\"`,
    String.raw`"\\\"},{\"id\":99"`,
    String.raw`"\u0022},{\u0022id\u0022:5,\u0022x\u0022:\u007b"`,
    String.raw`"slash \/ tab \t newline \n \ud83d\ude00"`,
    String.raw`"\\\\\\"`
  ]
  for (let id = 1; id <= 48; id++) {
    const key = id % 4 === 0 ? String.raw`"i\u0064"` : '"id"'
    records.push(`{${key}:${id},"s":${strings[id % strings.length]},"t":${strings[(id + 1) % strings.length]}}`)
  }
  return body('escapes', `{"items":[${records.join(',')}]}`)
}

/**
 * Multi-byte characters (2, 3 and 4 bytes of UTF-8) throughout, so that
 * every 16 KiB inflate chunk ends inside a character, and in keys.
 */
export function multiByte () {
  const records = []
  const pieces = ['é', '東京', '😀', 'ß', '한국어', '🚀🎉', 'ü']
  let id = 0
  // a prefix of one byte makes the 4-byte runs straddle the chunk boundaries
  let json = '{"items":['
  while (Buffer.byteLength(json) < 6 * INFLATE_CHUNK) {
    id++
    const text = pieces[id % pieces.length].repeat(40 + (id * 13) % 50)
    const record = `{"id":${id},"名前":"${text}","emoji":"${'😀'.repeat(id % 9)}"}`
    records.push(record)
    json += (id > 1 ? ',' : '') + record
  }
  json += ']}'
  const made = body('multi-byte characters split across chunks', json)
  // the point of the document: chunk ends fall inside characters (UTF-8 continuation bytes)
  const splits = [1, 2, 3, 4, 5].filter(function insideCharacter (k) { return (made.json[k * INFLATE_CHUNK] & 0xC0) === 0x80 })
  if (splits.length < 2) throw new Error(`multiByte: only ${splits.length} chunk ends fall inside a character`)
  return made
}

/**
 * Whitespace and layout: pretty-printed with tabs and CRLF, keys before and
 * after `items`, arrays of id-bearing objects under other keys, and an
 * "items" array inside `meta`, before the real one.
 */
export function layout () {
  const items = []
  for (let id = 1; id <= 40; id++) items.push({ id: id * 3, name: `n${id}`, tags: ['items', '"id":1'], nested: { id: 5 } })
  const doc = {
    tags: [{ id: 100 }, { id: 200 }],
    meta: { items: [{ id: 999 }, { id: 998 }], note: 'items' },
    items,
    after: { items: [{ id: 1 }] }
  }
  const json = JSON.stringify(doc, null, '\t').replace(/\n/g, '\r\n')
  return body('layout: whitespace, other keys and arrays around items', json)
}

/** A record that does not parse, inside perfectly good gzip. */
export function brokenRecord () {
  const json = '{"items":[{"id":1,"a":[1,2]},{"id":2,"b":tru},{"id":3}]}'
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

/**
 * A document whose gzip is stored, not compressed (level 0): sent in tiny
 * writes, the handler's inflated chunks are as tiny as the writes.
 */
export function stored (source) {
  return Object.freeze({ ...source, gzip: gzip(source.json, 0) })
}

/** The tricky documents together: one body with every trap. */
export function everyTrap () {
  const parts = [lookalikeStrings(), escapes(), multiByte(), layout()]
  const items = []
  // a tenth of the multi-byte records is enough to split characters at every write
  for (const part of parts) items.push(...JSON.parse(part.json.toString('utf8')).items.slice(0, 60))
  return body('every trap at once', JSON.stringify({ items }), 0)
}

/** Truncated bodies: gzip cut short, and whole gzip of JSON cut short inside a record. */
export function truncated (source) {
  const text = source.json.toString('utf8')
  const cutJson = text.slice(0, Math.floor(text.length * 0.55))
  return [
    { name: 'gzip cut short', gzip: source.gzip.subarray(0, Math.floor(source.gzip.length * 0.6)) },
    { name: 'JSON cut short in whole gzip', gzip: gzip(cutJson) }
  ]
}

/** Corrupt bodies: bytes flipped inside the deflate data, a wrong CRC, not gzip at all. */
export function corrupt (source) {
  const flipped = Buffer.from(source.gzip)
  for (let k = 0; k < 8; k++) flipped[Math.floor(flipped.length / 2) + k * 37] ^= 0x5A
  const badCrc = Buffer.from(source.gzip)
  badCrc[badCrc.length - 8] ^= 0xFF
  return [
    { name: 'bytes flipped inside the deflate data', gzip: flipped },
    { name: 'a wrong CRC-32 in the trailer', gzip: badCrc },
    { name: 'not gzip at all', gzip: Buffer.from(source.json) }
  ]
}

const generatedReferences = new Map()

/**
 * A generated document (generators/items.js), gzipped into `dir` once and
 * reused, with its reference (its ids run from 1 to N) and its inflated size.
 * @param {{ bytes?: number, size?: number, seed?: number, dir: string }} params
 * @returns {Promise<{ file: string, compressedBytes: number, inflatedBytes: number, reference: { items: number, idSum: string } }>}
 */
export async function generatedDocument ({ bytes = null, size = null, seed = 1, dir }) {
  const input = await ensureInput({ bytes, size, seed, format: 'json', dir })
  let known = generatedReferences.get(input.file)
  if (known === undefined) {
    // the generator is deterministic: making the JSON again (no gzip) counts its items and bytes
    const json = createJsonStream({ bytes, size, seed, format: 'json' })
    for await (const chunk of json) void chunk
    known = { inflatedBytes: json.bytes, reference: referenceOfGenerated(json.items) }
    generatedReferences.set(input.file, known)
  }
  return { file: input.file, compressedBytes: input.compressedBytes, ...known }
}

/** A generated document read into memory (small ones only: the abort check cuts it at chosen places). */
export async function generatedBuffer (params) {
  const doc = await generatedDocument(params)
  return { ...doc, gzip: await fs.promises.readFile(doc.file), name: path.basename(doc.file) }
}
