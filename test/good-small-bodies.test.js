/**
 * POST /good with small bodies: a body whose Content-Length and inflated
 * size are within `ingest.inlineParse` is read whole, inflated at once and
 * parsed on the main thread (or, past 16 KiB, on a parse thread that is idle
 * then); one sent chunked that ends within the bound is parsed on the main
 * thread too, after streaming. Both must answer exactly what the
 * parse threads answer (and /bad), refuse what they refuse, and leave no
 * pipeline held when their clients vanish.
 */
import assert from 'node:assert/strict'
import net from 'node:net'
import zlib from 'node:zlib'
import { startLab, post, postChunked, waitFor } from './helpers.js'
import { parseDocument } from '../lib/parse/parse-batch.js'
import { DEFAULTS, normalizeOptions } from '../lib/config/options.js'
import { createIngestState } from '../lib/ingest/state.js'

const SMALL = zlib.gzipSync('{"items":[{"id":1},{"id":2},{"id":3}]}')
const BOUND = DEFAULTS.ingest.inlineParse
const KiB = 1024

/** Send a request on a raw socket, `sent` bytes of its body (all of it by default), and return the socket. */
function send (port, body, sent = body.length) {
  const socket = net.connect(port, '127.0.0.1')
  socket.on('error', function ignore () {})
  const head = `POST /good HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/gzip\r\nContent-Length: ${body.length}\r\n\r\n`
  socket.write(Buffer.concat([Buffer.from(head), body.subarray(0, sent)]))
  return socket
}

/**
 * A document of exactly `bytes` inflated bytes in `format`: records with
 * ids, numbers, an escape and text past ASCII, the last one padded.
 */
function documentOf (bytes, format) {
  function record (id, pad) { return `{"id":${id},"n":[${id / 7},-${id}e-3,${id * 1000}],"s":"caf\\u00e9 数据 ${'x'.repeat(pad)}"}` }
  const [open, close] = format === 'json' ? ['{"items":[', ']}'] : format === 'array' ? ['[', ']'] : ['', '\n']
  const separator = format === 'ndjson' ? '\n' : ','
  // counted as it grows: measuring the whole string each time was quadratic, and held this
  // process's event loop for seconds on a busy machine, past the lab's keep-alive timeout, so
  // the next fetch went out on a connection the lab had just closed (ECONNRESET)
  let head = open
  let headBytes = Buffer.byteLength(open)
  let id = 1
  for (;;) {
    const next = record(id, 0) + separator
    const nextBytes = Buffer.byteLength(next)
    if (headBytes + nextBytes + 200 > bytes) break
    head += next
    headBytes += nextBytes
    id++
  }
  const document = head + record(id, bytes - Buffer.byteLength(head + record(id, 0) + close)) + close
  assert.equal(Buffer.byteLength(document), bytes)
  return document
}

/** A record of tiny arrays, `bytes` long: JSON.parse builds about 30 times its text. */
function denseRecord (bytes) {
  return '[' + Array(Math.floor(bytes / 4)).fill('[3]').join(',') + ']'
}

