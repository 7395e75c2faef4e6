/**
 * POST /streamparser-json, what it refuses and when, beside /bad and /good:
 * gzip framing as /bad frames it, the fuzzer's mutated bodies, bombs and
 * clients that misbehave, records dense with values, and the lab's limits set
 * small. One refusal may differ, as it must for a parser that reads as zlib
 * inflates: a damaged gzip body whose inflated bytes stop being JSON before
 * zlib finds the damage is refused for its JSON at once (422), where /bad,
 * inflating everything first, names the gzip (400). Where the lab's streaming
 * limits apply (one record's bytes, the ratio), it answers as /good does.
 * What it reads alike is test/streamparser-json.test.js's.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import { collect, generatedGzip, labInTempDir, post, postChunked, waitFor } from './helpers.js'
import {
  GZIP, KiB, MiB, ROUTE, answers, assertSameAs, assertSameAsBadOrSooner, gz, sendPart, verdict, watchRequests
} from './streamparser-json-helpers.js'
import { createBomb } from '../lib/generate/bombs.js'
import { prng, randomRecords, serialise, mutate, mutateGzip } from '../lib/measure/mutate.js'

describe(`POST /${ROUTE}`, function () {
  this.timeout(60000)
  const lab = labInTempDir('streamparser-json')

  describe('gzip framing (lib/ingest/gzip-framing.js), as /bad frames it', function () {
    const HEAD = '{"items":[{"id":1,"s":"caf\\u00e9"}'
    const TAIL = ',{"id":2,"n":[1.5,2]}]}'
    const ONE = gz(HEAD + TAIL)
    const FIRST = gz(HEAD)
    const SECOND = gz(TAIL)
    function withByte (buf, at, value) {
      const copy = Buffer.from(buf)
      copy[at < 0 ? copy.length + at : at] = value
      return copy
    }
    const CASES = [
      ['two members', Buffer.concat([FIRST, SECOND]), 200],
      ['trailing zero padding', Buffer.concat([ONE, Buffer.alloc(512)]), 200],
      ['zero padding, then garbage', Buffer.concat([ONE, Buffer.alloc(4), Buffer.from('xyz')]), [400, 'gzip.trailing.data']],
      ['a member, a zero, then a second member', Buffer.concat([FIRST, Buffer.from([0]), SECOND]), [400, 'gzip.trailing.data']],
      ['garbage right after the member', Buffer.concat([ONE, Buffer.from('garbage')]), [400, 'gzip.invalid']],
      ['a truncated member', ONE.subarray(0, ONE.length - 5), [400, 'gzip.truncated']],
      ['a gzip header only', ONE.subarray(0, 10), [400, 'gzip.truncated']],
      ['a CRC mismatch (corrupt gzip)', withByte(ONE, -8, ONE[ONE.length - 8] ^ 0xff), [400, 'gzip.invalid']],
      ['a flipped byte in the deflate stream', withByte(ONE, 12, ONE[12] ^ 0x55), null],
      ['a body that is not gzip', Buffer.from(HEAD + TAIL), [400, 'gzip.invalid']],
      ['an empty body', Buffer.alloc(0), [400, 'gzip.truncated']]
    ]
    for (const [name, body, want] of CASES) {
      const expected = want === null ? 'what /bad answers' : want === 200 ? '200' : `${want[0]} ${want[1]}`
      it(`answers ${expected} to ${name}`, async function () {
        const { bad, streamparser } = await answers(lab.url, body)
        if (want === 200) assert.equal(streamparser.body.summary.items, 2, streamparser.text)
        else if (want !== null) assert.deepEqual(verdict(streamparser), { status: want[0], type: want[1] })
        else assert.ok(streamparser.status >= 400 && streamparser.status < 500, streamparser.text)
        assertSameAs(bad, streamparser, name)
      })
    }

    it('judges the bytes after the padding before the unfinished document, though they come 200 ms later', async function () {
      const body = Buffer.concat([FIRST, Buffer.from([0]), SECOND])
      const { socket, answer } = sendPart(lab.port, `/${ROUTE}`, body.length, body.subarray(0, FIRST.length + 1))
      setTimeout(function rest () { socket.write(body.subarray(FIRST.length + 1)) }, 200)
      const res = await answer
      assert.equal(res.status, 400, JSON.stringify(res.json))
      assert.equal(res.json.error.type, 'gzip.trailing.data')
      assert.equal(res.json.error.offset, FIRST.length + 1)
    })

    it('answers every truncation and every flipped byte of a small body as /bad does, or sooner for the JSON, never with a 5xx', async function () {
      const body = gz('{"items":[{"id":1,"numbers":[1.5,-2e3]},{"id":2,"s":"é"}]}')
      const damaged = []
      for (let n = 0; n < body.length; n++) damaged.push(body.subarray(0, n))
      for (let i = 0; i < body.length; i++) damaged.push(withByte(body, i, body[i] ^ 0x41))
      const seen = { same: 0, sooner: 0 }
      for (const [k, bytes] of damaged.entries()) {
        const { bad, streamparser } = await answers(lab.url, bytes)
        assert.ok(streamparser.status < 500, `${k}: ${streamparser.text}`)
        seen[await assertSameAsBadOrSooner(bad, streamparser, bytes, `damaged body ${k}`)]++
      }
      assert.ok(seen.same > 100, JSON.stringify(seen))
    })

    it('answers 422 json.invalid at once to a large body whose inflated bytes stop being JSON before zlib finds the damage', async function () {
      // 5 MB of records, then a deflate stream that is not this one's: zlib inflates garbage before it fails
      const body = await generatedGzip({ bytes: 5_000_000, format: 'json', seed: 2 })
      const spliced = Buffer.concat([body.subarray(0, body.length >> 1), gz('xyz').subarray(10)])
      const { bad, streamparser } = await answers(lab.url, spliced)
      assert.deepEqual(verdict(bad), { status: 400, type: 'gzip.truncated' })
      assert.deepEqual(verdict(streamparser), { status: 422, type: 'json.invalid' })
      assert.equal(await assertSameAsBadOrSooner(bad, streamparser, spliced, 'a spliced body'), 'sooner')
    })
  })

  describe('mutated bodies against /bad over HTTP (the fuzzer\'s inputs)', function () {
    it('agrees with /bad on 300 mutated gzip and JSON bodies: the same summary, the same refusal, or the JSON\'s fault sooner', async function () {
      const rand = prng(2026)
      const tally = { accepted: 0, refused: 0, sooner: 0, ndjson: 0 }
      for (let k = 0; k < 300; k++) {
        const format = ['json', 'array', 'ndjson'][k % 3]
        const text = serialise(rand, randomRecords(rand), format)
        const r = rand()
        const body = r < 0.2 ? gz(text) : r < 0.6 ? gz(mutate(rand, text)) : mutateGzip(rand, gz(text), gz(serialise(rand, randomRecords(rand), format)))
        const { bad, streamparser } = await answers(lab.url, body)
        const where = `input ${k}: ${body.toString('base64')}`
        assert.ok(streamparser.status < 500 && streamparser.body !== null, `${where}: ${streamparser.text}`)
        if (bad.status === 200 && bad.body.summary.format === 'ndjson') {
          tally.ndjson++
          assert.deepEqual(verdict(streamparser), { status: 422, type: 'json.invalid' }, where)
          continue
        }
        if (await assertSameAsBadOrSooner(bad, streamparser, body, where) === 'sooner') tally.sooner++
        else tally[bad.status === 200 ? 'accepted' : 'refused']++
      }
      // both sides must be exercised, or agreement proves little
      assert.ok(tally.accepted > 40 && tally.refused > 80 && tally.ndjson > 10, JSON.stringify(tally))
    })
  })

  describe('bodies built to hurt, and clients that misbehave', function () {
    it('answers 413 ratio.too.large to a zip bomb past the ratio, as /good does, long before it is inflated', async function () {
      const bomb = createBomb({ variant: 'ratio', bytes: '256MB' })
      const body = await collect(...bomb.streams)
      const [good, streamparser] = await Promise.all(['good', ROUTE].map(function send (route) { return post(`${lab.url}/${route}`, body, bomb.uploadHeaders) }))
      assert.deepEqual(verdict(streamparser), { status: 413, type: 'ratio.too.large' }, streamparser.text)
      assertSameAs(good, streamparser, 'a ratio bomb')
      // the ratio is judged from 16 MiB on, against the compressed bytes read so far (some ahead of zlib)
      assert.ok(streamparser.body.error.inflatedBytes < 64 * MiB, `inflated ${streamparser.body.error.inflatedBytes} B of 256 MB`)
    })

    for (const [variant, status, type, like] of [['members', 413, 'ratio.too.large', 'good'], ['chained', 413, 'ratio.too.large', 'good'], ['string', 413, 'record.too.large', 'good'], ['depth', 422, 'json.too.deep', 'bad']]) {
      it(`answers ${status} ${type} to the ${variant} bomb, as /${like} does`, async function () {
        const bomb = createBomb({ variant, ...(variant === 'depth' ? {} : { bytes: '256MB' }) })
        const body = await collect(...bomb.streams)
        const [other, streamparser] = await Promise.all([like, ROUTE].map(function send (route) { return post(`${lab.url}/${route}`, body, bomb.uploadHeaders) }))
        assert.deepEqual(verdict(streamparser), { status, type }, streamparser.text)
        assertSameAs(other, streamparser, `the ${variant} bomb`)
      })
    }

    it('answers a client that vanishes mid-body with 400 request.aborted on the bus, keeps nothing in flight, and serves the next', async function () {
      const watched = watchRequests(lab.app.locals.events)
      try {
        const body = await generatedGzip({ size: 5000, format: 'json', seed: 5 })
        for (let k = 0; k < 5; k++) {
          const { socket } = sendPart(lab.port, `/${ROUTE}`, body.length, body.subarray(0, Math.floor(body.length * (k + 1) / 7)))
          await waitFor(function started () { return watched.open.size === 1 })
          socket.destroy()
          await waitFor(function ended () { return watched.open.size === 0 })
        }
        const aborted = watched.ended.filter(function ours (e) { return e.route === ROUTE })
        assert.deepEqual(aborted.map(function what (e) { return `${e.status} ${e.errorType}` }), Array(5).fill('400 request.aborted'))
        const res = await post(`${lab.url}/${ROUTE}`, body)
        assert.equal(res.status, 200)
        assert.equal(res.body.summary.items, 5000)
        await waitFor(function nothingOpen () { return watched.open.size === 0 })
      } finally {
        watched.stop()
      }
    })

    it('answers 403 request.cross.site to a cross-site POST and a foreign Origin, before the body is read', async function () {
      const watched = watchRequests(lab.app.locals.events)
      try {
        for (const headers of [{ 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' }, { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'no-cors' }, { origin: 'http://attacker.example' }]) {
          const res = await new Promise(function ask (resolve, reject) {
            const req = http.request(`${lab.url}/${ROUTE}`, { method: 'POST', headers: { ...GZIP, ...headers } }, function answered (r) {
              let text = ''
              r.on('data', function keep (c) { text += c })
              r.on('end', function done () { resolve({ status: r.statusCode, body: JSON.parse(text) }) })
            })
            req.on('error', reject)
            req.end(gz('{"items":[1]}'))
          })
          assert.equal(res.status, 403, JSON.stringify(headers))
          assert.equal(res.body.error.type, 'request.cross.site', JSON.stringify(headers))
        }
      } finally {
        watched.stop()
      }
      assert.deepEqual(watched.ended, [], 'no ingest began')
    })
  })
})

describe(`POST /${ROUTE}: records dense with values`, function () {
  this.timeout(60000)
  const lab = labInTempDir('streamparser-json-dense')

  it('answers 413 record.too.dense to a record within limits.record that would build past ingest.parseCost, as /good does', async function () {
    // under the 4 MiB record limit, each of these builds about 100 MiB of values in the library's parser
    const cases = [
      ['tiny arrays', `{"items":[[${'[],'.repeat(1.3 * MiB)}[]]]}`],
      ['tiny objects', `[{"id":1},[${'{},'.repeat(1.3 * MiB)}{}]]`],
      ['numbers', `{"items":[[${'1,'.repeat(1.9 * MiB)}1]]}`]
    ]
    for (const [name, text] of cases) {
      const body = gz(text)
      const [good, streamparser] = await Promise.all(['good', ROUTE].map(function send (route) { return post(`${lab.url}/${route}`, body) }))
      assert.deepEqual(verdict(streamparser), { status: 413, type: 'record.too.dense' }, `${name}: ${streamparser.text}`)
      assertSameAs(good, streamparser, name)
    }
  })

  it('reads ordinary records of any number, each far under the cost', async function () {
    const text = JSON.stringify({ items: Array.from({ length: 20000 }, function item (_, id) { return { id, numbers: [id, id / 3, -id], tags: ['a', 'b'] } }) })
    const { bad, streamparser } = await answers(lab.url, gz(text))
    assert.equal(streamparser.status, 200, streamparser.text)
    assertSameAs(bad, streamparser, 'ordinary records')
  })
})

describe(`POST /${ROUTE} with small limits`, function () {
  this.timeout(60000)
  const lab = labInTempDir('streamparser-json-limits', {
    limits: { depth: 8, record: 64 * KiB, compressed: 64 * KiB, inflated: 2 * MiB, bodyIdleMs: 300 }
  })

  it('answers 422 json.too.deep one bracket past limits.depth, and reads the document at the limit, as /bad does', async function () {
    for (const [levels, want] of [[8, 200], [9, 422]]) {
      // the root, items, the arrays, the record: `levels` in all
      const text = '{"items":[' + '['.repeat(levels - 3) + '{"id":1}' + ']'.repeat(levels - 3) + ']}'
      const { bad, streamparser } = await answers(lab.url, gz(text))
      assert.equal(streamparser.status, want, streamparser.text)
      if (want === 422) assert.equal(streamparser.body.error.type, 'json.too.deep')
      assertSameAs(bad, streamparser, `${levels} levels`)
    }
  })

  it('answers 413 record.too.large to one record past limits.record, as /good does', async function () {
    const string = 'a'.repeat(200 * KiB)
    const cases = [
      ['a string in a record', `{"items":[{"id":1},{"id":2,"s":"${string}"}]}`],
      ['a string record in an array', `[{"id":1},"${string}"]`],
      ['a number record', `[1,${'7'.repeat(200 * KiB)}]`],
      ['a value beside items', `{"meta":{"a":["${string}"]},"items":[]}`],
      ['whitespace inside a record', `{"items":[{"id":1,${' '.repeat(200 * KiB)}"n":2}]}`]
    ]
    for (const [name, text] of cases) {
      const body = gz(text)
      const [good, streamparser] = await Promise.all(['good', ROUTE].map(function send (route) { return post(`${lab.url}/${route}`, body) }))
      assert.deepEqual(verdict(streamparser), { status: 413, type: 'record.too.large' }, `${name}: ${streamparser.text}`)
      assertSameAs(good, streamparser, name)
      assert.equal(streamparser.body.error.limit, 64 * KiB)
      assert.ok(streamparser.body.error.received < 64 * KiB + 64 * KiB, `${name}: held ${streamparser.body.error.received} B`)
    }
  })

  it('reads records that together pass limits.record, and whitespace between them of any length, as /bad and /good do', async function () {
    const records = Array.from({ length: 2000 }, function record (_, id) { return `{"id":${id},"s":"${'b'.repeat(100)}"}` })
    // past limits.record each, within limits.inflated all together
    const spaces = ' '.repeat(150 * KiB)
    for (const text of [
      `{"items":[${records.join(',')}]}`,
      `${spaces}{"a":1,${spaces}"items":[${records.slice(0, 3).join(`,${spaces}`)}${spaces}]${spaces}}${spaces}`,
      `[1${spaces},"é"${spaces},${spaces}2]`
    ]) {
      const body = gz(text)
      const [bad, good, streamparser] = await Promise.all(['bad', 'good', ROUTE].map(function send (route) { return post(`${lab.url}/${route}`, body) }))
      assert.equal(streamparser.status, 200, streamparser.text)
      assertSameAs(bad, streamparser, text.slice(0, 40))
      assertSameAs(good, streamparser, text.slice(0, 40))
    }
  })

  it('answers 413 before reading a body whose Content-Length passes the compressed limit, and once a chunked one does, as /bad does', async function () {
    const claimed = sendPart(lab.port, `/${ROUTE}`, 65 * KiB, Buffer.alloc(0))
    const res = await claimed.answer
    assert.equal(res.status, 413)
    assert.equal(res.json.error.type, 'entity.too.large')
    const noise = gz(Buffer.from(Array.from({ length: 100 * KiB }, function digit (v, k) { return 48 + (k * 7919 % 10) })), { level: 0 })
    const pieces = []
    for (let i = 0; i < noise.length; i += 16 * KiB) pieces.push(noise.subarray(i, i + 16 * KiB))
    const [bad, streamparser] = await Promise.all(['bad', ROUTE].map(function send (route) { return postChunked(`${lab.url}/${route}`, pieces) }))
    assert.equal(streamparser.status, 413)
    assert.equal(streamparser.body.error.type, 'entity.too.large')
    assert.deepEqual([streamparser.status, streamparser.body.error.type], [bad.status, bad.body.error.type])
  })

  it('answers 413 inflated.too.large once the inflated limit is passed, as /bad does', async function () {
    const body = gz('{"items":[' + ' '.repeat(3 * MiB) + ']}')
    const { bad, streamparser } = await answers(lab.url, body)
    assert.deepEqual(verdict(streamparser), { status: 413, type: 'inflated.too.large' })
    assertSameAs(bad, streamparser, 'past the inflated limit')
  })

  it('answers 408 request.timeout to a body that stalls, as /bad does, and keeps nothing in flight', async function () {
    const watched = watchRequests(lab.app.locals.events)
    try {
      const body = gz(JSON.stringify({ items: Array.from({ length: 300 }, function item (_, id) { return { id } }) }))
      const answered = {}
      for (const route of ['bad', ROUTE]) {
        answered[route] = await sendPart(lab.port, `/${route}`, body.length, body.subarray(0, 100)).answer
      }
      assert.deepEqual([answered[ROUTE].status, answered[ROUTE].json.error.type], [408, 'request.timeout'])
      assert.deepEqual([answered.bad.status, answered.bad.json.error.type], [408, 'request.timeout'])
      await waitFor(function nothingOpen () { return watched.open.size === 0 })
    } finally {
      watched.stop()
    }
  })
})
