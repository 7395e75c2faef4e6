/**
 * The abort-upload experiment's two routes (experiments/abort-upload/): a whole
 * upload saved and answered, a missing Content-Length or one past the limit
 * refused, and what each leaves when its client aborts mid-body: pipe() the
 * descriptor and the half-written file, pipeline() nothing. The experiment
 * that counts them is test/slow/abort-upload.test.js's.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import { call } from './experiment-helpers.js'
import { labInTempDir } from './helpers.js'

const LIMIT = 1024 * 1024

/**
 * One upload that announces `bytes`, sends `sent`, waits for `before()` (the server has written
 * them, say) and hangs up; resolves once its socket has closed.
 */
function abortedUpload (url, bytes, sent, before = async function atOnce () {}) {
  return new Promise(function uploadThenAbort (resolve, reject) {
    const req = http.request(url, { method: 'POST', agent: false, headers: { 'content-length': String(bytes) } })
    req.on('error', function expected () {})
    req.on('close', resolve)
    req.write(Buffer.alloc(sent, 7), function written () {
      before().then(function hangUp () { req.destroy() }, reject)
    })
  })
}

async function leftovers (lab) {
  return (await call(`${lab.url}/abort-upload`)).body
}

/** Poll GET /abort-upload until `check` holds (the server learns of a hang-up a little after the client). */
async function leftoversWhen (lab, check, ms = 10_000) {
  const deadline = Date.now() + ms
  for (;;) {
    const state = await leftovers(lab)
    if (check(state) || Date.now() > deadline) return state
    await new Promise(function later (resolve) { setTimeout(resolve, 50) })
  }
}

describe('abort-upload routes', function () {
  const lab = labInTempDir('abort-upload-routes', { upload: { limit: LIMIT } })

  afterEach(async function () {
    await call(`${lab.url}/abort-upload`, 'DELETE')
  })

  /** The bus's request end events for `route` until `count` have come. */
  function requestEnds (route, count) {
    const ends = []
    return new Promise(function collect (resolve) {
      lab.app.locals.events.on('request', function onRequest (e) {
        if (e.phase !== 'end' || e.route !== `abort-upload/${route}`) return
        ends.push(e)
        if (ends.length === count) {
          lab.app.locals.events.off('request', onRequest)
          resolve(ends)
        }
      })
    })
  }

  for (const route of ['pipe', 'pipeline']) {
    it(`POST /abort-upload/${route} saves a whole upload and answers its name and size`, async function () {
      const body = Buffer.alloc(100_000, 1)
      const ended = requestEnds(route, 1)
      const res = await fetch(`${lab.url}/abort-upload/${route}`, { method: 'POST', body })
      const answer = await res.json()
      const [end] = await ended
      assert.equal(end.status, 200, 'the dashboard shades it as answered')
      assert.equal(end.errorType, undefined)
      assert.equal(res.status, 200, JSON.stringify(answer))
      assert.equal(answer.route, route)
      assert.equal(answer.bytes, body.length)
      const file = path.join(lab.dataDir, 'abort-upload', answer.file)
      assert.equal(fs.statSync(file).size, body.length)
      const state = await leftovers(lab)
      assert.equal(state.fds.open, 0, 'a finished upload closed its file')
      assert.equal(state.byRoute[route].files, 1)
      const cleaned = (await call(`${lab.url}/abort-upload`, 'DELETE')).body
      assert.deepEqual(cleaned, { closed: 0, notOurs: 0, removed: 1, bytes: body.length })
      assert.equal(fs.existsSync(file), false)
    })

    it(`POST /abort-upload/${route} answers 400 parameter.invalid without a Content-Length, 413 past the upload limit`, async function () {
      const chunked = await new Promise(function sendChunked (resolve, reject) {
        const req = http.request(`${lab.url}/abort-upload/${route}`, { method: 'POST' }, function onAnswer (res) {
          let text = ''
          res.on('data', function onData (c) { text += c })
          res.on('end', function onEnd () { resolve({ status: res.statusCode, body: JSON.parse(text) }) })
        })
        req.on('error', reject)
        // a write before end(): chunked, no Content-Length
        req.write('abc')
        req.end()
      })
      assert.equal(chunked.status, 400)
      assert.equal(chunked.body.error.parameter, 'content-length')
      const big = await fetch(`${lab.url}/abort-upload/${route}`, { method: 'POST', body: Buffer.alloc(LIMIT + 1) })
      assert.equal(big.status, 413)
      assert.equal((await big.json()).error.type, 'entity.too.large')
    })
  }

  it('pipe() leaves the descriptor and the half-written file of an aborted upload; DELETE closes and removes them', async function () {
    const ended = requestEnds('pipe', 1)
    await abortedUpload(`${lab.url}/abort-upload/pipe`, 200_000, 50_000, function serverWroteThem () {
      return leftoversWhen(lab, function written (s) { return s.writing.bytes === 50_000 })
    })
    const state = await leftoversWhen(lab, function settled (s) { return s.inFlight === 0 })
    assert.equal(state.inFlight, 0)
    assert.equal(state.fds.open, 1, JSON.stringify(state))
    assert.equal(state.held, 1)
    assert.equal(state.byRoute.pipe.files, 1)
    assert.equal(state.byRoute.pipe.bytes, 50_000, 'the half-written file')
    const [end] = await ended
    assert.deepEqual([end.status, end.errorType], [400, 'request.aborted'], 'the dashboard shades it as failed')
    const cleaned = (await call(`${lab.url}/abort-upload`, 'DELETE')).body
    assert.deepEqual(cleaned, { closed: 1, notOurs: 0, removed: 1, bytes: 50_000 })
    const after = await leftovers(lab)
    assert.equal(after.fds.open, 0)
    assert.equal(after.files, 0)
  })

  it('pipeline() leaves nothing of an aborted upload', async function () {
    await abortedUpload(`${lab.url}/abort-upload/pipeline`, 200_000, 50_000, function serverWroteThem () {
      return leftoversWhen(lab, function written (s) { return s.writing.bytes === 50_000 })
    })
    const state = await leftoversWhen(lab, function settled (s) { return s.inFlight === 0 })
    assert.equal(state.fds.open, 0, JSON.stringify(state))
    assert.equal(state.files, 0)
  })
})
