/**
 * A decoder's own memory (lib/ingest/decoder-memory.js): brotli's ring buffer and zstd's window are
 * read from the header and reserved before the decoder gets a byte, in the decoder budget (/good,
 * /streamparser-json: wait) or the request's reservation (/bad, /express-json: refuse); one rule
 * per codec on every route, whole or split: an empty layer is truncated, a zstd frame's window is
 * held to 8 MiB, and a coding name is looked up among the codecs only.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import zlib from 'node:zlib'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { CODECS, decodes } from '../lib/ingest/codecs.js'
import { inflateWhole, decoderStreams } from '../lib/ingest/gzip-framing.js'
import {
  BROTLI_TABLES, DecoderBudget, DecoderMemory, INFLATE_BYTES, ZSTD_BESIDE_WINDOW, brotliWindow, reservationSource, worstDecoderBytes
} from '../lib/ingest/decoder-memory.js'
import { ZstdFrames } from '../lib/ingest/zstd-frame.js'
import { createAdmission } from '../lib/limits/admission.js'
import { fromZlibError } from '../lib/errors/index.js'
import { splitAt } from './gzip-framing-cases.js'
import { startLab, post, generatedJson, getJson, waitFor } from './helpers.js'

const MiB = 1024 * 1024
const ROUTES = Object.freeze(['bad', 'good', 'express-json', 'streamparser-json'])
const ZSTD = decodes(CODECS.zstd)

function brotli (bytes, lgwin) {
  return zlib.brotliCompressSync(bytes, { params: { [zlib.constants.BROTLI_PARAM_LGWIN]: lgwin, [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } })
}

/** A zstd frame whose size is not in its header, so that it carries a Window_Descriptor (RFC 8878, 3.1.1.1.2). */
async function zstdWithWindow (bytes, windowLog) {
  const out = []
  await pipeline(Readable.from([bytes]), zlib.createZstdCompress({ params: { [zlib.constants.ZSTD_c_windowLog]: windowLog } }), async function gather (source) {
    for await (const chunk of source) out.push(chunk)
  })
  return Buffer.concat(out)
}

async function decodeInReads (codec, reads) {
  const out = []
  await pipeline(Readable.from(reads, { objectMode: false }), ...decoderStreams([codec]), async function collect (source) {
    for await (const chunk of source) out.push(chunk)
  })
  return Buffer.concat(out)
}

function refusalOf (promise, codec) {
  return promise.then(function decoded () { return null }, function refused (err) { return fromZlibError(err, 0, codec) ?? err })
}

/** A body sent in two parts: the second only once `release()` is called. */
function postHeldOpen (url, body, headers, at) {
  let release
  const released = new Promise(function waitForRelease (resolve) { release = resolve })
  const answer = new Promise(function send (resolve, reject) {
    const req = http.request(url, { method: 'POST', headers: { ...headers, 'content-length': String(body.length) } }, function onResponse (res) {
      const parts = []
      res.on('data', function keep (c) { parts.push(c) })
      res.on('end', function done () { resolve({ status: res.statusCode, headers: res.headers, body: JSON.parse(Buffer.concat(parts).toString()) }) })
    })
    req.on('error', reject)
    req.write(body.subarray(0, at))
    released.then(function sendRest () { req.end(body.subarray(at)) })
  })
  return { answer, release }
}

