/**
 * Where the bytes are (docs/metrics.md): every sample names V8's heap
 * spaces, and what each ingest request in flight holds by stage, read from
 * the stages themselves; /bad's stages account for its body, /good's stay
 * within their bounds, and nothing is read while nobody samples.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import { getHeapSpaceStatistics } from 'node:v8'
import { PassThrough, Readable, Writable } from 'node:stream'
import { createHeldLedger, bufferedIn, boundOf } from '../lib/metrics/held.js'
import { INGEST_STAGES } from '../lib/ingest/stage-names.js'
import { startMetricsLab, until } from './metrics-helpers.js'
import { generatedGzip, getJson } from './helpers.js'

const MiB = 1024 * 1024

/** POST a gzip body in 64 KiB writes, pausing `pauseMs` after the first; resolves with the answer. */
function upload (url, gzip, { pauseMs = 0 } = {}) {
  return new Promise(function send (resolve, reject) {
    const req = http.request(url, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': gzip.length }
    }, function answered (res) {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', function keep (chunk) { text += chunk })
      res.on('end', function done () { resolve({ status: res.statusCode, body: JSON.parse(text) }) })
    })
    req.on('error', reject)
    let offset = 0
    function writeMore () {
      while (offset < gzip.length) {
        const piece = gzip.subarray(offset, offset + 64 * 1024)
        offset += piece.length
        if (offset === piece.length && pauseMs > 0) {
          req.write(piece)
          setTimeout(writeMore, pauseMs)
          return
        }
        if (!req.write(piece)) {
          req.once('drain', writeMore)
          return
        }
      }
      req.end()
    }
    writeMore()
  })
}

function total (held) {
  return Object.values(held).reduce(function add (sum, bytes) { return sum + bytes }, 0)
}

