/**
 * Every codec a client sends (lib/ingest/codecs.js): gzip, deflate, br, and
 * zstd where this Node's zlib has it, alone or chained, on each ingest
 * route, decode to the same summary; each layer of deflate, br and zstd is
 * one stream and nothing after it, whole or split anywhere; a Node that
 * cannot decode zstd says which Node can.
 */
import assert from 'node:assert/strict'
import zlib from 'node:zlib'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { inflateWhole, decoderStreams } from '../lib/ingest/gzip-framing.js'
import { CODECS, decodes } from '../lib/ingest/codecs.js'
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
      for (const [label, body, want] of cases) {
        it(`${name}, ${label}: ${want.text ? 'decodes' : want.type}`, async function () {
          assert.deepEqual(await verdictOf(inflateWhole(body, [codec])), want, 'whole (/bad)')
          for (let at = 0; at <= body.length; at++) {
            const reads = [body.subarray(0, at), body.subarray(at)].filter(function some (r) { return r.length > 0 })
            assert.deepEqual(await verdictOf(decodeInReads(codec, reads)), want, `two reads split at ${at}`)
          }
        })
      }
    }
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
