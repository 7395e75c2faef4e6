/**
 * Shared test fixtures: a real server on port 0, requests and generated
 * bodies, and the two ingest paths run synchronously over a byte buffer so
 * that chunk and batch boundaries can be placed anywhere.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { Writable } from 'node:stream'
import { buffer } from 'node:stream/consumers'
import { pipeline } from 'node:stream/promises'
import { createApp } from '../app.js'
import { createGzipStream, createJsonStream } from '../lib/generate/items.js'
import { createLabServer } from '../lib/http/server.js'
import { LabError } from '../lib/errors/index.js'
import { RecordScanner, LineBatcher } from '../lib/json/records.js'
import { parseBatch } from '../lib/parse/parse-batch.js'
import {
  createTally, mergeTally, finishTally, tallyRecords, tallyNdjson, locateJsonError
} from '../lib/parse/tally.js'

const MIB = 1024 * 1024

/**
 * Build the app with options and listen on 127.0.0.1, port 0. `close()`
 * also stops the embedded database, if a test made the lab start one.
 * @returns {Promise<{ url: string, server: http.Server, close: () => Promise<void> }>}
 */
export function startLab (options, serverOptions) {
  const app = createApp(options)
  return new Promise(function listening (resolve, reject) {
    const server = createLabServer(app, serverOptions)
    server.once('error', reject)
    server.listen(0, '127.0.0.1', function ready () {
      const { port } = server.address()
      resolve({
        url: `http://127.0.0.1:${port}`,
        port,
        app,
        server,
        close: async function closeLab () {
          server.closeAllConnections()
          await new Promise(function closed (done) { server.close(function () { done() }) })
          await app.close()
        }
      })
    })
  })
}

/**
 * A lab in a fresh data directory for the enclosing `describe`: its
 * before() starts the lab, its after() stops it and removes the directory.
 * @param {string} name part of the directory's name, for whoever finds one left over
 * @param {object} [options] app options (`dataDir` is set here)
 * @returns {{ readonly url: string, readonly app: object, readonly dataDir: string }}
 */
export function labInTempDir (name, options = {}) {
  let lab = null
  let dataDir = null
  before(async function startLabInTempDir () {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `streamlab-${name}-`))
    lab = await startLab({ ...options, dataDir })
  })
  after(async function stopLabAndRemoveDir () {
    await lab?.close()
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
  })
  return {
    get url () { return lab.url },
    get port () { return lab.port },
    get app () { return lab.app },
    get dataDir () { return dataDir }
  }
}

/**
 * A lab whose budget leaves this test process about `room` bytes for one
 * request, whatever the process holds when the lab starts (the lab runs in
 * the test's own process here: its RSS is the lab's). Its before() starts the
 * lab in a fresh data directory, its after() stops it and removes the directory.
 * @param {string} name part of the directory's name
 * @param {number} room bytes
 */
export function labWithRoom (name, room) {
  const lab = { url: null, app: null }
  let started = null
  let dataDir = null
  before(async function startLabWithRoom () {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `streamlab-${name}-`))
    const memoryBudget = Math.ceil((process.memoryUsage.rss() + room) / 0.9 / MIB) * MIB
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


/** POST a body and read the JSON answer. */
export async function post (url, body, headers = { 'content-type': 'application/gzip' }) {
  const res = await fetch(url, { method: 'POST', headers, body })
  const text = await res.text()
  let json = null
  try {
    json = JSON.parse(text)
  } catch {
    // not JSON: the test reads `text`
  }
  return { status: res.status, headers: res.headers, body: json, text }
}

/**
 * POST a body written `chunkSize` bytes at a time, waiting between writes,
 * so the server sees tiny reads.
 */
export function postInChunks (url, body, chunkSize, headers = { 'content-type': 'application/gzip' }) {
  return new Promise(function sendChunks (resolve, reject) {
    const req = http.request(url, { method: 'POST', headers: { ...headers, 'content-length': body.length } }, function onResponse (res) {
      const parts = []
      res.on('data', function onData (c) { parts.push(c) })
      res.on('end', function onEnd () {
        resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(parts).toString()) })
      })
    })
    req.on('error', reject)
    let at = 0
    function writeNext () {
      if (at >= body.length) return req.end()
      const piece = body.subarray(at, at + chunkSize)
      at += chunkSize
      req.write(piece)
      setImmediate(writeNext)
    }
    writeNext()
  })
}

/**
 * What /bad decides for inflated bytes: a tally's figures, 'shape', or an error offset.
 */
export function parseBuffered (buf, format) {
  const tally = createTally()
  if (format === 'ndjson') {
    const error = tallyNdjson(buf, tally)
    return error ? { error: error.offset } : { summary: finishTally(tally) }
  }
  let doc
  try {
    doc = JSON.parse(buf.toString('utf8'))
  } catch (err) {
    return { error: locateJsonError(buf, 0, buf.length, err).offset }
  }
  const records = format === 'array'
    ? (Array.isArray(doc) ? doc : null)
    : (doc !== null && typeof doc === 'object' && !Array.isArray(doc) && Array.isArray(doc.items) ? doc.items : null)
  if (records === null) return { shape: true }
  return { summary: finishTally(tallyRecords(tally, records)) }
}

/**
 * What /good decides for the same bytes, fed `chunkSize` bytes at a time
 * with batches of about `batchBytes`, parsed in this thread.
 */
