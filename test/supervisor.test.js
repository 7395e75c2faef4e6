/**
 * server.js as a supervisor: a zip bomb on the unsafe /bad takes the worker
 * past its memory budget, the supervisor kills it and starts another on the
 * same port, the new worker tells reconnecting dashboards (`event: crash`),
 * and too many crashes in a row stop the supervisor.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import http from 'node:http'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import zlib from 'node:zlib'
import { openEventStream } from '../bench/event-stream.js'
import { startLabProcess } from '../bench/lab-process.js'
import { uploadStreams } from '../bench/upload.js'
import { createBomb } from '../generators/bombs.js'
import { createSupervisor, describeCrash, likelyCulprit } from '../lib/supervisor.js'
import { startLab } from './helpers.js'
import { processAlive } from '../lib/process-alive.js'

const run = promisify(execFile)
const SERVER = fileURLToPath(new URL('../server.js', import.meta.url))
const MiB = 1024 * 1024
const BUDGET = ['--memory-limit', '256MiB', '--unsafe-bad']
const SMALL_BODY = zlib.gzipSync(JSON.stringify({ items: [{ id: 7, numbers: [1.5, 2.5] }] }))

/** POST a bomb that inflates to 2 GB; on /bad (unsafe) the answer is a dead connection. */
function sendBomb (url) {
  const bomb = createBomb({ variant: 'ratio', bytes: '2GB' })
  return uploadStreams(url, bomb.streams, bomb.uploadHeaders)
}

/** GET on a new connection (no pooled socket from a dead worker). */
function get (url) {
  return new Promise(function request (resolve, reject) {
    http.get(url, { agent: false, headers: { accept: 'application/json' } }, function onResponse (res) {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', function keep (chunk) { text += chunk })
      res.on('end', function done () { resolve({ status: res.statusCode, body: JSON.parse(text) }) })
    }).on('error', reject)
  })
}

async function waitUntil (test, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(function pause (resolve) { setTimeout(resolve, 20) })
  }
}

describe('GET /metrics after a restart', function () {
  let lab

  before(async function () {
    lab = await startLab()
  })
  after(async function () {
    await lab.close()
  })

  it('replays its whole history to a client whose Last-Event-ID is beyond any it issued, crash first', async function () {
    const crash = { reason: 'memory-limit', pid: 1, rss: 300 * MiB, budget: 256 * MiB, route: 'bad', time: Date.now(), restartMs: 200 }
    lab.app.locals.events.emit('crash', crash)
    lab.app.locals.events.emit('peak', { time: Date.now(), reset: true, supported: true, peakRss: 1 })
    const fresh = await openEventStream(`${lab.url}/metrics?interval=1000`)
    const reconnected = await openEventStream(`${lab.url}/metrics?interval=1000`, { lastEventId: 987654 })
    const replayed = await reconnected.waitFor(function isCrash (e) { return e.event === 'crash' })
    await reconnected.waitFor(function isPeak (e) { return e.event === 'peak' })
    assert.deepEqual(replayed.data, crash)
    assert.equal(replayed.id, 1)
    await new Promise(function pause (resolve) { setTimeout(resolve, 100) })
    assert.equal(fresh.events.filter(function isCrash (e) { return e.event === 'crash' }).length, 0, 'a client with no id starts live')
    fresh.close()
    reconnected.close()
  })
})

describe('the crash record', function () {
  it('puts a crash down to a buffering route in flight (/bad, then /upload-buffer), else to the latest request', function () {
    assert.equal(likelyCulprit({ good: 1, bad: 1 }, ['bad', 'good']), 'bad')
    assert.equal(likelyCulprit({ 'upload-buffer': 1, bad: 1 }, ['bad', 'upload-buffer']), 'bad')
    assert.equal(likelyCulprit({ 'upload-buffer': 2, 'upload-stream': 1, good: 1 }, ['upload-buffer', 'upload-buffer', 'upload-stream', 'good']), 'upload-buffer')
    assert.equal(likelyCulprit({ good: 1, 'upload-stream': 1 }, ['good', 'upload-stream']), 'upload-stream')
    assert.equal(likelyCulprit({}, []), null)
  })

  it('says which request was in flight, upload routes included', function () {
    const crash = { reason: 'memory-limit', pid: 12, rss: 300 * MiB, budget: 256 * MiB }
    assert.equal(describeCrash({ ...crash, route: 'upload-buffer' }),
      'worker 12 killed: RSS 300 MiB passed the 256 MiB budget while POST /upload-buffer was in flight')
    assert.equal(describeCrash({ ...crash, route: null }),
      'worker 12 killed: RSS 300 MiB passed the 256 MiB budget with no ingest or upload request in flight')
  })
})

