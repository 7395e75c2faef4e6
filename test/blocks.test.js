/**
 * /good's blocks (lib/parse/record-sink.js): inflated bytes copied into blocks, batches that are views
 * of them, their brackets written in place on the thread that parses them. Cutting in place must emit
 * exactly what cutting into copies emits, whatever the chunks; a block may not be filled again while
 * any batch viewing it waits; the record limit holds wherever a block ends.
 */
import assert from 'node:assert/strict'
import zlib from 'node:zlib'
import { prng, randomRecords, serialise, mutate } from '../lib/measure/mutate.js'
import { RecordScanner, LineBatcher } from '../lib/json/records.js'
import { CuttingScanner } from '../lib/json/cutter.js'
import { parseBatch } from '../lib/parse/parse-batch.js'
import { cutterDocuments } from './cutter-documents.js'
import { startLab, post } from './helpers.js'

const JUNK = 0x7e // `~`: what the spare bytes and a chunk's old bytes hold, so a batch that reads them shows it

/**
 * What a scanner emits for `buf` cut every `size` bytes: each batch as its bytes read with their
 * brackets, and how it ended. In place, each chunk lies in a buffer of its own with a spare byte each
 * side, and is overwritten with junk once written (as a block is reused), after `detachFrom`.
 */
function trace (Scanner, buf, { format, size, batchBytes, maxValueBytes = Infinity, inPlace }) {
  const batches = []
  function onBatch (batch) {
    const bytes = Uint8Array.prototype.slice.call(batch.bytes)
    if (batch.kind !== 'lines') {
      bytes[0] = 0x5b
      bytes[bytes.length - 1] = 0x5d
    }
    batches.push([batch.kind, batch.generation, batch.offset, Buffer.from(bytes).toString('latin1'), batch.costBound])
  }
  const options = { batchBytes, maxValueBytes, maxDepth: 50, onBatch, inPlace }
  const scanner = format === 'ndjson' ? new Scanner(options) : new Scanner(format, options)
  let ended
  try {
    for (let at = 0; at < buf.length; at += size) {
      const piece = buf.subarray(at, at + size)
      const block = new Uint8Array(piece.length + 2).fill(JUNK)
      block.set(piece, 1)
      scanner.write(block.subarray(1, 1 + piece.length))
      scanner.detachFrom(block.buffer)
      block.fill(JUNK)
    }
    ended = scanner.end()
  } catch (err) {
    ended = { type: err.type, message: err.message, details: err.details }
  }
  return JSON.stringify({ batches, ended })
}

function assertSameInPlace (Scanner, buf, options, what) {
  assert.equal(trace(Scanner, buf, { ...options, inPlace: true }), trace(Scanner, buf, { ...options, inPlace: false }), what)
}

describe('batches cut in place against batches copied (lib/json/records.js, `inPlace`)', function () {
  const scanners = [['the record scanner', RecordScanner], ['the cutter', CuttingScanner]]

  for (const [name, Scanner] of scanners) {
    it(`${name} emits the same batches and verdicts on generated and mutated documents, in chunks down to one byte`, function () {
      for (const format of ['json', 'array']) {
        const rand = prng(format.length * 17 + 1)
        for (let k = 0; k < 600; k++) {
          const text = serialise(rand, randomRecords(rand), format)
          const buf = k % 2 === 0 ? Buffer.from(text) : mutate(rand, text)
          for (const size of [1, 6, 64, 1 << 20]) {
            const options = { format, size, batchBytes: [1, 40, 1 << 20][k % 3], maxValueBytes: [Infinity, 30][k % 2] }
            assertSameInPlace(Scanner, buf, options, `${format} document ${k}, chunks of ${size}: ${JSON.stringify(buf.toString())}`)
          }
        }
      }
    })

    it(`${name} emits the same on documents built to trip a cutter`, function () {
      this.timeout(120000)
      for (const doc of cutterDocuments(50)) {
        const buf = Buffer.from(doc.text)
        for (const size of [3, 100, 4096, 65536, 1 << 22]) {
          for (const batchBytes of [1, 4096, 65536]) {
            assertSameInPlace(Scanner, buf, { format: doc.format, size, batchBytes }, `${doc.name}: chunks of ${size}, batches of ${batchBytes}`)
          }
        }
      }
    })
  }

  it('NDJSON\'s batcher emits the same lines, in chunks down to one byte', function () {
    const rand = prng(11)
    for (let k = 0; k < 600; k++) {
      const text = serialise(rand, randomRecords(rand), 'ndjson')
      const buf = k % 2 === 0 ? Buffer.from(text) : mutate(rand, text)
      for (const size of [1, 6, 64, 1 << 20]) {
        const options = { format: 'ndjson', size, batchBytes: [1, 40, 1 << 20][k % 3], maxValueBytes: [Infinity, 30][k % 2] }
        assertSameInPlace(LineBatcher, buf, options, `ndjson ${k}, chunks of ${size}`)
      }
    }
  })

  it('a batch parsed in place is read between its brackets, and its neighbours get their bytes back', function () {
    const block = Buffer.from('~{"id":1},{"id":2}~{"id":3}]')
    const bytes = block.subarray(0, 19)
    const answer = parseBatch({ kind: 'records', bytes })
    assert.equal(answer.tally.items, 2)
    assert.equal(block.toString(), '~{"id":1},{"id":2}~{"id":3}]')
    const inPlace = parseBatch({ kind: 'records', bytes: Buffer.from(',{"id":1},{"id":}~') })
    const copied = parseBatch({ kind: 'records', bytes: Buffer.from('[{"id":1},{"id":}]') })
    assert.deepEqual(inPlace.error, copied.error, 'an offset counts from the first value, as for a copied batch')
    assert.equal(inPlace.error.offset, 15)
  })
})

