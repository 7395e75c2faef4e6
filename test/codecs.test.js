/**
 * Every codec a client sends (lib/ingest/codecs.js): gzip, deflate, br, and
 * zstd where this Node's zlib has it, alone or chained, on each ingest
 * route, decode to the same summary; each layer of deflate and br is one
 * stream and nothing after it, of zstd frames back to back and nothing
 * after them, whole or split anywhere; a Node that cannot decode zstd says
 * which Node can.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import zlib from 'node:zlib'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { inflateWhole, decoderStreams } from '../lib/ingest/gzip-framing.js'
import { CODECS, ZSTD_WINDOW_LOG_MAX, decodes } from '../lib/ingest/codecs.js'
import { fromZlibError } from '../lib/errors/index.js'
import { MAX_FRAMES } from '../lib/ingest/zstd-frame.js'
import { splits } from './gzip-framing-cases.js'
import { startLab, post, generatedJson } from './helpers.js'

const ENCODE = Object.freeze({
  gzip: zlib.gzipSync,
  deflate: zlib.deflateSync,
  br: zlib.brotliCompressSync,
  zstd: zlib.zstdCompressSync ?? null
})
const HERE = Object.keys(ENCODE).filter(function decodable (name) { return decodes(CODECS[name]) })
const ROUTES = Object.freeze(['bad', 'good', 'express-json', 'streamparser-json'])

function verdictOf (promise) {
  return promise.then(
    function decoded (buf) { return { text: buf.toString('utf8') } },
    function refused (err) {
      if (err.type === 'encoding.trailing.data') return { type: err.type, offset: err.details.offset }
      return { type: err.type ?? err.code }
    })
}

async function decodeInReads (codec, reads) {
  const out = []
  await pipeline(Readable.from(reads, { objectMode: false }), ...decoderStreams([codec]), async function collect (source) {
    for await (const chunk of source) out.push(chunk)
  })
  return Buffer.concat(out)
}

/**
 * A zstd layer is one or more frames (RFC 8878, 3.1), skippable ones too; a byte after a frame
 * must start one. Each case as [label, body (or what makes it), verdict].
 */
function zstdFrameCases (text) {
  const half = text.length >> 1
  const first = zlib.zstdCompressSync(Buffer.from(text.slice(0, half)))
  const second = zlib.zstdCompressSync(Buffer.from(text.slice(half)))
  const skippable = Buffer.concat([Buffer.from([0x5a, 0x2a, 0x4d, 0x18, 3, 0, 0, 0]), Buffer.from('xyz')])
  return [
    ['two frames back to back', Buffer.concat([first, second]), { text }],
    ['a skippable frame first, then between two frames', Buffer.concat([skippable, first, skippable, second]), { text }],
    ['what this Node\'s compressing stream makes', function streamed () { return zstdStreamed(Buffer.from(text)) }, { text }],
    ['part of a frame\'s magic number after a frame', Buffer.concat([first, Buffer.from([0x28, 0xb5, 0x2f])]), { type: 'encoding.trailing.data', offset: first.length }],
    ['a frame, then bytes that start none', Buffer.concat([first, second, Buffer.from('junk')]), { type: 'encoding.trailing.data', offset: first.length + second.length }],
    ['a frame, then a second cut before its end', Buffer.concat([first, second.subarray(0, second.length - 1)]), { type: 'Z_BUF_ERROR' }]
  ]
}

/**
 * Bytes as Node's zstd compressing stream writes them (Node 24.21 ends them with an empty frame),
 * with a window of 2^windowLog where given: their size unknown when the frame starts, it says so.
 */
async function zstdStreamed (bytes, windowLog) {
  const out = []
  const params = windowLog === undefined ? {} : { [zlib.constants.ZSTD_c_windowLog]: windowLog }
  await pipeline(Readable.from([bytes]), zlib.createZstdCompress({ params }), async function gather (source) {
    for await (const chunk of source) out.push(chunk)
  })
  return Buffer.concat(out)
}

/** The window a zstd frame asks for, as a power of two (RFC 8878, 3.1.1.1.2), or null where its size is its content's. */
function windowLogOf (frame) {
  const descriptor = frame[4]
  if ((descriptor & 0x20) !== 0) return null
  return 10 + (frame[5] >>> 3)
}

