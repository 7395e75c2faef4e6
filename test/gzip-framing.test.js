/**
 * One gzip framing rule (lib/ingest/gzip-framing.js, docs/errors.md "What ends a
 * gzip body"): members back to back, then nothing or only zero bytes. Each
 * case (test/gzip-framing-cases.js) has one verdict, the same from the
 * whole-body inflate /bad uses and from the stream /good uses, wherever the
 * body is split into reads. The same from both routes over HTTP, the body
 * sent in two writes split at every byte, is
 * test/slow/gzip-framing-http.test.js's.
 */
import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { inflateWhole, decoderStreams } from '../lib/ingest/gzip-framing.js'
import { CASES, ONE, bytes, splitAt } from './gzip-framing-cases.js'

function verdictOf (promise) {
  return promise.then(
    function inflated (buf) { return { text: buf.toString('utf8') } },
    function refused (err) {
      const type = err.type ?? { Z_BUF_ERROR: 'gzip.truncated', Z_DATA_ERROR: 'gzip.invalid' }[err.code] ?? err.code
      return err.type === 'gzip.trailing.data' ? { type, offset: err.details.offset } : { type }
    })
}

async function inflateInReads (body, reads) {
  const out = []
  await pipeline(Readable.from(reads, { objectMode: false }), ...decoderStreams(1), async function collect (source) {
    for await (const chunk of source) out.push(chunk)
  })
  return Buffer.concat(out)
}

describe('one gzip framing rule', function () {
  describe('in lib/ingest/gzip-framing.js', function () {
    for (const [name, body, want] of CASES) {
      it(`${name}: ${want.text ? 'inflates' : want.type}, whole or split anywhere`, async function () {
        assert.deepEqual(await verdictOf(inflateWhole(body, 1)), want, 'the whole body at once (/bad)')
        for (let at = 0; at <= body.length; at++) {
          assert.deepEqual(await verdictOf(inflateInReads(body, splitAt(body, at))), want, `two reads split at ${at}`)
        }
        const oneByteReads = Array.from(body, function single (b) { return Buffer.from([b]) })
        assert.deepEqual(await verdictOf(inflateInReads(body, oneByteReads)), want, 'one-byte reads')
      })
    }

    it('a megabyte of other bytes after a zero is refused at its first non-zero byte, however it arrives', async function () {
      const tail = Buffer.alloc(1 << 20, 0x41)
      const body = bytes(ONE, [0], tail)
      const want = { type: 'gzip.trailing.data', offset: ONE.length + 1 }
      assert.deepEqual(await verdictOf(inflateWhole(body, 1)), want)
      const reads = []
      for (let at = 0; at < body.length; at += 65536) reads.push(body.subarray(at, at + 65536))
      assert.deepEqual(await verdictOf(inflateInReads(body, reads)), want)
    })
  })
})
