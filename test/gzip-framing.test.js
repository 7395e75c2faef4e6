/**
 * One gzip framing rule (lib/ingest/gzip-framing.js, docs/errors.md "What ends a
 * gzip body"): members back to back, then nothing or only zero bytes. Each
 * case has one verdict, the same from the whole-body inflate /bad uses and
 * from the stream /good uses, wherever the body is split into reads, and
 * the same from both routes over HTTP with the body sent in two writes split
 * at every byte.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import zlib from 'node:zlib'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { gunzipWhole, createGunzipBody } from '../lib/ingest/gzip-framing.js'
import { startLab } from './helpers.js'

const HEAD = '{"items":[{"id":1,"s":"caf\\u00e9"}'
const TAIL = ',{"id":2,"n":[1.5,2]}]}'
const WHOLE = HEAD + TAIL
const ONE = zlib.gzipSync(WHOLE)
const FIRST = zlib.gzipSync(HEAD)
const SECOND = zlib.gzipSync(TAIL)

function bytes (...parts) {
  return Buffer.concat(parts.map(function toBuffer (p) { return typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p) }))
}

function withByte (buf, at, value) {
  const copy = Buffer.from(buf)
  copy[at < 0 ? copy.length + at : at] = value
  return copy
}

/**
 * [name, body, verdict]: a verdict is the inflated text, or the error type
 * (and the offset, for trailing data).
 */
const CASES = [
  ['one member', ONE, { text: WHOLE }],
  ['two members', bytes(FIRST, SECOND), { text: WHOLE }],
  ['two members, then zero padding', bytes(FIRST, SECOND, [0, 0, 0, 0]), { text: WHOLE }],
  ['one member, one zero byte', bytes(ONE, [0]), { text: WHOLE }],
  ['one member, 512 zero bytes (a padded block)', bytes(ONE, Buffer.alloc(512)), { text: WHOLE }],
  ['a member, a zero byte, then a second member', bytes(FIRST, [0], SECOND), { type: 'gzip.trailing.data', offset: FIRST.length + 1 }],
  ['a member, four zero bytes, then garbage', bytes(ONE, [0, 0, 0, 0], 'xyz'), { type: 'gzip.trailing.data', offset: ONE.length + 4 }],
  ['a member, zeros, then one 0x01 at the very end', bytes(ONE, Buffer.alloc(9), [1]), { type: 'gzip.trailing.data', offset: ONE.length + 9 }],
  ['a member, then garbage', bytes(ONE, 'garbage'), { type: 'gzip.invalid' }],
  ['a member, then a lone 0x1f', bytes(ONE, [0x1f]), { type: 'gzip.truncated' }],
  ['a member, then a gzip header only', bytes(ONE, FIRST.subarray(0, 10)), { type: 'gzip.truncated' }],
  ['a member, then a corrupt second member', bytes(FIRST, withByte(SECOND, -8, SECOND[SECOND.length - 8] ^ 0xff)), { type: 'gzip.invalid' }],
  ['a truncated member', ONE.subarray(0, ONE.length - 5), { type: 'gzip.truncated' }],
  ['a CRC mismatch', withByte(ONE, -8, ONE[ONE.length - 8] ^ 0xff), { type: 'gzip.invalid' }],
  ['an ISIZE mismatch', withByte(ONE, -1, ONE[ONE.length - 1] ^ 0x01), { type: 'gzip.invalid' }],
  ['zero bytes only', Buffer.alloc(20), { type: 'gzip.invalid' }],
  ['an empty body', Buffer.alloc(0), { type: 'gzip.truncated' }]
]

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
  await pipeline(Readable.from(reads, { objectMode: false }), createGunzipBody(), async function collect (source) {
    for await (const chunk of source) out.push(chunk)
  })
  return Buffer.concat(out)
}

function splitAt (body, at) {
  return [body.subarray(0, at), body.subarray(at)].filter(function nonEmpty (p) { return p.length > 0 })
}

