/**
 * The summary's sums are exact: idSum for any ids in the safe-integer range
 * (negative ones too), and numbersChecksum (the sum of every number's
 * IEEE-754 bits, modulo 2^64) however many numbers one record holds, equal
 * on both routes whatever the chunking and batching. Checked against a
 * reference that shares no code with lib/parse/tally.js: BigInt all the way.
 */
import assert from 'node:assert/strict'
import zlib from 'node:zlib'
import { parseBuffered, parseStreamed, labInTempDir, post, referenceTally } from '../helpers.js'
import { prng } from '../../lib/measure/mutate.js'

const MAX = Number.MAX_SAFE_INTEGER

/** The figures, from JSON.parse and BigInt only. */
function reference (text) {
  return referenceTally(JSON.parse(text).items)
}

function randomId (rand) {
  const pick = rand()
  if (pick < 0.3) return MAX - Math.floor(rand() * 1000)
  if (pick < 0.5) return -MAX + Math.floor(rand() * 1000)
  if (pick < 0.7) return Math.floor((rand() - 0.5) * 2 ** 53)
  return Math.floor(rand() * 1000)
}

function randomNumber (rand) {
  const pick = rand()
  if (pick < 0.25) return String(-rand() * 1e300)
  if (pick < 0.5) return '0.9'
  if (pick < 0.75) return String(Math.floor(rand() * 2 ** 53))
  return `${rand() < 0.5 ? '-' : ''}${rand()}e-${Math.floor(rand() * 300)}`
}

function randomDocument (rand, records) {
  const items = []
  for (let k = 0; k < records; k++) {
    const numbers = Array.from({ length: Math.floor(rand() * 20) }, function n () { return randomNumber(rand) })
    items.push(`{"id":${randomId(rand)},"n":[${numbers.join(',')}],"s":"},{\\"id\\":1"}`)
  }
  return `{"items":[${items.join(',')}]}`
}

describe('exact sums', function () {
  it('adds the largest ids exactly: 2 + 9007199254740991 is 9007199254740993', function () {
    const text = `{"items":[{"id":2},{"id":${MAX}}]}`
    for (const got of [parseBuffered(Buffer.from(text), 'json').summary, parseStreamed(Buffer.from(text), 'json', 7, 16).summary]) {
      assert.equal(got.idSum, '9007199254740993')
    }
  })

  it('agrees with the BigInt reference on 200 random documents, chunked and batched anywhere', function () {
    this.timeout(60_000)
    for (let seed = 1; seed <= 200; seed++) {
      const rand = prng(seed)
      const text = randomDocument(rand, 1 + Math.floor(rand() * 60))
      const buf = Buffer.from(text)
      const want = reference(text)
      const buffered = parseBuffered(buf, 'json').summary
      const streamed = parseStreamed(buf, 'json', 1 + Math.floor(rand() * 200), 1 + Math.floor(rand() * 400)).summary
      for (const [name, got] of [['buffered', buffered], ['streamed', streamed]]) {
        assert.deepEqual({ items: got.items, idSum: got.idSum, numbers: got.numbers, numbersChecksum: got.numbersChecksum }, want, `seed ${seed}, ${name}`)
      }
    }
  })

  it('keeps the checksum exact with millions of numbers in one record: 3.9 M copies of 0.9', function () {
    this.timeout(60_000)
    const text = `{"items":[[${Array(3_900_000).fill('0.9').join(',')}]]}`
    const want = reference(text)
    assert.equal(parseBuffered(Buffer.from(text), 'json').summary.numbersChecksum, want.numbersChecksum)
    assert.equal(parseStreamed(Buffer.from(text), 'json', 65536, 65536).summary.numbersChecksum, want.numbersChecksum)
  })

  describe('through both routes', function () {
    // a record of 15.6 MB of numbers is past /good's default limits (docs/limits.md): raised here
    const lab = labInTempDir('exact-sums', { limits: { record: 32 * 1024 * 1024 }, ingest: { parseCost: 1024 * 1024 * 1024 } })

    it('answers the same exact sums on /bad and /good, ids at both ends of the safe range, a batch boundary between them', async function () {
      this.timeout(60_000)
      const padding = `"${'x'.repeat(70_000)}"`
      const text = `{"items":[{"id":2},{"id":-${MAX},"p":${padding}},{"id":${MAX}},{"id":${MAX}},[${Array(3_900_000).fill('0.9').join(',')}]]}`
      const want = reference(text)
      const body = zlib.gzipSync(text)
      for (const route of ['bad', 'good']) {
        const res = await post(`${lab.url}/${route}`, body)
        assert.equal(res.status, 200, res.text)
        assert.equal(res.body.summary.idSum, want.idSum, route)
        assert.equal(res.body.summary.numbersChecksum, want.numbersChecksum, route)
        assert.equal(res.body.summary.numbers, want.numbers, route)
      }
    })
  })
})
