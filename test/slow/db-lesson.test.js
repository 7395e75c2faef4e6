/**
 * docs/lessons/db-export.md's two answers held to what the lab does when the exercises run as
 * written, on the embedded database: a stream nobody reads holds about one highWaterMark of rows
 * and ends "client closed" when its client goes; a second request meanwhile waits the default
 * connectTimeoutMs for the one connection, then gets 503 database.busy. The answers' numbers are the
 * exercises' parameters and the lab's defaults, so no figures file holds them: this spec does. The
 * other lessons' answers are test/lesson-answers.test.js's.
 */
import assert from 'node:assert/strict'
import net from 'node:net'
import { once } from 'node:events'
import { setTimeout as delay } from 'node:timers/promises'
import { DATABASE_DEFAULTS } from '../../lib/db/options.js'
import { getJson, settled, statusWhen } from '../db-helpers.js'
import { startLab } from '../helpers.js'
import { readPage } from '../markdown.js'

const LESSON = 'docs/lessons/db-export.md'
/** Rows enough that the kernel's socket buffers fill long before the stream ends. */
const SEED = Object.freeze({ desks: 500, items: 50_000 })

function answersOf (text) {
  return [...text.matchAll(/<details><summary>Answer<\/summary>\n([\s\S]*?)<\/details>/g)].map(function body (m) { return m[1].trim() })
}

describe('docs/lessons/db-export.md, its exercises run as written', function () {
  this.timeout(120_000)
  const lesson = readPage(LESSON)
  const answers = answersOf(lesson)
  let lab
  let socket = null

  before(async function () {
    lab = await startLab({ database: { pgliteDir: 'memory://', seed: SEED } })
    assert.equal((await getJson(`${lab.url}/db/batch?limit=1`)).status, 200)
  })

  after(async function () {
    socket?.destroy()
    await lab?.close()
  })

  /** The exercise's slow reader, slower still: a stream whose answer nobody reads. */
  async function stalledStream (query) {
    socket = net.connect(lab.port, '127.0.0.1')
    await once(socket, 'connect')
    socket.write(`GET /db/stream?${query} HTTP/1.1\r\nHost: 127.0.0.1:${lab.port}\r\nConnection: close\r\n\r\n`)
    socket.pause()
    for (let k = 0; k < 100; k++) {
      await delay(100)
      const [a] = (await getJson(`${lab.url}/db/status`)).body.exports.active
      await delay(200)
      const [b] = (await getJson(`${lab.url}/db/status`)).body.exports.active
      if (a && b && a.id === b.id && a.rows === b.rows && a.rows > 0) return b
    }
    throw new Error('the export never stalled')
  }

  it('exercise 1: about one highWaterMark of rows held however slow the reader, and "client closed" when it goes', async function () {
    const query = /db\/stream\?([^']+)'/.exec(lesson.split('**1. A slow reader.**')[1])[1]
    const highWaterMark = Number(new URLSearchParams(query).get('highWaterMark'))
    assert.ok(answers[0].startsWith(`At most about one \`highWaterMark\` of rows (here ${highWaterMark}), however slowly`), answers[0])
    const stalled = await stalledStream(query)
    assert.ok(stalled.maxBufferedRows <= 2 * highWaterMark + 16, `${stalled.maxBufferedRows} rows held`)
    socket.destroy()
    const ended = (await statusWhen(lab.url, settled)).exports.recent.find(function byId (e) { return e.id === stalled.id })
    assert.equal(ended.outcome, 'client closed')
    assert.ok(answers[0].includes('`"outcome":"client closed"`'), answers[0])
  })

  it('exercise 2: a second request waits connectTimeoutMs, then 503 database.busy with poolMax 1', async function () {
    const exercise = lesson.split('**2. One connection.**')[1]
    const stalled = await stalledStream(/db\/stream\?([^']+)'/.exec(exercise)[1])
    const started = performance.now()
    const res = await getJson(`${lab.url}/${/localhost:3000\/(db\/batch\?[^']+)'/.exec(exercise)[1]}`)
    const waited = performance.now() - started
    assert.equal(res.status, 503)
    assert.equal(res.body.error.type, 'database.busy')
    assert.equal(res.body.error.poolMax, 1)
    assert.ok(waited >= DATABASE_DEFAULTS.connectTimeoutMs - 100, `answered after ${Math.round(waited)} ms`)
    const seconds = DATABASE_DEFAULTS.connectTimeoutMs / 1000
    assert.ok(answers[1].startsWith(`It waits up to ${seconds} s (\`database.connectTimeoutMs\`)`), answers[1])
    assert.ok(answers[1].includes('`database.busy`](../errors.md#database-busy) with `"poolMax":1`'), answers[1])
    assert.ok(stalled.rows > 0)
  })
})