describe('the supervisor (server.js)', function () {
  this.timeout(60000)

  describe('with --memory-limit 256MiB --unsafe-bad', function () {
    let lab

    before(async function () {
      lab = await startLabProcess(BUDGET)
    })
    after(async function () {
      await lab?.stop()
    })

    it('kills the worker a bomb on POST /bad blows past the budget, and is back on the same port within 2 s', async function () {
      const firstWorker = lab.pid
      assert.notEqual(firstWorker, lab.supervisorPid, 'the lab runs in a worker process')
      const watcher = await openEventStream(`${lab.url}/metrics?interval=1000`)
      await watcher.waitFor(function isSample (e) { return e.event === 'sample' })

      const answer = await sendBomb(`${lab.url}/bad`)
      assert.equal(answer.status, 0, `a dead connection, not an answer: ${JSON.stringify(answer.body)}`)
      assert.ok(answer.error, 'the client sees a connection error')
      const cut = Date.now()
      const again = await get(`${lab.url}/metrics?format=json`)
      const backMs = Date.now() - cut
      assert.equal(again.status, 200)
      assert.ok(backMs < 2000, `answered ${backMs} ms after the connection was cut`)

      await waitUntil(function restarted () { return lab.pid !== firstWorker }, 5000, 'the restart line')
      assert.equal(processAlive(firstWorker), false, 'the old worker is gone')
      assert.match(lab.output(), new RegExp(`worker ${firstWorker} killed: RSS \\d+\\.\\d MiB passed the 256 MiB budget ` +
        'while POST /bad was in flight; restarted in \\d+ ms \\(worker pid \\d+\\)'))

      // the dashboard's EventSource: dropped with the worker, back with the last id it saw
      await watcher.ended
      const reconnected = await openEventStream(`${lab.url}/metrics?interval=1000`, { lastEventId: watcher.lastId() })
      const crash = await reconnected.waitFor(function isCrash (e) { return e.event === 'crash' })
      reconnected.close()
      assert.equal(crash.data.reason, 'memory-limit')
      assert.equal(crash.data.route, 'bad')
      assert.equal(crash.data.pid, firstWorker)
      assert.equal(crash.data.budget, 256 * MiB)
      assert.ok(crash.data.rss > 256 * MiB, `rss ${crash.data.rss}`)
      assert.equal(crash.data.signal, 'SIGKILL')
      assert.ok(crash.data.restartMs >= 0 && crash.data.restartMs < 2000, `restartMs ${crash.data.restartMs}`)
      assert.deepEqual(crash.data.inFlight, { bad: 1 })

      const good = await fetch(`${lab.url}/good`, { method: 'POST', headers: { 'content-type': 'application/gzip' }, body: SMALL_BODY })
      const body = await good.json()
      assert.equal(good.status, 200, JSON.stringify(body))
      assert.equal(body.summary.items, 1)
      assert.equal(body.summary.idSum, '7')
    })

    it('records an experiment run lost with the worker as failed (worker.crashed), under its id', async function () {
      const start = await fetch(`${lab.url}/experiments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'zip-bomb', params: { variant: 'ratio', route: 'bad', bytes: '2GB' } })
      })
      const started = await start.json()
      assert.equal(start.status, 202, JSON.stringify(started))
      const worker = lab.pid
      await waitUntil(function restarted () { return lab.pid !== worker }, 20000, 'the worker to be killed and restarted')
      const { status, body } = await get(`${lab.url}/experiments/${started.id}`)
      assert.equal(status, 200)
      assert.equal(body.status, 'failed')
      assert.equal(body.error.type, 'worker.crashed')
      assert.equal(body.error.reason, 'memory-limit')
      assert.equal(body.name, 'zip-bomb')
    })

    it('stops the worker and itself on SIGTERM', async function () {
      const worker = lab.pid
      await lab.stop()
      const { code } = await lab.exited
      assert.equal(code, 0)
      assert.equal(processAlive(worker), false)
      lab = null
    })
  })

  it('gives up after more crashes than --max-restarts within --restart-window, and exits 1', async function () {
    const lab = await startLabProcess([...BUDGET, '--max-restarts', '2', '--restart-window', '60s'])
    try {
      for (let crash = 1; crash <= 3; crash++) {
        const answer = await sendBomb(`${lab.url}/bad`)
        assert.equal(answer.status, 0, `crash ${crash}`)
        if (crash < 3) assert.equal((await get(`${lab.url}/metrics?format=json`)).status, 200)
      }
      const { code } = await lab.exited
      assert.equal(code, 1)
      assert.match(lab.output(), /the worker crashed 3 times within 60 s \(memory-limit, memory-limit, memory-limit\); more than --max-restarts 2 allows: giving up/)
      await assert.rejects(get(`${lab.url}/metrics?format=json`), /ECONNREFUSED/, 'the port is closed')
    } finally {
      await lab.stop()
    }
  })

  it('falls back to the worker\'s own reports of its RSS over IPC where there is no /proc', async function () {
    const supervisor = createSupervisor({ port: 0, memoryLimit: 256 * MiB, app: { unsafeBad: true }, rssSource: 'ipc' })
    const output = []
    try {
      const { port, pid } = await supervisor.start()
      supervisor.on('restarted', function keep (crash) { output.push(crash) })
      const answer = await sendBomb(`http://127.0.0.1:${port}/bad`)
      assert.equal(answer.status, 0)
      await waitUntil(function restarted () { return output.length === 1 }, 5000, 'the restart')
      assert.equal(output[0].reason, 'memory-limit')
      assert.equal(output[0].pid, pid)
      assert.ok(output[0].rss > 256 * MiB)
      assert.equal((await get(`http://127.0.0.1:${port}/metrics?format=json`)).status, 200)
    } finally {
      await supervisor.stop()
    }
  })

  it('refuses --unsafe-bad without a memory budget (exit 2)', async function () {
    for (const flags of [['--unsafe-bad', '--memory-limit=0'], ['--unsafe-bad', '--no-memory-limit']]) {
      await assert.rejects(run(process.execPath, [SERVER, '--port', '0', ...flags]), function check (err) {
        assert.equal(err.code, 2, flags.join(' '))
        assert.match(err.stderr, /--unsafe-bad needs a memory budget/)
        return true
      })
    }
  })

  it('refuses a database URL that is not postgres:// as a usage error naming its source (exit 2), before any worker starts', async function () {
    const cases = [
      [['--database-url', 'foo'], {}, /--database-url must be a postgres:\/\/ or postgresql:\/\/ URL, got "foo"/],
      [[], { DATABASE_URL: 'mysql://lab:secret@db/lab' }, /DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL, got "mysql:\/\/lab:\*\*\*@db\/lab"/]
    ]
    for (const [flags, env, message] of cases) {
      await assert.rejects(run(process.execPath, [SERVER, '--port', '0', ...flags], { env: { ...process.env, ...env } }), function check (err) {
        assert.equal(err.code, 2, err.stderr)
        assert.match(err.stderr, message)
        assert.match(err.stderr, /^Usage: node server\.js/m)
        assert.doesNotMatch(err.stderr, /secret/, 'no password shown')
        assert.doesNotMatch(err.stderr, /\n\s+at /, 'no stack trace')
        return true
      })
    }
  })

  it('refuses a budget an idle worker would not fit in, or that is not a size (exit 2)', async function () {
    for (const limit of ['10MiB', 'lots']) {
      await assert.rejects(run(process.execPath, [SERVER, '--port', '0', `--memory-limit=${limit}`]), function check (err) {
        assert.equal(err.code, 2, limit)
        return true
      })
    }
  })
})