describe('the record limit wherever a block or chunk ends', function () {
  const MOST = 50

  function verdict (Scanner, text, format, size) {
    const ended = JSON.parse(trace(Scanner, Buffer.from(text), { format, size, batchBytes: 16, maxValueBytes: MOST, inPlace: true })).ended
    return ended.type ?? 'ok'
  }

  for (const [format, Scanner, wrap] of [
    ['json', CuttingScanner, function json (records) { return `{"items":[${records.join(',')}]}` }],
    ['array', RecordScanner, function array (records) { return `[${records.join(' , ')}]` }],
    ['ndjson', LineBatcher, function lines (records) { return records.join('\n') + '\n' }]
  ]) {
    it(`refuses a ${format} record one byte past the limit and reads one at it, in one chunk or many`, function () {
      for (const size of [1, 7, 49, 50, 51, 1000]) {
        for (const place of [0, 1, 3]) {
          const records = ['{"a":1}', '{"b":2}', '{"c":3}', '{"d":4}']
          const at = [...records]
          at[place] = `{"s":"${'x'.repeat(MOST - 8)}"}`
          const past = [...records]
          past[place] = `{"s":"${'x'.repeat(MOST - 7)}"}`
          assert.equal(verdict(Scanner, wrap(at), format, size), 'ok', `${format} at the limit, chunks of ${size}`)
          assert.equal(verdict(Scanner, wrap(past), format, size), 'record.too.large', `${format} past the limit, record ${place}, chunks of ${size}`)
        }
      }
    })
  }
})

describe('POST /good with fewer parse threads than uploads', function () {
  let lab
  before(async function () {
    lab = await startLab({ ingest: { parseThreads: 1 }, limits: { record: 2048 } })
  })
  after(async function () {
    await lab?.close()
  })

  it('gives each upload its own summary while blocks wait in the thread\'s queue', async function () {
    this.timeout(60000)
    const bodies = []
    for (let k = 0; k < 6; k++) {
      const records = Array.from({ length: 20000 }, function record (_, id) { return `{"id":${id + k},"s":"${'測'.repeat(id % 40)}"}` })
      bodies.push(zlib.gzipSync(k % 2 ? `{"items":[${records.join(',')}]}` : records.join('\n')))
    }
    const formats = ['ndjson', 'json']
    const answers = await Promise.all(bodies.map(function send (body, k) { return post(`${lab.url}/good?format=${formats[k % 2]}`, body) }))
    const alone = []
    for (const [k, body] of bodies.entries()) alone.push(await post(`${lab.url}/bad?format=${formats[k % 2]}`, body))
    for (const [k, answer] of answers.entries()) {
      assert.equal(answer.status, 200, answer.text)
      assert.deepEqual(answer.body.summary, alone[k].body.summary, `upload ${k}`)
    }
  })

  it('refuses a record past the limit that ends inside one block, as one that runs past it', async function () {
    const long = `{"s":"${'y'.repeat(3000)}"}`
    for (const [format, text] of [['json', `{"items":[{"a":1},${long},{"b":2}]}`], ['ndjson', `{"a":1}\n${long}\n{"b":2}\n`]]) {
      const padded = format === 'json' ? text.replace('[', '[' + '{"p":0},'.repeat(20000)) : '{"p":0}\n'.repeat(20000) + text
      const answer = await post(`${lab.url}/good?format=${format}`, zlib.gzipSync(padded))
      assert.equal(answer.status, 413, `${format}: ${answer.text}`)
      assert.equal(answer.body.error.type, 'record.too.large')
    }
  })
})