describe('POST /good: small bodies', function () {
  let lab = null
  let threadsOnly = null
  before(async function start () {
    lab = await startLab()
    threadsOnly = await startLab({ ingest: { inlineParse: 0 } })
  })
  after(async function stop () {
    await lab.close()
    await threadsOnly.close()
  })

  for (const format of ['json', 'array', 'ndjson']) {
    for (const bytes of [100, 4 * KiB, BOUND - 1, BOUND, BOUND + 1, 3 * BOUND]) {
      it(`answers /bad's summary for ${bytes} bytes of ${format}, parsed here or by the threads, sent whole or chunked`, async function () {
        const body = zlib.gzipSync(documentOf(bytes, format))
        const query = `?format=${format}`
        const expected = await post(`${lab.url}/bad${query}`, body)
        assert.equal(expected.status, 200)
        const answers = [
          await post(`${lab.url}/good${query}`, body),
          await postChunked(`${lab.url}/good${query}`, [body.subarray(0, 100), body.subarray(100)]),
          await post(`${threadsOnly.url}/good${query}`, body)
        ]
        for (const answer of answers) {
          assert.equal(answer.status, 200)
          assert.deepEqual(answer.body.summary, expected.body.summary)
        }
      })
    }
  }

  it('answers a body whose format is detected, and a repeated items key, as /bad does', async function () {
    for (const text of ['{"items":[{"id":1}],"items":[{"id":2},{"id":3}]}', '[{"id":7}]', '{"id":1}\n{"id":2}\n', '{"meta":{"a":[1,2]},"items":[]}']) {
      const body = zlib.gzipSync(text)
      const expected = await post(`${lab.url}/bad`, body)
      const answer = await post(`${lab.url}/good`, body)
      assert.equal(answer.status, 200, text)
      assert.deepEqual(answer.body.summary, expected.body.summary, text)
    }
  })

  for (const [what, text, status, type] of [
    ['invalid JSON', '{"items":[{"id":1},{"id":2,}]}', 422, 'json.invalid'],
    ['a document that ends early', '{"items":[{"id":1},{"id":2}', 422, 'json.invalid'],
    ['the wrong shape', '{"things":[{"id":1}]}', 422, 'json.items.missing'],
    ['nesting past the depth limit', `{"items":[${'['.repeat(1200)}${']'.repeat(1200)}]}`, 422, 'json.too.deep'],
    ['a gzip body with garbage after its padding', null, 400, 'gzip.trailing.data']
  ]) {
    it(`refuses ${what} as the parse threads do, with the same offset`, async function () {
      const body = text === null ? Buffer.concat([SMALL, Buffer.from([0, 0, 7])]) : zlib.gzipSync(text)
      const here = await post(`${lab.url}/good`, body)
      const threads = await post(`${threadsOnly.url}/good`, body)
      assert.equal(here.status, status)
      assert.equal(here.body.error.type, type)
      assert.deepEqual(here.body.error, threads.body.error)
    })
  }

  it('streams a small body that inflates past the bound, and answers as for any other', async function () {
    // a few hundred bytes of gzip, 2 MB of JSON: under the bound as sent, far past it inflated
    const text = '{"items":[' + Array(20000).fill('{"id":1,"pad":"' + ' '.repeat(80) + '"}').join(',') + ']}'
    const body = zlib.gzipSync(text, { level: 9 })
    assert.ok(body.length <= BOUND && text.length > 10 * BOUND)
    const expected = await post(`${lab.url}/bad`, body)
    const answer = await post(`${lab.url}/good`, body)
    assert.equal(answer.status, 200)
    assert.deepEqual(answer.body.summary, expected.body.summary)
  })
})

