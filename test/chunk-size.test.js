/**
 * GET /files/chunk: every read size and mode serves the file byte for
 * byte (string mode included, with characters cut across reads), and bad
 * parameters get a JSON 400. The experiment and the bench, run at small
 * scale, are test/slow/chunk-size-experiment.test.js's.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { CHUNK_FILE_BYTES, HWM_STEPS, ensureChunkFile } from '../experiments/chunk-size/server.js'
import { labInTempDir } from './helpers.js'

describe('GET /files/chunk', function () {
  const lab = labInTempDir('chunk')
  let expected

  before(async function readTheFile () {
    // the file the lab serves, as the experiment makes it in the lab's data folder
    expected = await fs.promises.readFile((await ensureChunkFile(lab.dataDir)).path)
  })

  it('serves a file of whole UTF-8 characters, some cut in two by every read size', function () {
    assert.equal(expected.length, CHUNK_FILE_BYTES)
    const text = new TextDecoder('utf-8', { fatal: true }).decode(expected)
    assert.match(text, /数据流/)
    assert.match(text, /🚀/)
    for (const hwm of HWM_STEPS.slice(0, -1)) {
      // a byte at a read boundary that continues a multi-byte character
      const cut = Array.from({ length: CHUNK_FILE_BYTES / hwm - 1 }, function boundary (_, k) { return (k + 1) * hwm })
        .some(function splitsCharacter (at) { return (expected[at] & 0xc0) === 0x80 })
      assert.ok(cut, `${hwm}-byte reads cut a character`)
    }
  })

  for (const mode of ['buffer', 'string']) {
    for (const hwm of HWM_STEPS) {
      it(`serves the file byte for byte with hwm=${hwm}&mode=${mode}`, async function () {
        const res = await fetch(`${lab.url}/files/chunk?hwm=${hwm}&mode=${mode}`)
        assert.equal(res.status, 200)
        assert.equal(res.headers.get('content-length'), String(CHUNK_FILE_BYTES))
        const body = Buffer.from(await res.arrayBuffer())
        assert.ok(body.equals(expected), 'the bytes served are the file')
      })
    }
  }

  it('makes the file once, in <lab.dataDir>/chunk-size/', function () {
    const files = fs.readdirSync(path.join(lab.dataDir, 'chunk-size'))
    assert.deepEqual(files, [`text-${CHUNK_FILE_BYTES}B.txt`])
  })

  it('defaults to 64 KiB Buffer reads', async function () {
    const res = await fetch(`${lab.url}/files/chunk`)
    assert.equal(res.status, 200)
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(expected))
  })

  it('answers HEAD with the headers of its GET, Cache-Control: no-store included, and no body', async function () {
    const get = await fetch(`${lab.url}/files/chunk?hwm=4096&mode=string`)
    await get.arrayBuffer()
    const head = await fetch(`${lab.url}/files/chunk?hwm=4096&mode=string`, { method: 'HEAD' })
    assert.equal(head.status, 200)
    for (const name of ['content-type', 'content-length', 'cache-control']) {
      assert.equal(head.headers.get(name), get.headers.get(name), name)
    }
    assert.equal(head.headers.get('cache-control'), 'no-store')
    assert.equal((await head.arrayBuffer()).byteLength, 0)
  })

  const invalid = [
    ['hwm=12', 'hwm'],
    ['hwm=abc', 'hwm'],
    ['hwm=-1024', 'hwm'],
    ['hwm=99999999', 'hwm'],
    ['hwm=1024&hwm=4096', 'hwm'],
    ['mode=utf16', 'mode'],
    ['mode=', 'mode']
  ]
  for (const [query, parameter] of invalid) {
    it(`answers 400 parameter.invalid naming ${parameter} for ?${query}`, async function () {
      const res = await fetch(`${lab.url}/files/chunk?${query}`)
      assert.equal(res.status, 400)
      const { error } = await res.json()
      assert.equal(error.type, 'parameter.invalid')
      assert.equal(error.parameter, parameter)
    })
  }
})
