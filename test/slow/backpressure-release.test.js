/**
 * What a backpressure upload takes it gives back, however it ends: done, the
 * cap, a DELETE (a run's time box), a client that aborts its body, a client
 * gone while the consumer drains, and an error. After each, run after run, the
 * process's Buffer memory (`arrayBuffers`, after forced collections) is back
 * within a few MiB of where it was, and the budget's reservation is back to
 * zero. The lab runs in this process so that its Buffers are this process's.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import v8 from 'node:v8'
import vm from 'node:vm'
import zlib from 'node:zlib'
import { call } from '../experiment-helpers.js'
import { generatedGzip, labWithRoom, post } from '../helpers.js'

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc')
const MiB = 1024 * 1024
/** What one run may leave in Buffers: the lab's own caches and a chunk or two in flight, far below what it held. */
const LEFT_AT_MOST = 6 * MiB
/** Each way is run this many times in a row: a leak adds up. */
const RUNS = 3

async function settle () {
  for (let k = 0; k < 5; k++) {
    await new Promise(function later (resolve) { setTimeout(resolve, 100) })
    gc()
  }
  return process.memoryUsage().arrayBuffers
}

/** POST a body over a connection this side controls: `stop()` aborts it mid-body. */
function postOpen (url, pieces) {
  const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/gzip' } })
  const answered = new Promise(function answer (resolve) {
    req.once('response', function read (res) {
      res.resume()
      res.once('end', function done () { resolve(res.statusCode) })
    })
    req.once('error', function gone () { resolve(null) })
  })
  for (const piece of pieces) req.write(piece)
  return { answered, stop: function stop () { req.destroy() }, finish: function finish () { req.end() } }
}

/** Ask `check` every 50 ms until it says yes, or fail naming it. */
async function waitFor (check, ms) {
  const until = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${check.name}`)
    await new Promise(function later (resolve) { setTimeout(resolve, 50) })
  }
}

/** GET the upload until it holds `bytes` in all. */
function heldPast (lab, token, bytes) {
  return waitFor(async function holds () {
    const state = await call(`${lab.url}/backpressure/${token}`)
    return state.status === 200 && state.body.held > bytes
  }, 30_000)
}

function endedUpload (lab, token) {
  return waitFor(async function ended () {
    return (await call(`${lab.url}/backpressure/${token}`)).body?.outcome != null
  }, 30_000)
}

describe('POST /backpressure/:token gives back what it held', function () {
  this.timeout(180_000)
  const lab = labWithRoom('backpressure-release', 1024 * MiB)
  let body
  let gzipStart
  let longLine
  let baseline

  before(async function makeBodies () {
    body = await generatedGzip({ bytes: 60_000_000, format: 'ndjson' })
    // a body that never ends: its first part, without the gzip trailer (the client holds the rest)
    gzipStart = body.subarray(0, body.length >> 1)
    // 20 MB of lines, then one longer than the batcher takes
    longLine = zlib.gzipSync(Buffer.concat([zlib.gunzipSync(body).subarray(0, 20_000_000), Buffer.alloc(2 * MiB, 0x61)]))
    // one upload first: the lab's first request grows its code and caches once
    await post(`${lab.url}/backpressure/warm-up-0?delayMs=0`, await generatedGzip({ bytes: 1_000_000, format: 'ndjson' }))
    baseline = await settle()
  })

  /** Run one way of ending RUNS times; after each, the Buffers and the reservation are back. */
  async function eachRun (name, runOnce) {
    const left = []
    for (let k = 0; k < RUNS; k++) {
      const token = `${name}-${k}-${Date.now()}`
      await runOnce(token)
      await endedUpload(lab, token)
      left.push(await settle() - baseline)
      assert.equal(lab.app.locals.admission.state().reserved, 0, `${name}, run ${k + 1}: the reservation is released`)
    }
    const shown = left.map(function inMiB (b) { return (b / MiB).toFixed(1) }).join(', ')
    for (const bytes of left) assert.ok(bytes < LEFT_AT_MOST, `${name}: MiB left in Buffers after each run: ${shown}`)
  }

  it('when it is done', async function () {
    await eachRun('done', async function done (token) {
      const res = await post(`${lab.url}/backpressure/${token}?delayMs=0`, body)
      assert.equal(res.status, 200, res.text)
    })
  })

  it('when the cap stops "ignore" (413 buffer.cap.exceeded)', async function () {
    await eachRun('cap', async function capped (token) {
      const res = await post(`${lab.url}/backpressure/${token}?mode=ignore&delayMs=1000&cap=32MiB`, body)
      assert.equal(res.status, 413, res.text)
      assert.equal(res.body.error.type, 'buffer.cap.exceeded')
    })
  })

  it('when a DELETE stops it (a run\'s time box)', async function () {
    await eachRun('deleted', async function deleted (token) {
      const upload = post(`${lab.url}/backpressure/${token}?mode=ignore&delayMs=1000&cap=1GiB`, body)
      await heldPast(lab, token, 24 * MiB)
      assert.equal((await call(`${lab.url}/backpressure/${token}`, 'DELETE')).status, 200)
      assert.equal((await upload).body.error.type, 'request.aborted')
    })
  })

  it('when its client aborts the body half sent', async function () {
    await eachRun('aborted', async function aborted (token) {
      const upload = postOpen(`${lab.url}/backpressure/${token}?mode=ignore&delayMs=1000&cap=1GiB`, [gzipStart])
      await heldPast(lab, token, 24 * MiB)
      upload.stop()
      await upload.answered
    })
  })

  it('when its client is gone while the consumer drains what was read', async function () {
    await eachRun('client-gone', async function gone (token) {
      const upload = postOpen(`${lab.url}/backpressure/${token}?mode=ignore&delayMs=1000&cap=1GiB`, [body])
      upload.finish()
      await waitFor(async function allRead () {
        const state = await call(`${lab.url}/backpressure/${token}`)
        return state.status === 200 && state.body.compressedBytes === body.length
      }, 30_000)
      upload.stop()
    })
  })

  it('when it fails (a line longer than the batcher takes: 413)', async function () {
    await eachRun('error', async function failed (token) {
      const res = await post(`${lab.url}/backpressure/${token}?mode=ignore&delayMs=1000&cap=1GiB`, longLine)
      assert.equal(res.status, 413, res.text)
      assert.equal(res.body.error.type, 'record.too.large')
    })
  })
})
