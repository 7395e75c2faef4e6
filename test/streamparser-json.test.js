/**
 * POST /streamparser-json: the textbook streaming route on @streamparser/json
 * (lib/ingest/streamparser.js) and the guard beside it
 * (lib/ingest/token-guard.js). Where /bad reads a body, this route must read
 * it alike: the same summary for every document both accept, the same status
 * and error type for every body /bad refuses, whatever the chunks the body
 * arrives in, and the same reading of the headers. What it refuses and when
 * (gzip framing, bombs, clients that misbehave, dense records, small limits)
 * is test/streamparser-json-refusals.test.js's; four hundred mutants a
 * format in process, and the memory a large body costs, are
 * test/slow/streamparser-json.test.js's.
 */
import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { collect, generatedGzip, labInTempDir, post, postInChunks, postChunked, waitFor } from './helpers.js'
import {
  GZIP, ROUTE, answers, assertSameAs, asBufferedDecision, bufferedDecision, gz, ingestInReads, oneByteReads, verdict, watchRequests
} from './streamparser-json-helpers.js'
import { wellFormedUtf8 } from '../lib/ingest/token-guard.js'
import { prng } from '../lib/measure/mutate.js'

describe(`POST /${ROUTE}`, function () {
  this.timeout(60000)
  const lab = labInTempDir('streamparser-json')

  describe('against /bad and /good on generated documents', function () {
    const SIZES = [
      { label: 'no items', params: { size: 0 } },
      { label: 'one item', params: { size: 1 } },
      { label: '500 items', params: { size: 500 } },
      { label: 'about 3 MB', params: { bytes: 3_000_000 } }
    ]
    for (const format of ['json', 'array']) {
      for (const { label, params } of SIZES) {
        it(`gives the summary /bad and /good give for ${format === 'array' ? 'an' : 'a'} ${format} document of ${label}`, async function () {
          const body = await generatedGzip({ ...params, format, seed: 7 })
          const [bad, good, streamparser] = await Promise.all(['bad', 'good', ROUTE].map(function send (route) { return post(`${lab.url}/${route}`, body) }))
          assert.equal(streamparser.status, 200, streamparser.text)
          assert.equal(streamparser.body.route, ROUTE)
          assert.deepEqual(streamparser.body.summary, bad.body.summary)
          assert.deepEqual(streamparser.body.summary, good.body.summary)
          assert.equal(streamparser.body.summary.format, format)
          assert.equal(streamparser.body.summary.compressedBytes, body.length)
          if (params.size !== undefined) assert.equal(streamparser.body.summary.items, params.size)
          else assert.ok(streamparser.body.summary.inflatedBytes >= 3_000_000)
          assert.equal(typeof streamparser.body.ms, 'number')
          assert.ok(streamparser.body.memory.peakRss > 0)
        })
      }
    }

    it('gives the same summary to a body written a few bytes at a time, and to a chunked one', async function () {
      const body = await generatedGzip({ size: 30, format: 'json', seed: 3 })
      const want = (await post(`${lab.url}/bad`, body)).body.summary
      for (const size of [1, 7, 1000]) {
        const slow = await postInChunks(`${lab.url}/${ROUTE}`, body, size)
        assert.equal(slow.status, 200, `writes of ${size} B`)
        assert.deepEqual(slow.body.summary, want, `writes of ${size} B`)
      }
      const pieces = []
      for (let i = 0; i < body.length; i += 999) pieces.push(body.subarray(i, i + 999))
      const chunked = await postChunked(`${lab.url}/${ROUTE}`, pieces)
      assert.equal(chunked.status, 200)
      assert.deepEqual(chunked.body.summary, want)
    })

    it('goes out on the lab\'s event bus as the other routes do, refusals included', async function () {
      const watched = watchRequests(lab.app.locals.events)
      try {
        await post(`${lab.url}/${ROUTE}`, gz('{"items":[{"id":5}]}'))
        await post(`${lab.url}/${ROUTE}`, gz('{"items":['))
        await waitFor(function bothEnded () { return watched.ended.filter(function ours (e) { return e.route === ROUTE }).length === 2 })
      } finally {
        watched.stop()
      }
      const ends = watched.ended.filter(function ours (e) { return e.route === ROUTE })
      assert.deepEqual(ends.map(function what (e) { return [e.status, e.items ?? e.errorType] }), [[200, 1], [422, 'json.invalid']])
    })
  })

  describe('chunk boundaries anywhere, in process', function () {
    // multi-byte UTF-8 (2, 3 and 4 bytes), escapes, numbers and literals of every kind, a repeated items key
    const DOCUMENTS = [
      ['json', '{"meta":{"s":"é"},"items":[{"id":1,"s":"caf\\u00e9 中文 😀","n":[-0.5e-3,1E+2,-0,0]},' +
        '{"id":2,"t":true,"f":false,"z":null,"q":"\\"\\\\\\/\\b\\f\\n\\r\\t","u":"\\ud83d\\ude00\\ud800"}],' +
        '"items":[{"id":3,"big":123456789012345678901234567890,"inf":1e400},7, "x" ,[1,[2]]],"tail":"x"}'],
      ['array', ' [ {"id":9007199254740993} , -12.5e-7 , "😀" , true , null , {"items":[1,2]} ] '],
      ['array', '[1, "é", 23]   '],
      ['json', '{"items":[{"s":"\xC3(\xFF"},{"id":4,"s":"\xE0"},"\xF0\x9F\x98"]}'],
      ['json', '{"items":[1,2] , "items" : 5}'],
      ['array', ' [ [ \ufeff1] ]']
    ]

    for (const [format, text] of DOCUMENTS) {
      const inflated = Buffer.from(text, text.includes('\xC3') ? 'latin1' : 'utf8')
      it(`reads ${JSON.stringify(text.slice(0, 40))}... as JSON.parse does, one inflated byte at a time and split at every byte`, async function () {
        const want = bufferedDecision(inflated, format)
        const body = gz(inflated, { level: 0 })
        assert.deepEqual(asBufferedDecision(await ingestInReads([body], { query: { format } })), want, 'whole')
        assert.deepEqual(asBufferedDecision(await ingestInReads(oneByteReads(body), { query: { format } })), want, 'one byte at a time')
        for (let at = 1; at < body.length; at++) {
          const got = await ingestInReads([body.subarray(0, at), body.subarray(at)], { query: { format } })
          assert.deepEqual(asBufferedDecision(got), want, `split at ${at}`)
        }
      })
    }


    it('makes invalid UTF-8 U+FFFD exactly as Buffer#toString does, wherever the chunks end', async function () {
      const rand = prng(77)
      const pieces = [[0x61], [0xc3, 0xa9], [0xe4, 0xb8, 0xad], [0xf0, 0x9f, 0x98, 0x80], [0xc3], [0xe0, 0x80], [0xff], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xef, 0xbb, 0xbf], [0x80], [0x22]]
      for (let k = 0; k < 300; k++) {
        const parts = Array.from({ length: 1 + Math.floor(rand() * 12) }, function pick () { return pieces[Math.floor(rand() * pieces.length)] })
        const bytes = Buffer.from(parts.flat())
        const want = Buffer.from(bytes.toString('utf8'), 'utf8')
        for (let at = 0; at <= bytes.length; at++) {
          const got = await collect(Readable.from([bytes.subarray(0, at), bytes.subarray(at)], { objectMode: false }), wellFormedUtf8())
          assert.deepEqual(got, want, `${bytes.toString('hex')} split at ${at}`)
        }
        const single = await collect(Readable.from(oneByteReads(bytes), { objectMode: false }), wellFormedUtf8())
        assert.deepEqual(single, want, `${bytes.toString('hex')} a byte at a time`)
      }
    })
  })

  describe('documents where a streaming parser could part from JSON.parse, as /bad reads them', function () {
    const big = '123456789012345678901234567890'
    const CASES = [
      // [name, inflated text or bytes, what /bad and this route say: items, or [status, type]; query]
      ['two items keys: the last wins', '{"items":[{"id":1}],"items":[{"id":2},{"id":3}]}', 2],
      ['two items keys, the last one []', '{"items":[{"id":1},{"id":2}],"items":[]}', 0],
      ['two items keys, the last one not an array', '{"items":[{"id":1}],"items":{"id":2}}', [422, 'json.items.missing']],
      ['an items key that is null, then one that is an array', '{"items":null,"x":[1],"items":[1,2,3]}', 3],
      ['an items array, then "items" as a value of another key', '{"items":[1],"other":"items","more":["items",[9]]}', 1],
      ['items nested inside records', '{"items":[{"id":1,"items":[1,2,3]},{"items":{"items":[4]}}]}', 2],
      ['items only inside another key', '{"meta":{"items":[1,2]}}', [422, 'json.items.missing']],
      ['an escaped "\\u0069tems" key', '{"\\u0069tems":[{"\\u0069d":4},5]}', 2],
      ['"__proto__" keys in the root and in records', '{"__proto__":{"items":[9]},"items":[{"__proto__":{"id":7,"n":1}},{"__proto__":5,"id":1},{"a":{"__proto__":[2,3]}}]}', 3],
      ['"__proto__" as the only items key', '{"__proto__":[1,2]}', [422, 'json.items.missing']],
      ['-0, 1e400, -1e400 and huge integers', `{"items":[-0,{"id":-0},1e400,-1e400,${big},-${big},{"id":${big}},{"id":9007199254740993},{"id":1.0},{"id":1e2}]}`, 10],
      ['lone and paired surrogate escapes', '{"items":[{"s":"\\ud800","t":"\\udc00x","u":"\\ud83d\\ude00","id":2}]}', 1],
      ['duplicate keys inside a record', '{"items":[{"id":1,"id":5,"n":[1],"n":[2,3]}]}', 1],
      ['invalid UTF-8 inside strings (U+FFFD, as JSON.parse sees it)', Buffer.from('{"items":[{"s":"\xC3(\xFF"},{"id":3,"s":"\xE0"},"\xF0\x9F"]}', 'latin1'), 3],
      ['a UTF-8 byte order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"items":[1]}')]), [422, 'json.invalid']],
      ['a byte order mark as an array', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('[1]')]), [422, 'json.invalid'], '?format=array'],
      ['a character from U+F000 up as the first byte', '\uf000{"items":[]}', [422, 'json.invalid']],
      ['a byte order mark after the first bracket', '[\ufeff{"id":1}]', [422, 'json.invalid'], '?format=array'],
      ['a byte order mark between brackets, before any string', '[[ \ufeff]]', [422, 'json.invalid'], '?format=array'],
      ['a byte order mark after a key', '{"items":[\ufeff]}', [422, 'json.invalid']],
      ['a byte order mark inside a string (a character like any other)', '{"items":["\ufeff",{"\ufeff":1}]}', 2],
      ['trailing garbage', '{"items":[1]} x', [422, 'json.invalid']],
      ['a second document', '{"items":[1]}{"items":[2]}', [422, 'json.invalid']],
      ['a second number after a scalar root', '1 2', [422, 'json.invalid']],
      ['trailing and leading whitespace', ' \r\n\t{"items":[1]} \n\r\t ', 1],
      ['an empty body', '', [422, 'json.invalid']],
      ['a whitespace-only body', ' \n\t\r ', [422, 'json.invalid']],
      ['a number root', '5', [422, 'json.items.missing']],
      ['a string root', '"items"', [422, 'json.items.missing']],
      ['a null root', 'null', [422, 'json.items.missing']],
      ['a scalar root as an array', 'true', [422, 'json.shape.invalid'], '?format=array'],
      ['an array root as json', '[1,2]', [422, 'json.items.missing'], '?format=json'],
      ['an object root as an array', '{"items":[1]}', [422, 'json.shape.invalid'], '?format=array'],
      ['an unfinished document', '{"items":[{"id":1}', [422, 'json.invalid']],
      ['an unfinished string', '{"items":["abc', [422, 'json.invalid']],
      ['an unfinished escape', '["\\u12', [422, 'json.invalid']],
      ['a trailing comma', '{"items":[1,]}', [422, 'json.invalid']],
      ['a leading zero', '{"items":[01]}', [422, 'json.invalid']],
      ['a control character in a string', '{"items":["a\u0001"]}', [422, 'json.invalid']],
      ['single quotes', "{'items':[]}", [422, 'json.invalid']],
      ['NaN', '{"items":[NaN]}', [422, 'json.invalid']],
      ['an NDJSON body', '{"id":1}\n{"id":2}\n', [422, 'json.invalid'], '?format=json'],
      ['arrays nested to the depth limit (1000)', '{"items":[' + '['.repeat(998) + ']'.repeat(998) + ']}', 1],
      ['arrays nested one past the depth limit', '{"items":[' + '['.repeat(999) + ']'.repeat(999) + ']}', [422, 'json.too.deep']],
      ['invalid JSON before nesting past the limit (the first fault wins)', '{"items":[x,' + '['.repeat(1200) + ']'.repeat(1200) + ']}', [422, 'json.invalid']]
    ]
    for (const [name, text, want, query = ''] of CASES) {
      const expected = Array.isArray(want) ? `${want[0]} ${want[1]}` : `${want} item(s)`
      it(`answers ${expected} to ${name}, as /bad does`, async function () {
        const { bad, streamparser } = await answers(lab.url, gz(text), { query })
        if (Array.isArray(want)) {
          assert.deepEqual(verdict(streamparser), { status: want[0], type: want[1] }, streamparser.text)
        } else {
          assert.equal(streamparser.status, 200, streamparser.text)
          assert.equal(streamparser.body.summary.items, want)
        }
        assertSameAs(bad, streamparser, name)
      })
    }

    it('answers 422 json.invalid to a body /bad reads as NDJSON (one document or none)', async function () {
      const body = gz('{"id":1}\n{"id":2}\n')
      const { bad, streamparser } = await answers(lab.url, body)
      assert.equal(bad.body.summary.format, 'ndjson')
      assert.deepEqual(verdict(streamparser), { status: 422, type: 'json.invalid' })
    })
  })

  describe('headers, gzip layers and formats', function () {
    const DOC = '{"items":[{"id":1},{"id":2,"n":[1.5]}]}'
    const GZ = gz(DOC)

    it('takes a gzip layer from the media type and from Content-Encoding, up to the layer limit, as /bad does', async function () {
      const cases = [
        [GZ, { 'content-type': 'application/json', 'content-encoding': 'gzip' }, 200],
        [GZ, { 'content-type': 'application/x-gzip' }, 200],
        [GZ, { 'content-type': 'application/octet-stream' }, 200],
        [gz(GZ), { 'content-type': 'application/gzip', 'content-encoding': 'gzip' }, 200],
        [gz(gz(GZ)), { 'content-type': 'application/gzip', 'content-encoding': 'gzip, x-gzip' }, 200],
        [gz(gz(gz(GZ))), { 'content-type': 'application/gzip', 'content-encoding': 'gzip, gzip, gzip' }, 413],
        [GZ, { 'content-type': 'application/json', 'content-encoding': 'compress' }, 415],
        [Buffer.from(DOC), { 'content-type': 'application/json' }, 415],
        [GZ, { 'content-type': 'text/plain' }, 415]
      ]
      for (const [body, headers, status] of cases) {
        const { bad, streamparser } = await answers(lab.url, body, { headers })
        const what = JSON.stringify(headers)
        assert.equal(streamparser.status, status, `${what}: ${streamparser.text}`)
        assertSameAs(bad, streamparser, what)
        if (status === 200) assert.equal(streamparser.body.summary.items, 2, what)
      }
    })

    it('takes the format from ?format=json or ?format=array, and refuses an unknown one as /bad does', async function () {
      const array = gz('[{"id":1},{"id":2},{"id":3}]')
      for (const [body, query, want] of [[GZ, '?format=json', 200], [array, '?format=array', 200], [array, '', 200], [GZ, '?format=xml', 400], [GZ, '?format=', 400]]) {
        const { bad, streamparser } = await answers(lab.url, body, { query })
        assert.equal(streamparser.status, want, `${query}: ${streamparser.text}`)
        assertSameAs(bad, streamparser, query)
      }
    })

    it('answers 400 parameter.invalid to ?format=ndjson and to Content-Type: application/x-ndjson, saying /good reads NDJSON', async function () {
      const ndjson = gz('{"id":1}\n{"id":2}\n')
      for (const [query, headers] of [['?format=ndjson', GZIP], ['', { 'content-type': 'application/x-ndjson', 'content-encoding': 'gzip' }]]) {
        const res = await post(`${lab.url}/${ROUTE}${query}`, ndjson, headers)
        assert.equal(res.status, 400, res.text)
        assert.equal(res.body.error.type, 'parameter.invalid')
        assert.equal(res.body.error.parameter, 'format')
        assert.match(res.body.error.message, /POST \/good reads it/)
        assert.equal((await post(`${lab.url}/bad${query}`, ndjson, headers)).status, 200, 'where /bad reads it')
      }
    })
  })
})