describe('one gzip framing rule', function () {
  describe('in lib/ingest/gzip-framing.js', function () {
    for (const [name, body, want] of CASES) {
      it(`${name}: ${want.text ? 'inflates' : want.type}, whole or split anywhere`, async function () {
        assert.deepEqual(await verdictOf(gunzipWhole(body)), want, 'the whole body at once (/bad)')
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
      assert.deepEqual(await verdictOf(gunzipWhole(body)), want)
      const reads = []
      for (let at = 0; at < body.length; at += 65536) reads.push(body.subarray(at, at + 65536))
      assert.deepEqual(await verdictOf(inflateInReads(body, reads)), want)
    })
  })

  describe('over HTTP, both routes, the body in two writes split at every byte', function () {
    this.timeout(180000)
    let lab
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 })
    before(async function start () { lab = await startLab() })
    after(async function stop () {
      agent.destroy()
      await lab?.close()
    })

    /** POST in two writes with a pause between them, so the lab usually reads them apart. */
    function postInTwo (route, parts) {
      return new Promise(function exchange (resolve, reject) {
        const length = parts.reduce(function sum (n, p) { return n + p.length }, 0)
        const req = http.request(`${lab.url}/${route}`, {
          method: 'POST',
          agent,
          headers: { host: 'localhost', 'content-type': 'application/gzip', 'content-length': length }
        }, function onResponse (res) {
          const chunks = []
          res.on('data', function keep (c) { chunks.push(c) })
          res.on('end', function done () { resolve({ status: res.statusCode, json: JSON.parse(Buffer.concat(chunks).toString()) }) })
        })
        req.on('error', reject)
        if (parts.length < 2) return req.end(parts[0])
        req.write(parts[0])
        setTimeout(function second () { req.end(parts[1]) }, 1)
      })
    }

    const summaryOfWhole = {}
    before(async function referenceSummary () {
      const res = await postInTwo('bad', [ONE])
      assert.equal(res.status, 200)
      summaryOfWhole.value = res.json.summary
    })

    it('judges the bytes after the padding before the document: the first read ends at the zero, the rest comes 200 ms later', async function () {
      // the members end in an unfinished document: a parser that answered at zlib's end would say 422 json.invalid
      const body = bytes(FIRST, [0], SECOND)
      for (const route of ['bad', 'good']) {
        const res = await new Promise(function exchange (resolve, reject) {
          const req = http.request(`${lab.url}/${route}`, {
            method: 'POST',
            agent,
            headers: { host: 'localhost', 'content-type': 'application/gzip', 'content-length': body.length }
          }, function onResponse (r) {
            const chunks = []
            r.on('data', function keep (c) { chunks.push(c) })
            r.on('end', function done () { resolve({ status: r.statusCode, json: JSON.parse(Buffer.concat(chunks).toString()) }) })
          })
          req.on('error', reject)
          req.write(body.subarray(0, FIRST.length + 1))
          setTimeout(function rest () { req.end(body.subarray(FIRST.length + 1)) }, 200)
        })
        assert.equal(res.status, 400, `${route}: ${JSON.stringify(res.json)}`)
        assert.equal(res.json.error.type, 'gzip.trailing.data', route)
      }
    })

    for (const [name, body, want] of CASES) {
      it(`${name}: ${want.text ? '200 with the whole document' : `400 ${want.type}`}`, async function () {
        for (let at = 0; at <= body.length; at++) {
          for (const route of ['bad', 'good']) {
            const res = await postInTwo(route, splitAt(body, at))
            const where = `${route}, split at ${at}`
            if (want.text) {
              assert.equal(res.status, 200, `${where}: ${JSON.stringify(res.json)}`)
              assert.deepEqual(res.json.summary, { ...summaryOfWhole.value, compressedBytes: body.length }, where)
            } else {
              assert.equal(res.status, 400, `${where}: ${JSON.stringify(res.json)}`)
              assert.equal(res.json.error.type, want.type, where)
              if (want.offset !== undefined) assert.equal(res.json.error.offset, want.offset, where)
            }
          }
        }
      })
    }
  })
})
