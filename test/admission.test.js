/**
 * Admission within the memory budget: what a buffering route may hold is
 * projected and reserved before it is allocated; what never fits gets 413,
 * what fits only later gets 503 with Retry-After. POST /bad's refusals of
 * bodies that would blow the budget are test/slow/admission-bad.test.js's.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import { createAdmission } from '../lib/limits/admission.js'
import { labWithRoom, post, waitFor } from './helpers.js'

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

  it('refuses what a request has already met the budget with, even when a collection would free it (refuse)', function () {
    const { admission, state } = admissionAt(700 * MiB)
    const r = admission.reserve(10 * MiB, { route: 'bad', what: 'this body' })
    // zlib stopped at the cap the room gave it; its chunks, garbage now, are in the RSS
    const more = r.room() + 1
    state.rss = 100 * MiB // what a collection inside grow() would find
    const refusal = r.refuse(more, 'this body, inflated past what was free,')
    assert.equal(refusal.status, 413)
    assert.equal(refusal.type, 'memory.budget.exceeded')
    assert.equal(refusal.details.projected, 10 * MiB + more)
    assert.ok(refusal.details.available < refusal.details.projected, JSON.stringify(refusal.details))
    assert.equal(state.collected, 0, 'no collection asked for')
    assert.equal(r.bytes, 10 * MiB, 'nothing reserved')
    const other = admission.reserve(10 * MiB, { route: 'good', what: 'another body' })
    assert.equal(r.refuse(more).status, 503, 'another request holds a reservation: try again')
    other.release()
    r.release()
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