describe('POST /good: small documents on an idle parse thread', function () {
  // shareParse 'always': whether the main thread is busy does not decide here (the next
  // describe has that rule), so every document past 16 KiB takes the thread while one is idle
  let lab = null
  let threadsOnly = null
  let never = null
  function shared () { return lab.app.locals.ingest.smallBodies.documentsShared }
  before(async function start () {
    // a parse cost between the documents' (about 0.5 MiB projected at 64 KiB) and the dense record's (2.6 MiB)
    lab = await startLab({ ingest: { parseCost: 1024 * KiB, shareParse: 'always' } })
    threadsOnly = await startLab({ ingest: { parseCost: 1024 * KiB, inlineParse: 0 } })
    never = await startLab({ ingest: { shareParse: 'never' } })
  })
  after(async function stop () {
    await lab.close()
    await threadsOnly.close()
    await never.close()
  })

  for (const format of ['json', 'array']) {
    for (const bytes of [16 * KiB + 1, 40 * KiB, BOUND]) {
      it(`sends ${bytes} bytes of ${format} to an idle parse thread, and answers /bad's summary`, async function () {
        const body = zlib.gzipSync(documentOf(bytes, format))
        const query = `?format=${format}`
        const expected = await post(`${lab.url}/bad${query}`, body)
        const before = shared()
        const answer = await post(`${lab.url}/good${query}`, body)
        assert.equal(answer.status, 200)
        assert.deepEqual(answer.body.summary, expected.body.summary)
        // one request at a time: the thread that answered the last one is idle again
        assert.equal(shared(), before + 1)
      })
    }
  }

  it('parses a document of 16 KiB or less here, and NDJSON through the record sink', async function () {
    const before = shared()
    for (const [bytes, format] of [[100, 'json'], [16 * KiB, 'array'], [BOUND, 'ndjson']]) {
      const body = zlib.gzipSync(documentOf(bytes, format))
      const expected = await post(`${lab.url}/bad?format=${format}`, body)
      const answer = await post(`${lab.url}/good?format=${format}`, body)
      assert.equal(answer.status, 200)
      assert.deepEqual(answer.body.summary, expected.body.summary)
    }
    assert.equal(shared(), before)
  })

  it('answers many at once, on the threads while one is idle and here when none is, each as /bad does', async function () {
    const bodies = Array.from({ length: 24 }, function body (_, k) { return zlib.gzipSync(documentOf(20 * KiB + 997 * k, k % 2 ? 'json' : 'array')) })
    const queries = bodies.map(function query (_, k) { return `?format=${k % 2 ? 'json' : 'array'}` })
    const expected = []
    for (const [k, body] of bodies.entries()) expected.push(await post(`${lab.url}/bad${queries[k]}`, body))
    const before = shared()
    const answers = await Promise.all(bodies.map(function send (body, k) { return post(`${lab.url}/good${queries[k]}`, body) }))
    for (const [k, answer] of answers.entries()) {
      assert.equal(answer.status, 200)
      assert.deepEqual(answer.body.summary, expected[k].body.summary)
    }
    // the first to reach its parse finds every thread idle; how many more do depends on timing
    assert.ok(shared() > before, 'no document went to a thread')
  })

  it('parses every document on the main thread with shareParse never', async function () {
    const bodies = Array.from({ length: 8 }, function body (_, k) { return zlib.gzipSync(documentOf(20 * KiB + 4099 * k, 'json')) })
    const answers = await Promise.all(bodies.map(function send (body) { return post(`${never.url}/good`, body) }))
    for (const answer of answers) assert.equal(answer.status, 200)
    assert.equal(never.app.locals.ingest.smallBodies.documentsShared, 0)
  })

  for (const [what, text, status, type] of [
    ['invalid JSON', `{"items":[${'{"id":1},'.repeat(2000)}{"id":2,}]}`, 422, 'json.invalid'],
    ['the wrong shape', `{"things":[${'{"id":1},'.repeat(2000)}{"id":2}]}`, 422, 'json.items.missing'],
    ['nesting past the depth limit', `{"items":[${'{"id":1},'.repeat(2000)}${'['.repeat(1200)}${']'.repeat(1200)}]}`, 422, 'json.too.deep'],
    ['a record too dense to parse', `{"items":[{"id":1},${denseRecord(60 * KiB)}]}`, 413, 'record.too.dense']
  ]) {
    it(`refuses ${what} sent to a parse thread as the record sink does, with the same details`, async function () {
      assert.ok(text.length > 16 * KiB && text.length <= BOUND)
      const body = zlib.gzipSync(text)
      const before = shared()
      const answer = await post(`${lab.url}/good`, body)
      const threads = await post(`${threadsOnly.url}/good`, body)
      assert.equal(shared(), before + 1)
      assert.equal(answer.status, status)
      assert.equal(answer.body.error.type, type)
      assert.deepEqual(answer.body.error, threads.body.error)
    })
  }
})

describe('SmallBodies#mainThreadPaused: busy is no wait for I/O between two small documents', function () {
  let state = null
  before(function make () { state = createIngestState(normalizeOptions({ parseThreads: 1 })) })
  after(async function stop () { await state.close() })

  it('is false when the event loop went from one document to the next without waiting', function () {
    state.smallBodies.mainThreadPaused(0.05)
    // a request's work: 5 ms with no turn of the loop
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5)
    assert.equal(state.smallBodies.mainThreadPaused(0.05), false)
  })

  it('is true when the event loop waited for I/O between them, as it does for a lone client\'s next request', async function () {
    state.smallBodies.mainThreadPaused(0.05)
    await new Promise(function wait (resolve) { setTimeout(resolve, 20) })
    assert.equal(state.smallBodies.mainThreadPaused(0.05), true)
  })
})

