/**
 * Uploads aborted at random points leave nothing behind: heap, active
 * handles, open file descriptors and listeners come back to baseline.
 * CI runs 200; `STREAMLAB_ABORTS=1000 npx mocha --no-config test/slow/aborts.test.js` runs
 * the full thousand.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import v8 from 'node:v8'
import vm from 'node:vm'
import zlib from 'node:zlib'
import { startLab, post } from '../helpers.js'
import { prng } from '../../lib/measure/mutate.js'

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc')
const ABORTS = Number(process.env.STREAMLAB_ABORTS || 200)

function openFds () {
  try {
    return fs.readdirSync('/proc/self/fd').length
  } catch {
    return null // no /proc: not counted
  }
}

function busListeners (events) {
  return events.eventNames().reduce(function count (sum, name) { return sum + events.listenerCount(name) }, 0)
}

function snapshot (lab) {
  return {
    heap: process.memoryUsage().heapUsed,
    handles: process.getActiveResourcesInfo().length,
    fds: openFds(),
    listeners: busListeners(lab.app.locals.events)
  }
}

/**
 * Wait until `settled()` holds, or `ms` pass (the assertions after it then
 * say what did not settle), then collect garbage. An abandoned upload is
 * drained until its client hangs up, or 2 s of silence closes its socket:
 * at least that long, and on a busy machine longer, so no fixed sleep.
 */
async function settle (settled, ms = 60000) {
  const until = Date.now() + ms
  await new Promise(function drained (resolve) { setTimeout(resolve, 2200) })
  while (!settled() && Date.now() < until) {
    await new Promise(function later (resolve) { setTimeout(resolve, 50) })
  }
  for (let k = 0; k < 5; k++) {
    await new Promise(function later (resolve) { setTimeout(resolve, 100) })
    gc()
  }
}

function idle (lab) {
  const state = lab.app.locals.ingest.snapshot()
  return state.active === 0 && state.queued === 0 && state.budgetUsed === 0 && state.waiting === 0 && state.gathering === 0
}

function abortAt (port, route, body, cut, waitMs) {
  return new Promise(function upload (resolve) {
    const req = http.request({ host: '127.0.0.1', port, path: `/${route}`, method: 'POST', agent: false, headers: { 'content-type': 'application/gzip', 'content-length': body.length } })
    req.on('error', function expected () {})
    req.on('response', function early (res) { res.resume(); res.on('end', resolve) })
    req.write(body.subarray(0, cut), function written () {
      setTimeout(function hangUp () { req.destroy(); resolve() }, waitMs)
    })
  })
}

describe(`${ABORTS} uploads aborted at random points`, function () {
  this.timeout(120000)
  let lab
  before(async function () { lab = await startLab() })
  after(async function () { await lab.close() })

  it('leave heap, handles, file descriptors and listeners at baseline', async function () {
    const rand = prng(99)
    const body = zlib.gzipSync(JSON.stringify({ items: Array.from({ length: 20000 }, function item (_, i) { return { id: i, s: '中文 caf\u00e9 😀', n: [i / 7, i * 3] } }) }))
    // warm every path once, then take the baseline
    for (const route of ['bad', 'good']) assert.equal((await post(`${lab.url}/${route}`, body)).status, 200)
    // the warm-up's connections close too (keep-alive ends after 5 s at most)
    await settle(function warmUpGone () { return idle(lab) && lab.server.openConnections === 0 })
    const before = snapshot(lab)

    const batch = 20
    for (let k = 0; k < ABORTS; k += batch) {
      const wave = []
      for (let j = 0; j < batch && k + j < ABORTS; j++) {
        const route = rand() < 0.5 ? 'bad' : 'good'
        wave.push(abortAt(lab.port, route, body, Math.floor(rand() * body.length), Math.floor(rand() * 30)))
      }
      await Promise.all(wave)
    }
    // every aborted connection closed on the server's side first: until it has read each hang-up
    // (seconds on a busy machine) it may still start or feed a request, and the state moves again
    await settle(function abortsGone () {
      const now = snapshot(lab)
      return lab.server.openConnections === 0 && idle(lab) && now.handles <= before.handles + 2 && (before.fds === null || now.fds <= before.fds + 2) &&
        now.listeners === before.listeners
    })
    assert.deepEqual(lab.app.locals.ingest.snapshot(), { active: 0, queued: 0, budgetUsed: 0, waiting: 0, gathering: 0 })
    const after = snapshot(lab)
    assert.ok(after.handles <= before.handles + 2, `active resources ${before.handles} -> ${after.handles}`)
    if (before.fds !== null) assert.ok(after.fds <= before.fds + 2, `open fds ${before.fds} -> ${after.fds}`)
    assert.equal(after.listeners, before.listeners, 'bus listeners')
    assert.ok(after.heap - before.heap < 8 * 1024 * 1024, `heap grew ${((after.heap - before.heap) / 1048576).toFixed(1)} MiB`)

    const res = await post(`${lab.url}/good`, body)
    assert.equal(res.status, 200, 'still serving')
  })
})
