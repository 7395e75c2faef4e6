/**
 * /good's defence against bodies built to hurt: it refuses the moment a
 * limit is crossed, stops inflating, and its memory hardly moves.
 */
import assert from 'node:assert/strict'
import net from 'node:net'
import zlib from 'node:zlib'
import { startLab, post } from '../helpers.js'
import { readPeakRss, resetPeakRss } from '../../lib/metrics/peak.js'

const MiB = 1024 * 1024

function gzipped (parts, level = 9) {
  return zlib.gzipSync(Buffer.concat(parts.map(function asBuffer (p) { return Buffer.isBuffer(p) ? p : Buffer.from(p) })), { level })
}

/**
 * POST to /good, timing it and reading this process's peak growth. The lab
 * runs in this process, so the CPU time the process spent meanwhile (parse
 * threads and zlib's included) is what refusing cost it; unlike the wall
 * time it does not grow when other processes take the cores.
 */
async function refused (url, body, headers) {
  const canReset = resetPeakRss()
  const before = process.memoryUsage.rss()
  const started = performance.now()
  const cpuBefore = process.cpuUsage()
  const res = await post(`${url}/good`, body, headers)
  const cpu = process.cpuUsage(cpuBefore)
  const ms = performance.now() - started
  const growth = canReset ? readPeakRss().bytes - before : null
  return { ...res, ms, cpuMs: (cpu.user + cpu.system) / 1000, growth }
}

describe('POST /good against zip bombs', function () {
  this.timeout(30000)
  let lab
  before(async function () { lab = await startLab() })
  after(async function () { await lab.close() })

  const bombs = [
    {
      name: 'a run of spaces (ratio)',
      body: function spaces () { return gzipped(['{"items":[', Buffer.alloc(64 * MiB, 0x20), ']}']) },
      status: 413,
      type: 'ratio.too.large'
    },
    {
      name: 'one gigantic string (string)',
      body: function bigString () { return gzipped(['{"items":[{"id":1,"s":"', Buffer.alloc(100 * MiB, 0x61), '"}]}'], 1) },
      status: 413,
      type: 'record.too.large'
    },
    {
      name: 'deeply nested arrays (depth)',
      body: function deep () { return gzipped(['{"items":[', '['.repeat(1_000_000), ']'.repeat(1_000_000), ']}']) },
      status: 422,
      type: 'json.too.deep'
    },
    {
      name: 'many concatenated gzip members (members)',
      body: function members () {
        const member = zlib.gzipSync(Buffer.alloc(4 * MiB, 0x20), { level: 9 })
        return Buffer.concat([zlib.gzipSync('{"items":['), ...Array(100).fill(member), zlib.gzipSync(']}')])
      },
      status: 413,
      type: 'ratio.too.large'
    },
    {
      name: 'one gigantic NDJSON line',
      body: function longLine () { return gzipped(['{"id":1}\n{"s":"', Buffer.alloc(100 * MiB, 0x61), '"}\n'], 1) },
      headers: { 'content-type': 'application/x-ndjson', 'content-encoding': 'gzip' },
      status: 413,
      type: 'record.too.large'
    }
  ]

  for (const bomb of bombs) {
    it(`refuses ${bomb.name} with ${bomb.status} ${bomb.type} within 2 s of CPU and under 48 MiB`, async function () {
      const body = bomb.body()
      const res = await refused(lab.url, body, bomb.headers)
      assert.equal(res.status, bomb.status, res.text)
      assert.equal(res.body.error.type, bomb.type)
      assert.ok(res.body.error.limit > 0, 'names the limit')
      // 2 s of CPU: it stopped early; the wall clock only has to tell a refusal from a hang (a busy
      // machine took 4 s of it for the members bomb, whose refusal costs a few hundred ms of CPU)
      assert.ok(res.cpuMs < 2000, `took ${Math.round(res.cpuMs)} ms of CPU (${Math.round(res.ms)} ms on the clock)`)
      assert.ok(res.ms < 20000, `took ${Math.round(res.ms)} ms on the clock`)
      if (res.growth !== null) assert.ok(res.growth < 48 * MiB, `peak grew ${(res.growth / MiB).toFixed(1)} MiB`)
    })
  }

  it('refuses the same bomb alike as a gzip body and as JSON with Content-Encoding: gzip', async function () {
    const body = gzipped(['{"items":[', Buffer.alloc(100 * MiB, 0x20), ']}'])
    const raw = await post(`${lab.url}/good`, body)
    const encoded = await post(`${lab.url}/good`, body, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
    assert.equal(raw.status, 413)
    assert.equal(encoded.status, raw.status)
    assert.equal(encoded.body.error.type, raw.body.error.type)
  })

  it('refuses gzip inside gzip inside gzip past the layer limit, before inflating anything', async function () {
    const body = zlib.gzipSync(zlib.gzipSync(zlib.gzipSync(zlib.gzipSync('{"items":[]}'))))
    const res = await post(`${lab.url}/good`, body, { 'content-type': 'application/gzip', 'content-encoding': 'gzip, gzip, gzip' })
    assert.equal(res.status, 413)
    assert.equal(res.body.error.type, 'encoding.too.many')
    assert.equal(res.body.error.received, 4)
  })

  it('inflates a chained body within the layer limit, as /bad does', async function () {
    const body = zlib.gzipSync(zlib.gzipSync(zlib.gzipSync('{"items":[1,2]}')))
    for (const route of ['bad', 'good']) {
      const res = await post(`${lab.url}/${route}`, body, { 'content-type': 'application/gzip', 'content-encoding': 'gzip, gzip' })
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.summary.items, 2)
    }
  })

  it('accepts small bodies that compress far better than the ratio limit', async function () {
    const body = gzipped(['{"items":[', Buffer.alloc(4 * MiB, 0x20), '1]}'])
    assert.ok(4 * MiB / body.length > 200, 'the fixture compresses past the ratio')
    const res = await post(`${lab.url}/good`, body)
    assert.equal(res.status, 200, res.text)
    assert.equal(res.body.summary.items, 1)
  })

  it('keeps a run of whitespace between records out of the batches', async function () {
    const body = gzipped(['[1,', Buffer.alloc(3 * MiB, 0x20), '2,', Buffer.alloc(3 * MiB, 0x0a), '3]'])
    const bad = await post(`${lab.url}/bad`, body)
    const good = await post(`${lab.url}/good`, body)
    assert.equal(good.status, 200, good.text)
    assert.deepEqual(good.body.summary, bad.body.summary)
    assert.equal(good.body.summary.items, 3)
  })

  it('serves a normal body after all of that', async function () {
    const res = await post(`${lab.url}/good`, zlib.gzipSync('{"items":[{"id":7}]}'))
    assert.equal(res.status, 200)
    assert.equal(res.body.summary.idSum, '7')
  })
})

