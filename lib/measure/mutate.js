/**
 * Random JSON documents and their mutations, for the differential test and
 * the fuzzer: seeded, so a failure can be replayed.
 */

/** A small seeded PRNG (mulberry32): the same seed, the same inputs. */
export function prng (seed) {
  let a = seed >>> 0
  return function next () {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const STRINGS = [
  '', 'plain', 'caf\u00e9', '中文字符', '😀 emoji', 'quote " and \\ backslash',
  'line\nbreak\ttab', '\u0000\u001f control', '\\\\"', '\u2028'
]

function randomValue (rand, depth) {
  const r = rand()
  if (depth > 3 || r < 0.35) {
    const k = Math.floor(rand() * 6)
    if (k === 0) return Math.floor(rand() * 1e6)
    if (k === 1) return (rand() - 0.5) * 1e10
    if (k === 2) return STRINGS[Math.floor(rand() * STRINGS.length)]
    if (k === 3) return rand() < 0.5
    if (k === 4) return null
    return -rand() * 1e-5
  }
  if (r < 0.65) {
    const out = []
    const n = Math.floor(rand() * 4)
    for (let i = 0; i < n; i++) out.push(randomValue(rand, depth + 1))
    return out
  }
  const out = {}
  const n = Math.floor(rand() * 4)
  for (let i = 0; i < n; i++) out[STRINGS[Math.floor(rand() * STRINGS.length)] + i] = randomValue(rand, depth + 1)
  return out
}

/** One to six random records, most with an integer id. */
export function randomRecords (rand) {
  const n = 1 + Math.floor(rand() * 6)
  const records = []
  for (let i = 0; i < n; i++) {
    records.push(rand() < 0.7 ? { id: i + 1, v: randomValue(rand, 1) } : randomValue(rand, 1))
  }
  return records
}

/** Records as a document of a format, with random spacing. */
export function serialise (rand, records, format) {
  const space = rand() < 0.3 ? 1 : 0
  if (format === 'ndjson') return records.map(function line (r) { return JSON.stringify(r) }).join(rand() < 0.5 ? '\n' : '\r\n\n') + '\n'
  if (format === 'array') return JSON.stringify(records, null, space)
  return JSON.stringify({ meta: { seed: 1 }, items: records, tail: 'x' }, null, space)
}

const MUTANTS = ['{', '}', '[', ']', ',', ':', '"', '\\', ' ', '\n', '0', '-', '.', 'e', 't', 'n', 'x', '\u00e9', '\u0001']

/** One random mutation: replace, insert, delete, truncate or flip a bit. */
export function mutate (rand, text) {
  const buf = Buffer.from(text)
  const at = Math.floor(rand() * buf.length)
  const kind = Math.floor(rand() * 5)
  const bytes = Buffer.from(MUTANTS[Math.floor(rand() * MUTANTS.length)])
  if (kind === 0) return Buffer.concat([buf.subarray(0, at), bytes, buf.subarray(at + 1)]) // replace
  if (kind === 1) return Buffer.concat([buf.subarray(0, at), bytes, buf.subarray(at)]) // insert
  if (kind === 2) return Buffer.concat([buf.subarray(0, at), buf.subarray(at + 1)]) // delete
  if (kind === 3) return buf.subarray(0, at) // truncate
  const copy = Buffer.from(buf) // flip one bit
  copy[at] ^= 1 << Math.floor(rand() * 8)
  return copy
}

/** A mutation of gzip bytes: a bit flip, truncation, insertion, or a splice of two bodies. */
export function mutateGzip (rand, gz, other) {
  const at = Math.floor(rand() * gz.length)
  const kind = Math.floor(rand() * 4)
  if (kind === 0) {
    const copy = Buffer.from(gz)
    copy[at] ^= 1 << Math.floor(rand() * 8)
    return copy
  }
  if (kind === 1) return gz.subarray(0, at)
  if (kind === 2) return Buffer.concat([gz.subarray(0, at), Buffer.from([Math.floor(rand() * 256)]), gz.subarray(at)])
  return Buffer.concat([gz.subarray(0, at), other.subarray(Math.floor(rand() * other.length))])
}
