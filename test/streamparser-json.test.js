/**
 * POST /streamparser-json: the textbook streaming route on @streamparser/json
 * (lib/ingest/streamparser.js) and the guard beside it
 * (lib/ingest/token-guard.js). Where /bad reads a body, this route must read
 * it alike: the same summary for every document both accept, the same status
 * and error type for every body /bad refuses, whatever the chunks the body
 * arrives in. One refusal may differ, as it must for a parser that reads as
 * zlib inflates: a damaged gzip body whose inflated bytes stop being JSON
 * before zlib finds the damage is refused for its JSON at once (422), where
 * /bad, inflating everything first, names the gzip (400). Where the lab's
 * streaming limits apply (one record's bytes, the ratio), it answers as
 * /good does. NDJSON is many documents: this route refuses it. And one large
 * body costs it far less memory than its size.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import net from 'node:net'
import zlib from 'node:zlib'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { labInTempDir, post, postInChunks, postChunked, parseBuffered, waitFor } from './helpers.js'
import { createGzipStream } from '../generators/items.js'
import { createBomb } from '../generators/bombs.js'
import { streamparser } from '../lib/ingest/streamparser.js'
import { ingest } from '../lib/ingest/sequence.js'
import { wellFormedUtf8 } from '../lib/ingest/token-guard.js'
import { DEFAULTS, normalizeOptions } from '../lib/config/options.js'
import { findJsonError } from '../lib/json/validate.js'
import { findTooDeep } from '../lib/parse/tally.js'
import { readPeakRss, resetPeakRss } from '../lib/metrics/peak.js'
import { prng, randomRecords, serialise, mutate, mutateGzip } from '../lib/measure/mutate.js'

const KiB = 1024
const MiB = 1024 * KiB
const ROUTE = 'streamparser-json'
const GZIP = Object.freeze({ 'content-type': 'application/gzip' })
const DEFAULT_DEPTH = DEFAULTS.limits.depth

/** All the bytes out of a chain of streams. */
async function collect (...streams) {
  const parts = []
  await pipeline(...streams, new Writable({
    write: function keep (chunk, encoding, done) { parts.push(chunk); done() }
  }))
  return Buffer.concat(parts)
}

/** A generated document, gzipped. */
function generated (params) {
  const { json, gzip } = createGzipStream(params)
  return collect(json, gzip)
}

function gz (text, options) {
  return zlib.gzipSync(Buffer.isBuffer(text) ? text : Buffer.from(text), options)
}

/** /bad's answer and this route's to the same body, sent at once. */
async function answers (url, body, { query = '', headers = GZIP } = {}) {
  const [bad, streamparser] = await Promise.all([
    post(`${url}/bad${query}`, body, headers),
    post(`${url}/${ROUTE}${query}`, body, headers)
  ])
  return { bad, streamparser }
}

/** What a route said, in one line: `200` and the summary, or the status and error type. */
function verdict (res) {
  if (res.status === 200) return { status: 200, summary: res.body.summary }
  return { status: res.status, type: res.body?.error?.type ?? res.text.slice(0, 80) }
}

/** This route must say what /bad says: the same summary, or the same status and error type. */
function assertSameAs (other, res, what) {
  assert.deepEqual(verdict(res), verdict(other), `${what}: /${ROUTE} ${res.text.slice(0, 200)}`)
}

/**
 * What zlib inflates out of a gzip body before it finds the damage: all a
 * stream could give out, whatever its reads. A prefix of the body inflates
 * without fault (with a sync flush, its end is no fault) up to the byte
 * where the damage is found; the longest such prefix, found by bisection,
 * gives that output.
 */
function inflatedBeforeDamage (body) {
  function inflatePrefix (length) {
    return zlib.gunzipSync(body.subarray(0, length), { finishFlush: zlib.constants.Z_SYNC_FLUSH })
  }
  let sound = 0
  let damaged = body.length + 1
  while (damaged - sound > 1) {
    const middle = (sound + damaged) >> 1
    try {
      inflatePrefix(middle)
      sound = middle
    } catch {
      damaged = middle
    }
  }
  return sound === 0 ? Buffer.alloc(0) : inflatePrefix(sound)
}

/**
 * This route against /bad on a body whose gzip may be damaged. /bad inflates
 * the whole body before it parses a byte, so it refuses damaged gzip as
 * gzip (400). This route parses as it inflates: when the bytes zlib gives
 * out before it finds the damage are already no JSON (or nest past the
 * limit), it answers for them at once (422), as a streaming parser does
 * (/good too, on a body large enough to stream). Anything else must be
 * /bad's answer.
 * @returns {Promise<'same'|'sooner'>}
 */
async function assertSameAsBadOrSooner (bad, res, body, what) {
  const type = res.body?.error?.type
  if (res.status === 422 && (type === 'json.invalid' || type === 'json.too.deep') && bad.status === 400 && bad.body.error.type.startsWith('gzip.')) {
    const prefix = inflatedBeforeDamage(body)
    const fault = type === 'json.invalid' ? findJsonError(prefix) : { offset: findTooDeep(prefix, 0, prefix.length, DEFAULT_DEPTH) }
    assert.ok(fault !== null && fault.offset >= 0 && fault.offset < prefix.length,
      `${what}: /bad ${bad.body.error.type}, /${ROUTE} ${type}, but the ${prefix.length} B before the damage hold no such fault`)
    return 'sooner'
  }
  assertSameAs(bad, res, what)
  return 'same'
}

/**
 * Run the route's own stages (lib/ingest/sequence.js ingest) in this process on a gzip body given
 * as reads, with the lab's default limits (`limits` over them) and no idle
 * timer. A level-0 gzip body (stored blocks) read a byte at a time reaches
 * the tokenizer one inflated byte per chunk, so its chunk boundaries fall
 * wherever the test puts them, which HTTP cannot promise.
 * @returns {Promise<{ summary: object }|{ status: number, type: string }>}
 */
