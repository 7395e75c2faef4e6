/**
 * Admission within the memory budget: what a buffering route may hold is
 * projected and reserved before it is allocated; what never fits gets 413,
 * what fits only later gets 503 with Retry-After.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import zlib from 'node:zlib'
import { createAdmission } from '../lib/limits/admission.js'
import { startLab, post, waitFor } from './helpers.js'

const MiB = 1024 * 1024

describe('the memory admission', function () {
  function admissionAt (rss, budget = 1000 * MiB) {
    const state = { rss, collected: 0 }
    const admission = createAdmission({
      budget,
      readRss: function fakeRss () { return state.rss },
      collect: function fakeCollect () { state.collected++ }
    })
    return { admission, state }
  }

  it('admits what fits under 90 % of the budget beside the idle process', function () {
    const { admission } = admissionAt(100 * MiB)
    const r = admission.reserve(700 * MiB, { route: 'bad', what: 'this body' })
    assert.equal(admission.state().reserved, 700 * MiB)
    r.release()
    assert.equal(admission.state().reserved, 0)
    r.release() // twice is once
    assert.equal(admission.state().reserved, 0)
  })

  it('refuses with 413 memory.budget.exceeded what cannot fit, naming the budget and the way around', function () {
    const { admission } = admissionAt(100 * MiB)
    assert.throws(function tooBig () { admission.reserve(801 * MiB, { route: 'bad', what: 'this body' }) }, function check (err) {
      assert.equal(err.status, 413)
      assert.equal(err.type, 'memory.budget.exceeded')
      assert.equal(err.details.budget, 1000 * MiB)
      assert.equal(err.details.projected, 801 * MiB)
      assert.match(err.message, /--memory-limit/)
      assert.match(err.message, /--unsafe-bad/)
      return true
    })
    assert.equal(admission.state().reserved, 0)
  })

  it('answers 503 memory.busy with Retry-After when it fits only once others finish, after one collection', function () {
    const { admission, state } = admissionAt(100 * MiB)
    const first = admission.reserve(500 * MiB, { route: 'bad', what: 'one body' })
    assert.throws(function busy () { admission.reserve(400 * MiB, { route: 'bad', what: 'another body' }) }, function check (err) {
      assert.equal(err.status, 503)
      assert.equal(err.type, 'memory.busy')
      assert.equal(err.headers['Retry-After'], '2')
      return true
    })
    assert.equal(state.collected, 1, 'garbage is collected before saying busy')
    first.release()
    admission.reserve(400 * MiB, { route: 'bad', what: 'another body' }).release()
  })

  it('counts the RSS when it is above what is reserved, and says 413 when no other request could free it', function () {
    const { admission, state } = admissionAt(100 * MiB)
    const other = admission.reserve(10 * MiB, { route: 'bad', what: 'one body' })
    state.rss = 850 * MiB
    assert.throws(function busy () { admission.reserve(100 * MiB, { route: 'db/batch', what: 'a batch' }) }, { status: 503 })
    other.release()
    assert.throws(function alone () { admission.reserve(100 * MiB, { route: 'db/batch', what: 'a batch' }) }, { status: 413, type: 'memory.budget.exceeded' })
    state.rss = 100 * MiB
    admission.reserve(100 * MiB, { route: 'db/batch', what: 'a batch' }).release()
  })

  it('grows a reservation stage by stage and shrinks it, never below zero', function () {
    const { admission } = admissionAt(100 * MiB)
    const r = admission.reserve(100 * MiB, { route: 'bad', what: 'this body' })
    r.grow(200 * MiB)
    r.shrink(250 * MiB)
    assert.equal(r.bytes, 50 * MiB)
    assert.ok(r.tryGrow(900 * MiB) !== null, 'tryGrow returns the refusal')
    assert.equal(r.bytes, 50 * MiB)
    r.shrink(1000 * MiB)
    assert.equal(admission.state().reserved, 0)
  })

  it('admits everything without a budget', function () {
    const admission = createAdmission({ budget: 0 })
    assert.equal(admission.enabled, false)
    admission.reserve(100 * 1024 * MiB, { route: 'bad', what: 'this body' }).release()
  })

  it('collects the garbage of streamed chunks while someone streams, and stops looking when nobody does', async function () {
    const { admission, state } = admissionAt(100 * MiB)
    const stop = admission.watchGarbage()
    const stopToo = admission.watchGarbage()
    let kept = []
    await waitFor(function collected () {
      // chunks as a stream makes them: a new Buffer each, kept only a moment
      kept.push(Buffer.alloc(MiB, 1))
      if (kept.length > 4) kept = []
      return state.collected > 0
    })
    stop()
    assert.notEqual(admission.garbageTimer, null, 'one watcher is still streaming')
    stopToo()
    stopToo() // twice is once
    assert.equal(admission.garbageTimer, null)
    assert.equal(admission.watchers, 0)
  })

  it('refuses a bad budget with a TypeError', function () {
    assert.throws(function negative () { createAdmission({ budget: -1 }) }, TypeError)
  })
})

/**
 * A lab whose budget leaves this test process about `room` bytes for one
 * request, whatever the process holds when the lab starts (the lab runs in
 * the test's own process here: its RSS is the lab's).
 */