describe('every codec', function () {
  this.timeout(60_000)

  describe('one rule of what ends a layer, whole or split anywhere', function () {
    const TEXT = '{"items":[{"id":1},{"id":2}]}'
    for (const name of HERE.filter(function notGzip (n) { return n !== 'gzip' })) {
      const codec = CODECS[name]
      const encoded = ENCODE[name](Buffer.from(TEXT))
      const cases = [
        ['the stream alone', encoded, { text: TEXT }],
        ['a byte after its end', Buffer.concat([encoded, Buffer.from('A')]), { type: 'encoding.trailing.data', offset: encoded.length }],
        ['a zero after its end (padding is gzip\'s alone)', Buffer.concat([encoded, Buffer.alloc(1)]), { type: 'encoding.trailing.data', offset: encoded.length }],
        ['cut before its end', encoded.subarray(0, encoded.length - 2), { type: 'Z_BUF_ERROR' }]
      ]
      if (name === 'zstd') cases.push(...zstdFrameCases(TEXT))
      for (const [label, made, want] of cases) {
        it(`${name}, ${label}: ${want.text ? 'decodes' : want.type}`, async function () {
          const body = typeof made === 'function' ? await made() : made
          assert.deepEqual(await verdictOf(inflateWhole(body, [codec])), want, 'whole (/bad)')
          assert.deepEqual(await verdictOf(inflateWhole(body, [codec], { sync: true })), want, 'whole, in synchronous calls (/good, a small body)')
          // zstd's frames are cut apart across reads: three reads, so a frame's magic may span two
          const cuts = name === 'zstd' ? 2 : 1
          for (const reads of splits(body, cuts)) {
            assert.deepEqual(await verdictOf(decodeInReads(codec, reads)), want, `reads of ${reads.map(function size (r) { return r.length }).join(', ')} bytes`)
          }
        })
      }
    }
  })

  describe('a zstd layer of many frames', function () {
    it('is limited where the docs say: docs/errors.md quotes the limit the code keeps, and no page quotes another', function () {
      for (const page of ['docs/api.md', 'docs/errors.md']) {
        const text = fs.readFileSync(new URL(`../${page}`, import.meta.url), 'utf8')
        const quoted = [...text.matchAll(/(?:frames back to back \(at most |frames in a zstd layer[^|]*\| |frame past the )(\d+)/g)].map(function limit (m) { return Number(m[1]) })
        if (page === 'docs/errors.md') assert.ok(quoted.length > 0, `${page} quotes the frame limit`)
        assert.ok(quoted.every(function same (n) { return n === MAX_FRAMES }), `${page} quotes ${quoted.join(', ')}, not ${MAX_FRAMES}`)
      }
    })

    it(`is refused at the start of frame ${MAX_FRAMES + 1} (413 encoding.frames.too.many), whole and streamed, after the frames before it`, async function () {
      if (!decodes(CODECS.zstd)) this.skip()

      const empty = zlib.zstdCompressSync(Buffer.alloc(0))
      const body = Buffer.concat(new Array(MAX_FRAMES + 2).fill(empty))
      const want = { type: 'encoding.frames.too.many', offset: MAX_FRAMES * empty.length }
      function verdict (err) { return { type: err.type, offset: err.details.offset } }
      assert.deepEqual(await inflateWhole(body, [CODECS.zstd]).then(String, verdict), want, 'whole (/bad)')
      assert.deepEqual(await inflateWhole(body, [CODECS.zstd], { sync: true }).then(String, verdict), want, 'whole, synchronous (/good, a small body)')
      const reads = []
      for (let at = 0; at < body.length; at += 1000) reads.push(body.subarray(at, at + 1000))
      assert.deepEqual(await decodeInReads(CODECS.zstd, reads).then(String, verdict), want, 'streamed (/good)')
      const fewer = body.subarray(0, MAX_FRAMES * empty.length)
      assert.equal((await inflateWhole(fewer, [CODECS.zstd])).length, 0, `${MAX_FRAMES} frames decode`)
    })
  })

  describe('a zstd frame\'s window', function () {
    before(function () {
      if (!decodes(CODECS.zstd)) this.skip()
    })

    it(`is held to 2^${ZSTD_WINDOW_LOG_MAX} bytes (8 MiB, RFC 9659): one that asks more is 400 encoding.invalid saying so, whole and streamed`, async function () {
      const TEXT = '{"items":[{"id":1}]}'
      const within = await zstdStreamed(Buffer.from(TEXT), ZSTD_WINDOW_LOG_MAX)
      const over = await zstdStreamed(Buffer.from(TEXT), ZSTD_WINDOW_LOG_MAX + 1)
      assert.equal(windowLogOf(within), ZSTD_WINDOW_LOG_MAX)
      assert.equal(windowLogOf(over), ZSTD_WINDOW_LOG_MAX + 1)
      for (const [how, decode] of [
        ['whole', function whole (body) { return inflateWhole(body, [CODECS.zstd]) }],
        ['whole, synchronous', function sync (body) { return inflateWhole(body, [CODECS.zstd], { sync: true }) }],
        ['streamed', function streamed (body) { return decodeInReads(CODECS.zstd, [body]) }]
      ]) {
        assert.equal(String(await decode(within)), TEXT, how)
        const refusal = await decode(over).then(function decoded () { return null }, function refused (err) { return fromZlibError(err, over.length, 'zstd') })
        assert.equal(refusal?.type, 'encoding.invalid', how)
        assert.match(refusal.details.cause, /window is over 8 MiB.*RFC 9659/, how)
      }
    })
  })

  describe('on each route, over HTTP', function () {
    let lab
    let doc
    let want
    before(async function () {
      lab = await startLab()
      doc = (await generatedJson({ size: 300, seed: 9 })).bytes
      const answer = await post(`${lab.url}/good`, zlib.gzipSync(doc), { 'content-type': 'application/json', 'content-encoding': 'gzip' })
      assert.equal(answer.status, 200)
      want = answer.body.summary
    })
    after(async function () {
      await lab.close()
    })

    for (const route of ROUTES) {
      for (const name of HERE) {
        it(`/${route} reads a ${name} body to the same summary as gzip`, async function () {
          const body = ENCODE[name](doc)
          const answer = await post(`${lab.url}/${route}`, body, { 'content-type': 'application/json', 'content-encoding': name })
          assert.equal(answer.status, 200, answer.text)
          assert.deepEqual({ ...answer.body.summary, compressedBytes: 0 }, { ...want, compressedBytes: 0 })
          assert.equal(answer.body.summary.compressedBytes, body.length)
        })
      }
    }

    for (const route of ['bad', 'good', 'streamparser-json']) {
      it(`/${route} peels chained codecs in the order they were applied: gzip file, then deflate, then br`, async function () {
        const body = zlib.brotliCompressSync(zlib.deflateSync(zlib.gzipSync(doc)))
        const answer = await post(`${lab.url}/${route}`, body, { 'content-type': 'application/gzip', 'content-encoding': 'deflate, br' })
        assert.equal(answer.status, 200, answer.text)
        assert.equal(answer.body.summary.sha256, want.sha256)
      })

      it(`/${route} refuses a layer sent under the wrong name with the codec's error`, async function () {
        const answer = await post(`${lab.url}/${route}`, zlib.gzipSync(doc), { 'content-type': 'application/json', 'content-encoding': 'br' })
        assert.equal(answer.status, 400)
        assert.equal(answer.body.error.type, 'encoding.invalid')
        assert.equal(answer.body.error.codec, 'br')
      })
    }

    it('counts every codec against the one layer limit', async function () {
      const answer = await post(`${lab.url}/good`, Buffer.from('x'), { 'content-type': 'application/gzip', 'content-encoding': 'br, deflate, gzip' })
      assert.equal(answer.status, 413)
      assert.equal(answer.body.error.type, 'encoding.too.many')
    })

    it('says which Node decodes zstd where this one cannot, before a byte is read', async function () {
      if (decodes(CODECS.zstd)) this.skip()
      for (const route of ROUTES) {
        const answer = await post(`${lab.url}/${route}`, Buffer.from('anything'), { 'content-type': 'application/json', 'content-encoding': 'zstd' })
        assert.equal(answer.status, 415, route)
        assert.equal(answer.body.error.type, 'encoding.unsupported')
        assert.equal(answer.body.error.since, '22.15.0')
        assert.match(answer.body.error.message, /Node 22\.15\.0 and later/)
      }
    })
  })
})