async function ingestInReads (reads, { query = {}, limits = {} } = {}) {
  const req = Readable.from(reads, { objectMode: false })
  req.headers = { ...GZIP }
  req.query = query
  req.complete = false
  req.once('end', function completed () { req.complete = true })
  try {
    return { summary: await ingest(req, streamparser, { opts: normalizeOptions({ limits: { bodyIdleMs: 0, ...limits } }) }) }
  } catch (err) {
    if (err.type === undefined) throw err
    return { status: err.status, type: err.type }
  }
}

/** The same decision in /bad's terms (test/helpers.js parseBuffered): the tally's figures, `error`, or `shape`. */
function asBufferedDecision (result) {
  if (result.summary) {
    const { items, idSum, numbers, numbersChecksum } = result.summary
    return { summary: { items, idSum, numbers, numbersChecksum } }
  }
  if (result.type === 'json.invalid') return 'error'
  if (result.type === 'json.items.missing' || result.type === 'json.shape.invalid') return 'shape'
  return result
}

function bufferedDecision (inflated, format) {
  const got = parseBuffered(inflated, format)
  if (got.summary) return { summary: got.summary }
  return got.shape ? 'shape' : 'error'
}

function oneByteReads (bytes) {
  return Array.from(bytes, function single (b) { return Buffer.from([b]) })
}

/** A request that sends its headers and `part` of a body of `length` bytes, and no more until told. */
function sendPart (port, path, length, part, headers = GZIP) {
  const socket = net.connect(port, '127.0.0.1')
  socket.on('error', function ignore () {})
  const head = Object.entries({ host: 'localhost', ...headers, 'content-length': length })
    .map(function line ([name, value]) { return `${name}: ${value}\r\n` }).join('')
  const answer = new Promise(function read (resolve) {
    const parts = []
    socket.on('data', function keep (c) { parts.push(c) })
    socket.on('close', function done () {
      const text = Buffer.concat(parts).toString()
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0)
      let json = null
      try { json = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) } catch { /* no answer: status 0 */ }
      resolve({ status, json })
    })
  })
  socket.write(`POST ${path} HTTP/1.1\r\n${head}connection: close\r\n\r\n`)
  socket.write(part)
  return { socket, answer }
}

/** Requests a lab started and did not end, from its own event bus, and how each ended. */
function watchRequests (events) {
  const watched = { open: new Set(), ended: [] }
  function track (event) {
    if (event.phase === 'start') watched.open.add(event.id)
    else if (event.phase === 'end') {
      watched.open.delete(event.id)
      watched.ended.push(event)
    }
  }
  events.on('request', track)
  watched.stop = function stopWatching () { events.off('request', track) }
  return watched
}

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
          const body = await generated({ ...params, format, seed: 7 })
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
      const body = await generated({ size: 30, format: 'json', seed: 3 })
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

    for (const format of ['json', 'array']) {
      it(`accepts and refuses exactly what JSON.parse does on 400 mutated ${format} documents, whole and a byte at a time`, async function () {
        const rand = prng(format.length * 31 + 5)
        let refused = 0
        for (let k = 0; k < 400; k++) {
          const inflated = mutate(rand, serialise(rand, randomRecords(rand), format))
          const want = bufferedDecision(inflated, format)
          if (want === 'error') refused++
          const body = gz(inflated, { level: 0 })
          const where = `mutant ${k}: ${JSON.stringify(inflated.toString('latin1'))}`
          assert.deepEqual(asBufferedDecision(await ingestInReads([body], { query: { format } })), want, where)
          assert.deepEqual(asBufferedDecision(await ingestInReads(oneByteReads(body), { query: { format } })), want, `${where}, a byte at a time`)
        }
        // the mutations must make invalid documents, or agreement proves little
        assert.ok(refused > 100, `only ${refused} of 400 mutants were invalid`)
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
        [GZ, { 'content-type': 'application/json', 'content-encoding': 'br' }, 415],
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
      const body = await generated({ bytes: 5_000_000, format: 'json', seed: 2 })
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
        const body = await generated({ size: 5000, format: 'json', seed: 5 })
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

describe(`POST /${ROUTE}: memory`, function () {
  this.timeout(240000)
  const lab = labInTempDir('streamparser-json-memory')

  it('reads a 100 MB document, generated as it is sent, growing the process\'s peak RSS by under 64 MiB', async function () {
    if (!resetPeakRss()) this.skip() // no way to reset the kernel's peak here: no window to measure
    const before = readPeakRss().bytes
    const { json, gzip } = createGzipStream({ bytes: 100_000_000, format: 'json', seed: 11, level: 1 })
    const res = await new Promise(function upload (resolve, reject) {
      const req = http.request(`${lab.url}/${ROUTE}`, { method: 'POST', headers: GZIP }, function answered (r) {
        let text = ''
        r.on('data', function keep (c) { text += c })
        r.on('end', function done () { resolve({ status: r.statusCode, body: JSON.parse(text) }) })
      })
      req.on('error', reject)
      pipeline(json, gzip, req).catch(reject)
    })
    const growth = readPeakRss().bytes - before
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.equal(res.body.summary.items, json.items)
    assert.equal(res.body.summary.inflatedBytes, json.bytes)
    assert.ok(json.bytes >= 100_000_000)
    // buffered, the body alone would be 100 MB; the route holds a chunk and a record at a time
    assert.ok(growth < 64 * MiB, `the peak grew ${(growth / MiB).toFixed(1)} MiB for a ${(json.bytes / MiB).toFixed(0)} MiB body`)
  })
})