describe('POST /good: small bodies too dense to parse', function () {
  const PARSE_COST = 256 * KiB
  let lab = null
  let threadsOnly = null
  before(async function start () {
    lab = await startLab({ ingest: { parseCost: PARSE_COST } })
    threadsOnly = await startLab({ ingest: { parseCost: PARSE_COST, inlineParse: 0 } })
  })
  after(async function stop () {
    await lab.close()
    await threadsOnly.close()
  })

  it('refuses a dense record within the bound with 413 record.too.dense, parsed here or by the threads', async function () {
    const text = `{"items":[{"id":1},${denseRecord(40 * KiB)}]}`
    assert.ok(text.length < BOUND)
    const body = zlib.gzipSync(text)
    const answers = [
      await post(`${lab.url}/good`, body),
      await postChunked(`${lab.url}/good`, [body.subarray(0, 10), body.subarray(10)]),
      await post(`${threadsOnly.url}/good`, body)
    ]
    for (const answer of answers) {
      assert.equal(answer.status, 413)
      assert.equal(answer.body.error.type, 'record.too.dense')
      assert.equal(answer.body.error.limit, PARSE_COST)
      assert.ok(answer.body.error.projected > PARSE_COST)
    }
    assert.deepEqual(answers[0].body.error, answers[2].body.error)
    assert.equal((await post(`${lab.url}/good`, SMALL)).status, 200)
  })

  it('parses a dense record the projection admits, as /bad does', async function () {
    const body = zlib.gzipSync(`{"items":[{"id":1},${denseRecord(2 * KiB)}]}`)
    const expected = await post(`${lab.url}/bad`, body)
    const answer = await post(`${lab.url}/good`, body)
    assert.equal(answer.status, 200)
    assert.deepEqual(answer.body.summary, expected.body.summary)
  })
})

describe('parseDocument', function () {
  function bytesOf (text) { return new TextEncoder().encode(text) }

  it('tallies a valid document within the limits', function () {
    const answer = parseDocument({ bytes: bytesOf('{"items":[{"id":1,"n":[2]},{"id":3}]}'), format: 'json', maxDepth: 10, maxCost: 1e6, maxValueBytes: 1e6 })
    assert.equal(answer.tally.items, 2)
    assert.equal(answer.tally.numbers, 3)
  })

  it('leaves every other verdict to the record scanner', function () {
    const limits = { maxDepth: 3, maxCost: 64 * KiB, maxValueBytes: 1e6 }
    for (const [text, format, why] of [
      ['{"items":[{"id":1},]}', 'json', 'invalid'],
      ['{"items":{}}', 'json', 'shape'],
      ['{"items":[]}', 'array', 'shape'],
      ['[[[[1]]]]', 'array', 'too deep'],
      [denseRecord(8 * KiB), 'array', 'projected past maxCost']
    ]) {
      assert.equal(parseDocument({ bytes: bytesOf(text), format, ...limits }), null, why)
    }
    assert.equal(parseDocument({ bytes: bytesOf('[{"id":1}]'), format: 'array', maxValueBytes: 4 }), null, 'longer than a record may be')
  })
})

describe('POST /good: small bodies whose clients vanish', function () {
  let lab = null
  before(async function start () { lab = await startLab({ ingest: { activePipelines: 2 } }) })
  after(async function stop () { await lab.close() })

  function connections () {
    return new Promise(function count (resolve, reject) {
      lab.server.getConnections(function counted (err, n) { if (err) reject(err); else resolve(n) })
    })
  }

  it('releases every place when clients hang up after sending a whole body, while it waited for a pipeline', async function () {
    // the counts are the process's: let whatever an earlier spec left streaming finish first
    await waitFor(function idle () {
      const state = lab.app.locals.ingest.snapshot()
      return state.active === 0 && state.queued === 0
    }, 60000)
    // two bodies not yet ended hold both pipelines, so the whole ones wait
    const holders = [send(lab.port, SMALL, 4), send(lab.port, SMALL, 4)]
    await waitFor(function streaming () { return lab.app.locals.ingest.snapshot().active === 2 })
    const sockets = Array.from({ length: 40 }, function sendWhole () { return send(lab.port, SMALL) })
    await waitFor(function queued () { return lab.app.locals.ingest.snapshot().queued === 40 })
    // the bodies arrived whole (the requests are complete) but were never read: when the
    // sockets close, Node destroys the requests and drops their bodies, and no 'end' will come
    for (const socket of sockets) socket.destroy()
    while (await connections() > 2) await new Promise(function later (resolve) { setTimeout(resolve, 20) })
    // only now do the pipelines come free
    for (const holder of holders) holder.end(SMALL.subarray(4))
    await waitFor(function settled () {
      const state = lab.app.locals.ingest.snapshot()
      return state.active === 0 && state.queued === 0
    })
    assert.equal((await post(`${lab.url}/good`, SMALL)).status, 200)
  })
})