/**
 * A raw HTTP/1.1 upload of `total` bytes in `chunk`-byte writes, `gapMs` apart, as a client that
 * keeps sending after its answer (curl reads the answer only at the end) would. Node's own client is
 * no use here: it drops its connection as soon as a refusal arrives. Resolves when the socket closes:
 * how much went out, the answer's status and body, and whether the server cut the connection.
 */
function uploadRaw (port, { total, chunk, gapMs, chunked = false }) {
  return new Promise(function upload (resolve) {
    const outcome = { sent: 0, head: '', body: '', status: null, cut: false }
    let text = ''
    const socket = net.connect(port, '127.0.0.1')
    socket.setEncoding('latin1')
    socket.on('data', function onAnswer (part) {
      text += part
      const end = text.indexOf('\r\n\r\n')
      if (end !== -1) {
        outcome.head = text.slice(0, end)
        outcome.status = Number(outcome.head.split(' ')[1])
        outcome.body = text.slice(end + 4)
      }
    })
    socket.on('error', function cutByServer () { outcome.cut = true })
    socket.on('close', function closed () { resolve(outcome) })
    const length = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${total}`
    socket.write(`POST /good HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/gzip\r\n${length}\r\n\r\n`)
    const piece = Buffer.alloc(chunk, 0x1f)
    async function sendAll () {
      while (outcome.sent < total && !socket.destroyed) {
        if (chunked) socket.write(`${chunk.toString(16)}\r\n`)
        const flushed = socket.write(piece)
        if (chunked) socket.write('\r\n')
        outcome.sent += chunk
        if (!flushed && !socket.destroyed) await drainedOrClosed(socket)
        if (gapMs > 0) await new Promise(function wait (done) { setTimeout(done, gapMs) })
      }
      if (!socket.destroyed) {
        if (chunked) socket.write('0\r\n\r\n')
        // the whole body is out: let the answer arrive, then hang up
        await new Promise(function wait (done) { setTimeout(done, 200) })
        socket.end()
      }
    }
    sendAll()
  })
}

function drainedOrClosed (socket) {
  return new Promise(function wait (resolve) {
    function done () {
      socket.removeListener('drain', done)
      socket.removeListener('close', done)
      resolve()
    }
    socket.on('drain', done)
    socket.on('close', done)
  })
}

describe('after refusing a body, the lab reads and drops the rest', function () {
  this.timeout(30000)
  let lab
  before(async function () { lab = await startLab({ limits: { compressed: MiB } }) })
  after(async function () { await lab.close() })

  for (const [how, chunked] of [['a Content-Length over the limit (refused before a byte is read)', false], ['a chunked body that is not gzip (refused at its first bytes)', true]]) {
    it(`so that a client sending ${how} for four seconds finishes, reads its answer and keeps its connection`, async function () {
      // 16 MiB over about 4 s: inside the 64 MiB and 10 s the lab drains, with no pause as long as 2 s
      const outcome = await uploadRaw(lab.port, { total: 16 * MiB, chunk: MiB, gapMs: 250, chunked })
      assert.equal(outcome.cut, false, `the upload was cut after ${outcome.sent} bytes`)
      assert.equal(outcome.sent, 16 * MiB)
      assert.equal(outcome.status, chunked ? 400 : 413)
      assert.equal(JSON.parse(outcome.body).error.type, chunked ? 'gzip.invalid' : 'entity.too.large')
      assert.match(outcome.head, /\r\nConnection: keep-alive/i)
    })
  }

  for (const [how, chunked] of [['with a Content-Length', false], ['chunked', true]]) {
    it(`but not past 64 MiB: a client that keeps sending ${how} loses its connection`, async function () {
      const outcome = await uploadRaw(lab.port, { total: 512 * MiB, chunk: 256 * 1024, gapMs: 0, chunked })
      assert.equal(outcome.status, chunked ? 400 : 413)
      assert.ok(outcome.sent < 96 * MiB, `${outcome.sent} bytes went out: about 64 MiB plus what the sockets buffer`)
    })
  }
})