describe('where the bytes are', function () {
  this.timeout(120_000)

  describe('the ledger of what each request holds (lib/metrics/held.js)', function () {
    it('reads a stage only when asked, in stage order, and keeps the stages at their highest sum', function () {
      const ledger = createHeldLedger(INGEST_STAGES)
      const holding = ledger.open(7, 'bad')
      let reads = 0
      let kept = 1000
      holding.watch('read', function keptSoFar () { reads++; return kept })
      assert.equal(reads, 0, 'watching a stage reads nothing')
      holding.set('parse', 50)
      assert.equal(reads, 0, 'a stage set whole reads no other stage')
      assert.deepEqual(ledger.read().requests, [{ id: 7, route: 'bad', held: { read: 1000, parse: 50 }, bounds: {}, unread: [] }])
      assert.equal(reads, 1)
      kept = 10
      holding.set('inflate', 5000)
      assert.deepEqual(holding.peak, { held: { inflate: 5000, parse: 50 }, total: 5050 }, 'the stage set whole, at its sum')
      holding.close()
      assert.deepEqual(ledger.read(), { requests: [], omitted: { count: 0, bytes: 0 } }, 'a closed request leaves the ledger')
      assert.equal(holding.peak.total, 5050, 'and keeps its peak for its end event')
    })

    it('tells its peak listeners when a stage set whole raises a request\'s peak, and only then', function () {
      const ledger = createHeldLedger(INGEST_STAGES)
      const told = []
      const stop = ledger.onPeak(function heard (holding) { told.push([holding.id, holding.peak.total]) })
      const holding = ledger.open(7, 'bad')
      holding.set('read', 100)
      holding.set('inflate', 400)
      holding.set('read', 50)
      holding.watch('parse', function reading () { return 1000 })
      ledger.read()
      assert.deepEqual(told, [[7, 100], [7, 500]], 'a lower sum, and a peak seen by a sample, tell nobody')
      stop()
      holding.set('tally', 2000)
      assert.equal(told.length, 2)
    })

    it('reads a stage that fails, or says nonsense, as holding nothing: a sample never throws', function () {
      const ledger = createHeldLedger(INGEST_STAGES)
      const holding = ledger.open(1, 'good')
      holding.watch('read', function torn () { throw new TypeError('gone') })
      holding.watch('inflate', function nonsense () { return NaN })
      holding.watch('records', function negative () { return -5 })
      assert.deepEqual(ledger.read().requests[0].held, { read: 0, inflate: 0, records: 0 })
    })

    it('names the requests that hold most, and counts the rest, so a sample stays small under any load', function () {
      const ledger = createHeldLedger(INGEST_STAGES)
      for (let id = 1; id <= 300; id++) ledger.open(id, 'bad').set('read', id)
      const { requests, omitted } = ledger.read()
      assert.equal(requests.length, 16)
      assert.deepEqual(requests.map(function idOf (r) { return r.id }), Array.from({ length: 16 }, function (_, k) { return 300 - k }))
      assert.equal(omitted.count, 284)
      assert.equal(omitted.bytes, (284 * 285) / 2, 'the bytes of requests 1 to 284')
    })

    it('counts both sides of a stream, and bounds them by their marks and one chunk past each', function () {
      const waiting = new Readable({ read () {}, highWaterMark: 1024 })
      waiting.push(Buffer.alloc(3000))
      const stuck = new Writable({ write () {}, highWaterMark: 1024 }) // never calls back: everything waits
      stuck.write(Buffer.alloc(500))
      stuck.write(Buffer.alloc(700))
      assert.equal(bufferedIn(waiting, stuck, null, undefined), 4200)
      const through = new PassThrough({ highWaterMark: 1024 })
      assert.equal(boundOf(4096, through), 2 * (1024 + 4096), 'a Transform has two')
      const source = new Readable({ read () {}, highWaterMark: 10 })
      assert.equal(boundOf(5, source), 15, 'a Readable has one side')
    })
  })

  describe('in the samples', function () {
    let lab
    before(async function () {
      lab = await startMetricsLab()
    })
    after(async function () {
      await lab.close()
    })

    it('names each of V8\'s heap spaces by V8\'s name, in the JSON snapshot and in Prometheus text', async function () {
      const { body } = await getJson(`${lab.url}/metrics`)
      const names = getHeapSpaceStatistics().map(function nameOf (space) { return space.space_name })
      assert.deepEqual(Object.keys(body.sample.heapSpaces), names)
      for (const bytes of Object.values(body.sample.heapSpaces)) assert.ok(Number.isSafeInteger(bytes) && bytes >= 0)
      assert.deepEqual(body.sample.requests, [], 'no ingest request in flight')
      assert.deepEqual(body.sample.requestsOmitted, { count: 0, bytes: 0 })
      const text = await new Promise(function scrape (resolve, reject) {
        http.get(`${lab.url}/metrics?format=prometheus`, function read (res) {
          let out = ''
          res.setEncoding('utf8')
          res.on('data', function keep (chunk) { out += chunk })
          res.on('end', function done () { resolve(out) })
        }).on('error', reject)
      })
      assert.match(text, /^streamlab_heap_space_used_bytes\{space="large_object_space"\} \d+$/m)
    })

    it('carries each request in flight with what its stages hold, while its body dawdles', async function () {
      const gzip = await generatedGzip({ bytes: 4 * MiB, seed: 3 })
      const answer = upload(`${lab.url}/good`, gzip, { pauseMs: 1500 })
      const seen = await until(async function inFlight () {
        const { body } = await getJson(`${lab.url}/metrics`)
        return body.sample.requests.find(function good (r) { return r.route === 'good' })
      }, 20_000, 'the upload in the snapshot')
      assert.ok(Number.isSafeInteger(seen.id))
      assert.deepEqual(Object.keys(seen.held), ['read', 'inflate', 'records', 'parse'], 'the stages /good holds bytes in, in stage order')
      assert.deepEqual(Object.keys(seen.bounds), Object.keys(seen.held), 'each bounded')
      assert.ok(seen.unread.length > 0, 'and says what cannot be read')
      assert.equal((await answer).status, 200)
      const { body } = await getJson(`${lab.url}/metrics`)
      assert.deepEqual(body.sample.requests, [], 'gone once answered')
    })
  })

  describe('what the stages hold at their peak', function () {
    let lab
    let gzip
    let inflated
    const ends = []
    const samples = []
    let unsubscribe = null
    before(async function () {
      lab = await startMetricsLab()
      lab.app.locals.events.on('request', function keepEnd (event) { if (event.phase === 'end') ends.push(event) })
      // 48 MiB inflated: the generator's documents carry CJK text, so /bad's string is two bytes a character
      gzip = await generatedGzip({ bytes: 48 * MiB, seed: 11 })
      inflated = 48 * MiB
      unsubscribe = lab.app.locals.sampler.subscribe(10, function keepRequests (sample) {
        if (sample.requests.length > 0) samples.push(sample.requests)
      })
    })
    after(async function () {
      unsubscribe?.()
      await lab.close()
    })

    it('accounts on /bad for at least 80 % of the inflated body at its peak, read, inflated, string and parsed', async function () {
      const answer = await upload(`${lab.url}/bad`, gzip)
      assert.equal(answer.status, 200)
      assert.ok(Math.abs(answer.body.summary.inflatedBytes - inflated) < 64 * 1024)
      const end = ends.find(function bad (e) { return e.route === 'bad' })
      assert.deepEqual(Object.keys(end.held), ['read', 'inflate', 'parse'])
      assert.equal(end.held.read, gzip.length, 'the compressed body, one Buffer')
      assert.equal(end.held.inflate, answer.body.summary.inflatedBytes, 'the inflated body, one Buffer')
      assert.ok(end.held.parse >= answer.body.summary.inflatedBytes, `the string and the parsed records: ${end.held.parse}`)
      assert.ok(end.heldPeak >= 0.8 * answer.body.summary.inflatedBytes)
      assert.equal(end.heldPeak, total(end.held))
    })

    it('keeps every stage of /good within its bound, at every sample, and all of it a few MiB', async function () {
      samples.length = 0
      const answer = await upload(`${lab.url}/good`, gzip)
      assert.equal(answer.status, 200)
      const mine = samples.flat().filter(function good (r) { return r.route === 'good' })
      assert.ok(mine.length > 0, 'sampled while it streamed')
      for (const request of mine) {
        for (const [stage, bytes] of Object.entries(request.held)) {
          assert.ok(bytes <= request.bounds[stage], `${stage} held ${bytes} B, past its bound ${request.bounds[stage]} B`)
        }
      }
      const end = ends.find(function good (e) { return e.route === 'good' })
      assert.ok(end.heldPeak < 24 * MiB, `/good held ${end.heldPeak} B at its peak`)
      assert.ok(end.heldPeak < inflated / 2)
    })

    it('keeps each of several /good uploads at once within its bounds, and names each', async function () {
      samples.length = 0
      const small = gzip.subarray(0, gzip.length) // the same body four times over, at once
      const answers = await Promise.all([1, 2, 3, 4].map(function send () { return upload(`${lab.url}/good`, small) }))
      for (const answer of answers) assert.equal(answer.status, 200)
      const ids = new Set()
      for (const request of samples.flat().filter(function good (r) { return r.route === 'good' })) {
        ids.add(request.id)
        for (const [stage, bytes] of Object.entries(request.held)) assert.ok(bytes <= request.bounds[stage], `${stage}: ${bytes} > ${request.bounds[stage]}`)
      }
      assert.ok(ids.size >= 2, `the uploads in flight together were each named (${ids.size})`)
    })

    it('says which stages the other two routes hold, and what it cannot read', async function () {
      ends.length = 0
      samples.length = 0
      const small = await generatedGzip({ bytes: 4 * MiB, seed: 5 })
      const answers = {}
      for (const route of ['express-json', 'streamparser-json']) {
        answers[route] = await upload(`${lab.url}/${route}`, small, { pauseMs: 300 })
        assert.equal(answers[route].status, 200)
      }
      const [json, streamed] = ends
      // at its peak: the inflated chunks raw-body kept (counted as they passed) or the one Buffer it joined them into
      const inflatedBytes = answers['express-json'].body.summary.inflatedBytes
      assert.ok(json.held.inflate >= inflatedBytes - 64 * 1024 && json.held.inflate <= inflatedBytes, `express-json held ${json.held.inflate} B of ${inflatedBytes} inflated`)
      assert.deepEqual(Object.keys(streamed.bounds), ['read', 'inflate', 'parse'], 'the textbook route bounds every stage it holds')
      const seen = samples.flat()
      const jsonSeen = seen.find(function isJson (r) { return r.route === 'express-json' })
      assert.match(jsonSeen.unread.join(' '), /body-parser/, 'the string and document inside body-parser are named as unread')
      const textbookSeen = seen.find(function isTextbook (r) { return r.route === 'streamparser-json' })
      assert.match(textbookSeen.unread.join(' '), /@streamparser\/json/)
    })
  })
})