export function parseStreamed (buf, format, chunkSize, batchBytes) {
  const tallies = new Map()
  let first = null
  function note (offset) {
    if (first === null || offset < first) first = offset
  }
  function onBatch (batch) {
    const answer = parseBatch(batch)
    if (answer.error) note(batch.offset + answer.error.offset)
    else if (answer.tally) {
      const known = tallies.get(batch.generation)
      if (known) mergeTally(known, answer.tally)
      else tallies.set(batch.generation, answer.tally)
    }
  }
  const scanner = format === 'ndjson'
    ? new LineBatcher({ batchBytes, onBatch })
    : new RecordScanner(format, { batchBytes, onBatch })
  let end
  try {
    for (let i = 0; i < buf.length; i += chunkSize) scanner.write(buf.subarray(i, i + chunkSize))
    end = scanner.end()
  } catch (err) {
    if (err.type !== 'json.invalid') throw err
    note(err.details.offset)
  }
  if (first !== null) return { error: first }
  if (!end.shapeOk) return { shape: true }
  return { summary: finishTally(tallies.get(end.generation) ?? createTally()) }
}

/**
 * Poll until `check()` is true. The limit is generous: on a busy 2-core
 * machine a state may take seconds to settle, and a spec must not depend on
 * timing luck; it fails only when the state never comes.
 * @param {() => boolean} check a named function (its name is in the error)
 * @param {number} [ms]
 */
export async function waitFor (check, ms = 15000) {
  const until = Date.now() + ms
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${check.name}`)
    await new Promise(function later (resolve) { setTimeout(resolve, 20) })
  }
}

/** POST a body in pieces without Content-Length (chunked), and read the JSON answer. */
export function postChunked (url, pieces) {
  return new Promise(function send (resolve, reject) {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/octet-stream' } }, function onResponse (res) {
      const parts = []
      res.on('data', function keep (c) { parts.push(c) })
      res.on('end', function done () { resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(parts).toString()) }) })
    })
    req.on('error', reject)
    for (const piece of pieces) req.write(piece)
    req.end()
  })
}

/**
 * POST a body in pieces without Content-Length (chunked), a piece per tick, and read the JSON
 * answer: the server reads the pieces as they come, not all in one read.
 */
export function postPieces (url, pieces, headers) {
  return new Promise(function send (resolve, reject) {
    const req = http.request(url, { method: 'POST', headers }, function onResponse (res) {
      const parts = []
      res.on('data', function keep (c) { parts.push(c) })
      res.on('end', function done () { resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(parts).toString()) }) })
    })
    req.on('error', reject)
    let k = 0
    function writeNext () {
      if (k === pieces.length) return req.end()
      req.write(pieces[k++])
      setImmediate(writeNext)
    }
    writeNext()
  })
}

/** All the bytes out of a chain of streams. */
export async function collect (...streams) {
  const parts = []
  await pipeline(...streams, new Writable({
    write: function keep (chunk, encoding, done) { parts.push(chunk); done() }
  }))
  return Buffer.concat(parts)
}

/** A generated document (lib/generate/items.js), gzipped, whole. */
export function generatedGzip (params) {
  const { json, gzip } = createGzipStream(params)
  return collect(json, gzip)
}

/** A whole generated document (lib/generate/items.js), not gzipped, and the stream that made it (for its counters). */
export async function generatedJson (params) {
  const json = createJsonStream(params)
  const bytes = await buffer(json)
  return { json, bytes, text: bytes.toString('utf8') }
}

/** The items of a generated document in any format. */
export function parseItems (text, format) {
  if (format === 'ndjson') {
    return text.split('\n').slice(0, -1).map(function parseLine (line) {
      return JSON.parse(line)
    })
  }
  const document = JSON.parse(text)
  return format === 'json' ? document.items : document
}

/** GET a JSON answer on a new connection (none pooled from a dead worker). */
export function getJson (url) {
  return new Promise(function request (resolve, reject) {
    http.get(url, { agent: false, headers: { accept: 'application/json' } }, function onResponse (res) {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', function keep (chunk) { text += chunk })
      res.on('end', function done () { resolve({ status: res.statusCode, body: JSON.parse(text) }) })
    }).on('error', reject)
  })
}

/** GET a JSON answer until `test(body)` holds, every 50 ms, for at most `timeoutMs`. */
export async function pollJson (url, test, timeoutMs) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const { status, body } = await getJson(url)
    if (status === 200 && test(body)) return body
    if (Date.now() > deadline) throw new Error(`timed out waiting on ${url}: last answer ${status} ${JSON.stringify(body)}`)
    await new Promise(function pause (resolve) { setTimeout(resolve, 50) })
  }
}

/**
 * The summary's figures of a list of records, computed from JSON.parse's
 * values and nothing of the lab's: items, the exact sum of top-level integer
 * ids, how many numbers there are anywhere and the sum of their IEEE-754 bits
 * modulo 2^64. The oracle the lab's tally is held to.
 */
export function referenceTally (records) {
  let idSum = 0n
  let bits = 0n
  let numbers = 0
  const view = new DataView(new ArrayBuffer(8))
  const stack = []
  for (const record of records) {
    if (record !== null && typeof record === 'object' && !Array.isArray(record) && Number.isSafeInteger(record.id)) idSum += BigInt(record.id)
    stack.push(record)
    while (stack.length > 0) {
      const value = stack.pop()
      if (typeof value === 'number') {
        view.setFloat64(0, value, true)
        bits = (bits + view.getBigUint64(0, true)) % (1n << 64n)
        numbers++
      } else if (value !== null && typeof value === 'object') {
        for (const member of Object.values(value)) stack.push(member)
      }
    }
  }
  return { items: records.length, idSum: idSum.toString(), numbers, numbersChecksum: bits.toString(16).padStart(16, '0') }
}

/** What a function that must refuse with a LabError threw, as the client would read it (`error`). */
export function refusal (fn) {
  try {
    fn()
  } catch (err) {
    assert.ok(err instanceof LabError, `a LabError, got ${err}`)
    return err.toJSON().error
  }
  assert.fail('did not throw')
}
