/**
 * A body of long lines against the lab's memory budget: 400 NDJSON lines of
 * about 1 MB (gzip -9, some 390 KB), at the largest highWaterMark, in a worker
 * run under --memory-limit 256MiB. Every stage is bounded in bytes and in the
 * budget before it fills, so the lab answers 413 or 503 where it cannot hold
 * a run, and the worker is never killed.
 */
import assert from 'node:assert/strict'
import zlib from 'node:zlib'
import { BATCH_BYTES, MAX_LINE } from '../../experiments/backpressure/stages.js'
import { startLabProcess } from '../../lib/measure/lab-process.js'
import { call } from '../experiment-helpers.js'

const LINES = 400
const QUERY = 'delayMs=1000&highWaterMark=16MiB&cap=1GiB'

function longLines () {
  const line = JSON.stringify({ s: 'x'.repeat(1_000_000 - 10) }) + '\n'
  return zlib.gzipSync(Buffer.from(line.repeat(LINES)), { level: 9 })
}

/** POST without waiting for the answer: it settles to { status, body }, or { status: null } for a connection cut. */
function upload (url, body) {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/gzip' }, body }).then(async function answered (res) {
    return { status: res.status, body: await res.json() }
  }, function cut () { return { status: null } })
}

async function watchFor (url, ms) {
  const seen = []
  const until = Date.now() + ms
  while (Date.now() < until) {
    const state = await call(url)
    if (state.status === 200) seen.push(state.body)
    if (state.body?.outcome) break
    await new Promise(function later (resolve) { setTimeout(resolve, 250) })
  }
  return seen
}

describe('POST /backpressure/:token: 1 MB lines under --memory-limit 256MiB', function () {
  this.timeout(120_000)
  let lab = null
  let workerPid = 0
  const body = longLines()

  let idleBuffers = 0

  before(async function startLab () {
    lab = await startLabProcess(['--memory-limit', '256MiB'])
    workerPid = lab.pid
    idleBuffers = (await call(`${lab.url}/metrics?format=json`)).body.sample.arrayBuffers
  })
  after(async function stopLab () { await lab?.stop() })
  afterEach(function sameWorker () {
    const killed = lab.output().split('\n').filter(function killed (l) { return /killed/.test(l) })
    assert.equal(lab.pid, workerPid, `the worker was restarted: ${killed.join(' ')}`)
  })

  it('behind "pipeline", holds every stage within its bound and one batch, in bytes, and is never killed', async function () {
    const url = `${lab.url}/backpressure/long-lines-pipeline`
    const answer = upload(`${url}?mode=pipeline&${QUERY}`, body)
    const seen = await watchFor(url, 6000)
    assert.ok(seen.length >= 4, `${seen.length} looks`)
    const last = seen.at(-1)
    for (const stage of last.stages) {
      const peak = last.peaks.stages[stage.name]
      assert.ok(peak <= stage.bound + MAX_LINE + BATCH_BYTES, `${stage.name} peaked at ${peak} of ${stage.bound}`)
    }
    assert.equal((await call(url, 'DELETE')).status, 200)
    const { status, body: stopped } = await answer
    // the DELETE ends it as a client gone would; a connection cut before the answer is fine too
    assert.ok(status === null || stopped.error.type === 'request.aborted', `answered ${status}`)
  })

  it('behind "ignore", answers 413 or 503 from the budget as the consumer\'s buffer grows past its bound', async function () {
    const url = `${lab.url}/backpressure/long-lines-ignore?mode=ignore&delayMs=1000&highWaterMark=1MiB&cap=1GiB`
    const { status, body: answer } = await upload(url, body)
    assert.ok(status === 413 || status === 503, `answered ${status}`)
    assert.ok(['memory.budget.exceeded', 'memory.busy'].includes(answer.error.type), answer.error.type)
    assert.ok(answer.error.projected > 64 * 1024 * 1024, `refused at ${answer.error.projected} bytes: grown into, not at the start`)
  })

  it('then gives its Buffers back within seconds, with no collection asked from outside', async function () {
    const until = Date.now() + 10_000
    let buffers = Infinity
    while (buffers - idleBuffers > 8 * 1024 * 1024 && Date.now() < until) {
      await new Promise(function later (resolve) { setTimeout(resolve, 250) })
      buffers = (await call(`${lab.url}/metrics?format=json`)).body.sample.arrayBuffers
    }
    assert.ok(buffers - idleBuffers <= 8 * 1024 * 1024, `arrayBuffers ${buffers} against ${idleBuffers} idle`)
  })

  it('then takes a small upload: nothing it held is left reserved', async function () {
    const small = await upload(`${lab.url}/backpressure/small-after-1?delayMs=0`, zlib.gzipSync('{"a":1}\n'))
    assert.equal(small.status, 200, JSON.stringify(small.body))
  })
})