describe('a decoder\'s own memory', function () {
  this.timeout(60_000)

  describe('read from the header', function () {
    it('is brotli\'s window from the stream\'s first byte, 2^WBITS for every window the encoder writes', function () {
      const text = Buffer.from('{"items":[' + '{"id":1,"name":"decoder"},'.repeat(5000) + '{"id":2}]}')
      for (let lgwin = 10; lgwin <= 24; lgwin++) assert.equal(brotliWindow(brotli(text, lgwin)[0]), 2 ** lgwin, `lgwin ${lgwin}`)
    })

    it('is each zstd frame\'s window, no more than its content, the largest so far', async function () {
      if (!ZSTD) this.skip()
      const big = Buffer.alloc(3 * MiB, 'abcdefghijklmnopqrstuvwxyz0123456789')
      for (const windowLog of [10, 17, 20, 23]) {
        const frames = new ZstdFrames()
        assert.equal(frames.cut(await zstdWithWindow(big, windowLog)).error, null)
        assert.equal(frames.window, 2 ** windowLog, `windowLog ${windowLog}: a streamed frame does not say its size`)
      }
      const frames = new ZstdFrames()
      frames.cut(Buffer.concat([zlib.zstdCompressSync(Buffer.from('small')), await zstdWithWindow(big, 20), zlib.zstdCompressSync(Buffer.from('tiny'))]))
      assert.equal(frames.window, 2 ** 20, 'a one-call frame\'s window is its content: the largest is the streamed frame\'s')
    })
  })

  describe('reserved before the decoder is made', function () {
    it('waits in the decoder budget while others hold it, and is given back whatever happens', async function () {
      const budget = new DecoderBudget(20 * MiB, null, 60_000)
      const first = new DecoderMemory([CODECS.br], budget, { streamed: true })
      const second = new DecoderMemory([CODECS.br], budget, { streamed: true })
      await first.fit(0, 16 * MiB + BROTLI_TABLES)
      let fitted = false
      const waiting = second.fit(0, 16 * MiB + BROTLI_TABLES).then(function fit () { fitted = true })
      await new Promise(setImmediate)
      assert.equal(fitted, false)
      assert.equal(budget.waiting, 1)
      first.release()
      await waiting
      assert.equal(budget.used, 16 * MiB + BROTLI_TABLES)
      second.release()
      second.release()
      assert.equal(budget.used, 0)
    })

    it('takes an inner layer at its worst at the first header, then shrinks to what the header says', async function () {
      const budget = new DecoderBudget(64 * MiB, null, 60_000)
      const memory = new DecoderMemory([CODECS.gzip, CODECS.br], budget, { streamed: true })
      assert.equal(memory.most(), INFLATE_BYTES + worstDecoderBytes(CODECS.br))
      await memory.fit(0, INFLATE_BYTES)
      assert.equal(budget.used, memory.most())
      await memory.fit(1, 2 ** 16 + BROTLI_TABLES)
      assert.equal(budget.used, INFLATE_BYTES + 2 ** 16 + BROTLI_TABLES)
      memory.release()
      assert.equal(budget.used, 0)
    })

    it('gives up a wait with 503 server.busy when no decoder gave memory back for the queue\'s deadline', async function () {
      const budget = new DecoderBudget(20 * MiB, null, 50)
      const holder = new DecoderMemory([CODECS.br], budget, { streamed: true })
      await holder.fit(0, 16 * MiB + BROTLI_TABLES)
      const refusal = await new DecoderMemory([CODECS.br], budget, { streamed: true }).fit(0, 16 * MiB).catch(function refused (err) { return err })
      assert.equal(refusal.status, 503)
      assert.equal(refusal.type, 'server.busy')
      assert.equal(refusal.headers['Retry-After'], '1')
      assert.equal(budget.waiting, 0)
      holder.release()
    })

    it('is refused in the memory budget with the body\'s own 413 when a route reserves it there', async function () {
      const admission = createAdmission({ budget: 64 * MiB, readRss: function idle () { return 40 * MiB }, collect: null })
      const reservation = admission.reserve(0, { route: 'bad', what: 'this body' })
      const memory = new DecoderMemory([CODECS.br], reservationSource(reservation), { streamed: false })
      const refusal = await memory.fit(0, 16 * MiB + BROTLI_TABLES).catch(function refused (err) { return err })
      assert.equal(refusal.type, 'memory.budget.exceeded')
      assert.match(refusal.message, /decoder's window/)
      await memory.fit(0, 2 ** 16 + BROTLI_TABLES)
      assert.equal(admission.state().reserved, 2 ** 16 + BROTLI_TABLES)
      await memory.fit(0, 0)
      assert.equal(admission.state().reserved, 0)
      reservation.release()
    })

    it('counts the decoder budget in the memory budget, so that the routes that buffer see it', async function () {
      const admission = createAdmission({ budget: 1024 * MiB, readRss: function idle () { return 0 }, collect: null })
      const budget = new DecoderBudget(24 * MiB, admission, 60_000)
      const memory = new DecoderMemory([CODECS.zstd], budget, { streamed: true })
      await memory.fit(0, 8 * MiB + ZSTD_BESIDE_WINDOW)
      assert.equal(admission.state().reserved, 8 * MiB + ZSTD_BESIDE_WINDOW)
      memory.release()
      assert.equal(admission.state().reserved, 0)
    })
  })

  describe('on the streaming routes, over HTTP', function () {
    let lab
    let doc
    let body
    before(async function () {
      lab = await startLab({ ingest: { decoderBudget: 20 * MiB } })
      doc = (await generatedJson({ size: 3000, seed: 4 })).bytes
      body = brotli(doc, 24)
    })
    after(async function () {
      await lab.close()
    })

    for (const route of ['good', 'streamparser-json']) {
      it(`/${route}: a second 16 MiB brotli window waits while the first is held, the window shows in the inflate stage, and both answer /bad's summary`, async function () {
        const headers = { 'content-type': 'application/json', 'content-encoding': 'br' }
        const want = await post(`${lab.url}/bad`, body, headers)
        assert.equal(want.status, 200, want.text)
        const first = postHeldOpen(`${lab.url}/${route}`, body, headers, body.length >> 1)
        await waitFor(async function firstHoldsItsWindow () {
          const snapshot = await getJson(`${lab.url}/metrics?format=json`)
          return snapshot.body.decoderBudget.used >= 16 * MiB
        })
        const second = postHeldOpen(`${lab.url}/${route}`, body, headers, 1)
        second.release()
        await waitFor(async function secondWaits () {
          return (await getJson(`${lab.url}/metrics?format=json`)).body.decoderBudget.waiting === 1
        })
        const held = (await getJson(`${lab.url}/metrics?format=json`)).body
        assert.ok(held.decoderBudget.used <= 20 * MiB, `${held.decoderBudget.used} bytes held of 20 MiB`)
        const inflate = held.sample.requests.map(function inflating (r) { return r.held.inflate ?? 0 })
        assert.ok(inflate.some(function holdsTheWindow (bytes) { return bytes >= 16 * MiB }), `the inflate stages hold ${inflate}`)
        first.release()
        for (const answer of [await first.answer, await second.answer]) {
          assert.equal(answer.status, 200, JSON.stringify(answer.body))
          assert.deepEqual(answer.body.summary, want.body.summary)
        }
        assert.equal((await getJson(`${lab.url}/metrics?format=json`)).body.decoderBudget.used, 0)
      })
    }
  })

  describe('one rule per codec, on every route', function () {
    let lab
    before(async function () {
      lab = await startLab()
    })
    after(async function () {
      await lab.close()
    })

    for (const word of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'gzip, toString', 'GZIP, Constructor']) {
      it(`answers 415 for the coding "${word}" on every route: names are looked up among the codecs only`, async function () {
        for (const route of ROUTES) {
          const answer = await post(`${lab.url}/${route}`, zlib.gzipSync('{"items":[]}'), { 'content-type': 'application/json', 'content-encoding': word })
          assert.equal(answer.status, 415, `${route}: ${answer.text}`)
        }
      })
    }

    for (const name of Object.keys(CODECS).filter(function here (n) { return decodes(CODECS[n]) })) {
      it(`answers an empty ${name} layer as truncated on every route, alone and inside another`, async function () {
        const type = name === 'gzip' ? 'gzip.truncated' : 'encoding.truncated'
        for (const route of ROUTES) {
          const answer = await post(`${lab.url}/${route}`, Buffer.alloc(0), { 'content-type': 'application/json', 'content-encoding': name })
          assert.equal(answer.status, 400, `${route}: ${answer.text}`)
          assert.equal(answer.body.error.type, type, route)
        }
        for (const route of ['bad', 'good', 'streamparser-json']) {
          const answer = await post(`${lab.url}/${route}`, zlib.gzipSync(Buffer.alloc(0)), { 'content-type': 'application/json', 'content-encoding': `${name}, gzip` })
          assert.equal(answer.status, 400, `${route} (${name}, gzip): ${answer.text}`)
          assert.equal(answer.body.error.type, type, route)
        }
      })
    }

    it('refuses a zstd frame asking more than 8 MiB, even of a few bytes, whole and split at every byte, on every route', async function () {
      if (!ZSTD) this.skip()
      const text = Buffer.from('{"items":[{"id":1},{"id":2}]}')
      const frame = await zstdWithWindow(text, 23)
      assert.equal(frame[5], 13 << 3, 'an 8 MiB Window_Descriptor')
      const nine = Buffer.from(frame)
      nine[5] = (13 << 3) | 1 // 8 MiB and an eighth: 9 MiB, for the same few bytes
      assert.equal(String(await inflateWhole(frame, [CODECS.zstd], { sync: true })), String(text))
      for (const [how, decode] of [
        ['whole', function whole () { return inflateWhole(nine, [CODECS.zstd]) }],
        ['whole, synchronous', function sync () { return inflateWhole(nine, [CODECS.zstd], { sync: true }) }],
        ...Array.from({ length: nine.length - 1 }, function splitAt1 (_, k) {
          return [`split at ${k + 1}`, function split () { return decodeInReads(CODECS.zstd, splitAt(nine, k + 1)) }]
        })
      ]) {
        const refusal = await refusalOf(decode(), 'zstd')
        assert.equal(refusal?.type, 'encoding.invalid', how)
        assert.match(refusal.details.cause, /window is over 8 MiB.*RFC 9659/, how)
      }
      for (const route of ROUTES) {
        const answer = await post(`${lab.url}/${route}`, nine, { 'content-type': 'application/json', 'content-encoding': 'zstd' })
        assert.equal(answer.status, 400, `${route}: ${answer.text}`)
        assert.equal(answer.body.error.type, 'encoding.invalid', route)
      }
    })
  })
})