function labWithRoom (name, room) {
  const lab = { url: null, app: null }
  let started = null
  let dataDir = null
  before(async function startLabWithRoom () {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `streamlab-${name}-`))
    const memoryBudget = Math.ceil((process.memoryUsage.rss() + room) / 0.9 / MiB) * MiB
    started = await startLab({ dataDir, memoryBudget })
    lab.url = started.url
    lab.app = started.app
    lab.port = started.port
  })
  after(async function stopLab () {
    await started?.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })
  return lab
}

/** `{"items":[[{},{},...]]}` of about `bytes`, gzipped: about 40 times its text in JSON.parse's heap. */
function denseEmptyObjects (bytes) {
  return zlib.gzipSync('{"items":[[' + Array(Math.floor(bytes / 3)).fill('{}').join(',') + ']]}')
}

/** A small valid gzip member whose trailer claims `declared` inflated bytes. */
function gzipDeclaring (declared) {
  const gz = zlib.gzipSync('{"items":[]}')
  gz.writeUInt32LE(declared, gz.length - 4)
  return gz
}

/** gzip of `bytes` spaces, made a MiB at a time (the test process must not hold them). */
async function gzipOfSpaces (bytes) {
  const mib = Buffer.alloc(MiB, 0x20)
  const out = []
  await pipeline(Readable.from((function * spaces () { for (let k = 0; k < bytes / MiB; k++) yield mib })()), zlib.createGzip({ level: 1 }), async function collect (source) {
    for await (const chunk of source) out.push(chunk)
  })
  return Buffer.concat(out)
}

/** A request that claims `length` bytes and sends none: answered (or not) on its headers alone. */
function claim (port, route, length) {
  return new Promise(function ask (resolve, reject) {
    const req = http.request({ port, host: '127.0.0.1', path: route, method: 'POST', headers: { 'content-type': 'application/octet-stream', 'content-length': length } })
    req.on('response', function read (res) {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', function keep (c) { text += c })
      res.on('end', function done () {
        req.destroy()
        resolve({ status: res.statusCode, body: JSON.parse(text) })
      })
    })
    req.on('error', reject)
    req.flushHeaders()
  })
}

describe('POST /bad within the memory budget', function () {
  const lab = labWithRoom('admission-bad', 160 * MiB)

  it('answers a body that fits', async function () {
    const res = await post(`${lab.url}/bad`, zlib.gzipSync('{"items":[{"id":1},{"id":2}]}'))
    assert.equal(res.status, 200)
    assert.equal(res.body.summary.idSum, '3')
  })

  it('refuses a dense body with 413 memory.budget.exceeded before JSON.parse runs', async function () {
    const body = denseEmptyObjects(4 * MiB)
    const before = process.memoryUsage.rss()
    const res = await post(`${lab.url}/bad`, body)
    assert.equal(res.status, 413)
    assert.equal(res.body.error.type, 'memory.budget.exceeded')
    assert.ok(res.body.error.projected > res.body.error.available)
    assert.match(res.body.error.message, /parsing this body/)
    // a parse of this body would have taken ~170 MiB; the refusal held the inflated 4 MiB and its string
    assert.ok(process.memoryUsage.rss() - before < 100 * MiB, 'nothing was parsed')
    assert.equal(lab.app.locals.admission.state().reserved, 0, 'released')
  })

  it('refuses an honest gzip whose trailer declares more than fits, before inflating a byte', async function () {
    const res = await post(`${lab.url}/bad`, gzipDeclaring(300 * MiB))
    assert.equal(res.status, 413)
    assert.equal(res.body.error.type, 'memory.budget.exceeded')
    assert.match(res.body.error.message, /inflated/)
  })

  it('refuses a body whose trailer lies (a second member) once inflating passes what was free', async function () {
    const body = Buffer.concat([await gzipOfSpaces(256 * MiB), zlib.gzipSync('{}')])
    const res = await post(`${lab.url}/bad`, body)
    assert.ok([413, 503].includes(res.status), `status ${res.status}`)
    assert.match(res.body.error.type, /^memory\./)
    assert.equal(lab.app.locals.admission.state().reserved, 0, 'released')
  })
})

describe('GET /metrics and the budgets', function () {
  const lab = labWithRoom('admission-metrics', 160 * MiB)

  it('shows the memory budget, what is reserved in it, and the disk quota in the JSON snapshot', async function () {
    const res = await fetch(`${lab.url}/metrics`, { headers: { accept: 'application/json' } })
    const snapshot = await res.json()
    assert.equal(snapshot.memoryBudget.budget, lab.app.locals.options.memoryBudget)
    assert.equal(snapshot.memoryBudget.reserved, 0)
    assert.equal(snapshot.disk.quota, lab.app.locals.options.diskQuota)
    assert.equal(typeof snapshot.disk.used, 'number')
  })
})

describe('POST /upload-buffer within the memory budget', function () {
  const lab = labWithRoom('admission-upload', 160 * MiB)

  it('refuses with 413 before reading a body whose Content-Length cannot fit twice', async function () {
    const res = await claim(lab.port, '/upload-buffer', 200 * MiB)
    assert.equal(res.status, 413)
    assert.equal(res.body.error.type, 'memory.budget.exceeded')
    assert.equal(res.body.error.route, 'upload-buffer')
    assert.equal(lab.app.locals.admission.state().reserved, 0, 'released')
  })

  it('takes one that fits', async function () {
    const small = await post(`${lab.url}/upload-buffer`, Buffer.alloc(MiB, 1), { 'content-type': 'application/octet-stream' })
    assert.equal(small.status, 200)
  })
})
