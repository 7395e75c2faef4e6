/**
 * POST /express-json: express.json() with the lab's inflated limit gives
 * the summary /bad and /good give, and maps body-parser's errors to the
 * lab's. Its limits (a zip bomb stopped at the inflated limit, a body that
 * stalls) and the memory budget's rules are
 * test/slow/express-json-limits.test.js's.
 */
import assert from 'node:assert/strict'
import zlib from 'node:zlib'
import { generatedGzip, startLab, post, postInChunks, postPieces, waitFor } from './helpers.js'

const JSON_GZIP = Object.freeze({ 'content-type': 'application/json', 'content-encoding': 'gzip' })
const PLAIN_JSON = Object.freeze({ 'content-type': 'application/json' })

describe('POST /express-json', function () {
  let lab
  before(async function () { lab = await startLab() })
  after(async function () { await lab.close() })

  for (const format of ['json', 'array']) {
    it(`gives the summary /bad and /good give for a generated ${format} document`, async function () {
      const body = await generatedGzip({ size: 3000, format, seed: 11 })
      const [bad, good, json] = await Promise.all([
        post(`${lab.url}/bad`, body),
        post(`${lab.url}/good`, body),
        post(`${lab.url}/express-json`, body, JSON_GZIP)
      ])
      assert.equal(json.status, 200, json.text)
      assert.equal(json.body.route, 'express-json')
      assert.deepEqual(json.body.summary, bad.body.summary)
      assert.deepEqual(json.body.summary, good.body.summary)
      assert.equal(json.body.summary.format, format)
      assert.equal(json.body.summary.items, 3000)
      assert.equal(json.body.summary.compressedBytes, body.length)
      assert.equal(typeof json.body.ms, 'number')
      assert.ok(json.body.memory.peakRss > 0)
    })
  }

  it('takes plain JSON too, as express.json does: the same figures, its compressed bytes the inflated ones', async function () {
    const body = await generatedGzip({ size: 500, format: 'json', seed: 4 })
    const plain = zlib.gunzipSync(body)
    const bad = await post(`${lab.url}/bad`, body)
    const json = await post(`${lab.url}/express-json`, plain, PLAIN_JSON)
    assert.equal(json.status, 200, json.text)
    assert.deepEqual(json.body.summary, { ...bad.body.summary, compressedBytes: plain.length })
  })

  it('gives the same answer when the body arrives a few bytes at a time, or chunked', async function () {
    this.timeout(60000)
    const body = await generatedGzip({ size: 40, format: 'json', seed: 3 })
    const want = (await post(`${lab.url}/bad`, body)).body.summary
    const slow = await postInChunks(`${lab.url}/express-json`, body, 7, JSON_GZIP)
    assert.equal(slow.status, 200)
    assert.deepEqual(slow.body.summary, want)
    const pieces = []
    for (let i = 0; i < body.length; i += 1000) pieces.push(body.subarray(i, i + 1000))
    const chunked = await postPieces(`${lab.url}/express-json`, pieces, JSON_GZIP)
    assert.equal(chunked.status, 200)
    assert.deepEqual(chunked.body.summary, want)
  })

  it('takes the format from ?format=json or ?format=array, and refuses the wrong shape as /bad does', async function () {
    const body = zlib.gzipSync('[{"id":1},{"id":2}]')
    const ok = await post(`${lab.url}/express-json?format=array`, body, JSON_GZIP)
    assert.equal(ok.status, 200, ok.text)
    assert.equal(ok.body.summary.items, 2)
    for (const route of ['bad', 'express-json']) {
      const wrong = await post(`${lab.url}/${route}?format=json`, body, JSON_GZIP)
      assert.equal(wrong.status, 422)
      assert.equal(wrong.body.error.type, 'json.items.missing')
    }
  })

  it('goes out on the lab\'s event bus like /bad and /good, refusals included', async function () {
    const seen = []
    function onRequest (event) { if (event.route === 'express-json') seen.push(event) }
    lab.app.locals.events.on('request', onRequest)
    try {
      const body = zlib.gzipSync('{"items":[{"id":5}]}')
      await post(`${lab.url}/express-json`, body, JSON_GZIP)
      await post(`${lab.url}/express-json`, zlib.gzipSync('{"items":['), JSON_GZIP)
      await waitFor(function bothEnded () { return seen.filter(function isEnd (e) { return e.phase === 'end' }).length === 2 })
    } finally {
      lab.app.locals.events.off('request', onRequest)
    }
    const [start, end, , refused] = seen
    assert.equal(start.phase, 'start')
    assert.equal(start.compressedBytes, end.compressedBytes)
    assert.deepEqual([end.phase, end.status, end.items], ['end', 200, 1])
    assert.deepEqual([refused.phase, refused.status, refused.errorType], ['end', 422, 'json.invalid'])
  })

  describe('errors', function () {
    const gz = zlib.gzipSync('{"items":[{"id":1},{"id":2}]}')
    const cases = [
      { name: 'answers 422 json.invalid at the offset /bad gives', body: zlib.gzipSync('{"items":[{"id":1},{"id":2,}]}'), status: 422, type: 'json.invalid', offset: 27, same: true },
      { name: 'answers 422 json.invalid at the end of an unfinished document', body: zlib.gzipSync('{"items":[{"id":1}'), status: 422, type: 'json.invalid', offset: 18, same: true },
      { name: 'answers 422 json.invalid for an empty document (express.json would take it for {})', body: zlib.gzipSync(''), status: 422, type: 'json.invalid', offset: 0, same: true },
      { name: 'answers 422 json.invalid for no body at all', body: Buffer.alloc(0), headers: PLAIN_JSON, status: 422, type: 'json.invalid', offset: 0 },
      { name: 'answers 422 json.items.missing for a document of another shape (strict: false)', body: zlib.gzipSync('"items"'), status: 422, type: 'json.items.missing', same: true },
      { name: 'answers 400 gzip.truncated when the gzip stream is cut short', body: gz.subarray(0, gz.length - 6), status: 400, type: 'gzip.truncated', same: true },
      { name: 'answers 400 gzip.invalid when the body is not gzip', body: Buffer.from('plain text'), status: 400, type: 'gzip.invalid', same: true },
      { name: 'answers 400 gzip.invalid for garbage after the gzip member', body: Buffer.concat([gz, Buffer.from('xyz')]), status: 400, type: 'gzip.invalid' },
      { name: 'answers 415 media.unsupported for the gzip file as application/octet-stream', body: gz, headers: { 'content-type': 'application/octet-stream' }, status: 415, type: 'media.unsupported', message: /Content-Encoding: gzip/ },
      { name: 'answers 415 media.unsupported for NDJSON, saying where it goes', body: gz, headers: { 'content-type': 'application/x-ndjson', 'content-encoding': 'gzip' }, status: 415, type: 'media.unsupported', message: /NDJSON to \/bad or \/good/ },
      { name: 'answers 400 parameter.invalid for ?format=ndjson, saying where it goes', body: gz, query: '?format=ndjson', status: 400, type: 'parameter.invalid', message: /NDJSON goes to \/bad or \/good/ },
      { name: 'answers 422 json.invalid for an NDJSON body, saying it looks like NDJSON', body: zlib.gzipSync('{"id":1}\n{"id":2}\n'), status: 422, type: 'json.invalid', offset: 9, message: /looks like NDJSON/ },
      { name: 'answers 415 encoding.unsupported for another Content-Encoding', body: gz, headers: { ...JSON_GZIP, 'content-encoding': 'compress' }, status: 415, type: 'encoding.unsupported' },
      { name: 'answers 415 encoding.unsupported for two gzip layers', body: zlib.gzipSync(gz), headers: { ...JSON_GZIP, 'content-encoding': 'gzip, gzip' }, status: 415, type: 'encoding.unsupported' },
      { name: 'answers 415 charset.unsupported for a charset other than UTF-8', body: gz, headers: { ...JSON_GZIP, 'content-type': 'application/json; charset=latin1' }, status: 415, type: 'charset.unsupported' }
    ]
    for (const c of cases) {
      it(c.name, async function () {
        const res = await post(`${lab.url}/express-json${c.query ?? ''}`, c.body, c.headers ?? JSON_GZIP)
        assert.equal(res.status, c.status, res.text)
        assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8')
        assert.equal(res.body.error.type, c.type)
        assert.equal(res.body.error.status, c.status)
        if (c.offset !== undefined) assert.equal(res.body.error.offset, c.offset)
        if (c.message) assert.match(res.body.error.message, c.message)
        if (c.same) {
          const bad = await post(`${lab.url}/bad`, c.body)
          assert.deepEqual(res.body.error, bad.body.error, 'the same error as /bad')
        }
      })
    }

    it('never answers 5xx to a damaged body: every truncation and a byte flipped at every position', async function () {
      this.timeout(60000)
      const body = zlib.gzipSync('{"items":[{"id":1,"numbers":[1.5,-2e3]},{"id":2,"s":"é"}]}')
      const bodies = []
      for (let n = 0; n < body.length; n++) bodies.push(body.subarray(0, n))
      for (let i = 0; i < body.length; i++) {
        const flipped = Buffer.from(body)
        flipped[i] ^= 0x41
        bodies.push(flipped)
      }
      for (const damaged of bodies) {
        const res = await post(`${lab.url}/express-json`, damaged, JSON_GZIP)
        assert.ok(res.status === 200 || (res.status >= 400 && res.status < 500), `${res.status} ${res.text}`)
        assert.equal(res.status === 200 ? typeof res.body.summary : typeof res.body.error.type, res.status === 200 ? 'object' : 'string')
      }
      assert.equal(lab.app.locals.admission.state().reserved, 0)
    })

    it('takes a UTF-8 byte order mark, which /bad and /good refuse: iconv-lite drops it before JSON.parse', async function () {
      const body = zlib.gzipSync('\ufeff{"items":[{"id":1}]}')
      const res = await post(`${lab.url}/express-json`, body, JSON_GZIP)
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.summary.inflatedBytes, 23, 'the mark counts in the inflated bytes and the sha256')
      const bad = await post(`${lab.url}/bad`, body)
      assert.equal(bad.body.error.type, 'json.invalid')
    })
  })
})
