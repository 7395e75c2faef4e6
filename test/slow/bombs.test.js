/**
 * Zip bombs (lib/generate/bombs.js, GET /generate?kind=bomb, the CLI's --bomb):
 * valid gzip that inflates to what it claims, checked by inflating a bounded
 * prefix (never the whole 10 GB) or, on small sizes, everything; the same in
 * deflate, br and (where Node has it) zstd, and /good refusing a 2 GiB br
 * bomb with flat memory, measured from outside on a lab of its own.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Readable, Writable } from 'node:stream'
import { buffer } from 'node:stream/consumers'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import zlib from 'node:zlib'
import {
  BOMB_CODECS, BOMB_LIMITS, BOMB_VARIANTS, bombCodecAvailable, createBomb, maximumBytes, normalizeBombParams, prepareBomb
} from '../../lib/generate/bombs.js'
import { adler32, adler32Combine, adler32Repeat } from '../../lib/generate/adler32-combine.js'
import { crc32Combine } from '../../lib/generate/crc32-combine.js'
import { measureOnFreshServer } from '../../lib/measure/fresh-server.js'
import { startLab } from '../helpers.js'

const run = promisify(execFile)
const CLI = fileURLToPath(new URL('../../generators/cli.js', import.meta.url))
const MiB = 1024 * 1024

/** The bomb's bytes on the wire, all of them (only for small bombs). */
async function compressed (params) {
  const bomb = createBomb(params)
  const chunks = []
  await pipeline(...bomb.streams, new Writable({
    write: function keep (chunk, encoding, callback) {
      chunks.push(chunk)
      callback()
    }
  }))
  return { bomb, bytes: Buffer.concat(chunks) }
}

/** Peel every gzip layer; gunzip checks each member's CRC-32 and length. */
function inflateAll (bytes, layers) {
  let out = bytes
  for (let k = 0; k < layers; k++) out = zlib.gunzipSync(out)
  return out
}

/** Each codec's whole decoder: inflate (zlib format, Adler-32 checked), brotli, zstd where Node has it. */
const DECODERS = Object.freeze({
  gzip: zlib.gunzipSync,
  deflate: zlib.inflateSync,
  br: zlib.brotliDecompressSync,
  zstd: zlib.zstdDecompressSync ?? null
})

/** Peel a bomb's codings, the last applied first. */
function decodeAll (bytes, codings) {
  let out = bytes
  for (const coding of [...codings].reverse()) out = DECODERS[coding](out)
  return out
}

const STOP = new Error('prefix complete')

/**
 * Inflate a bomb (every layer) until `limit` bytes have come out, then stop:
 * the first `limit` inflated bytes and the compressed bytes it took.
 */
async function inflatedPrefix (params, limit) {
  const bomb = createBomb(params)
  const parts = []
  let kept = 0
  let sent = 0
  const sink = new Writable({
    write: function keepPrefix (chunk, encoding, callback) {
      parts.push(chunk.subarray(0, limit - kept))
      kept += Math.min(chunk.length, limit - kept)
      callback(kept >= limit ? STOP : null)
    }
  })
  const gunzips = Array.from({ length: bomb.layers }, function gunzip () { return zlib.createGunzip() })
  bomb.streams[bomb.streams.length - 1].on('data', function countSent (chunk) { sent += chunk.length })
  await assert.rejects(pipeline(...bomb.streams, ...gunzips, sink), function stopped (err) { return err === STOP })
  return { bomb, prefix: Buffer.concat(parts), sent }
}

/** The expected document, for small sizes. */
function expectedDocument ({ variant, bytes, depth }) {
  const head = `{"meta":{"generator":"streamlab","bomb":"${variant}"},"items":[`
  if (variant === 'depth') return head + '['.repeat(depth) + ']'.repeat(depth) + ']}'
  if (variant === 'string') {
    const frame = head + '{"id":1,"s":"' + '"}]}'
    return head + '{"id":1,"s":"' + 'a'.repeat(bytes - frame.length) + '"}]}'
  }
  return head + ' '.repeat(bytes - head.length - 2) + ']}'
}

describe('zip bombs', function () {
  describe('createBomb', function () {
    // 5 MiB + 77: several repeated run blocks and a partial one, so the CRC arithmetic is exercised
    const BYTES = 5 * MiB + 77

    for (const variant of BOMB_VARIANTS) {
      it(`${variant}: valid gzip that inflates to exactly the document it claims`, async function () {
        const params = variant === 'depth' ? { variant, depth: 3 * MiB + 5 } : { variant, bytes: BYTES }
        const { bomb, bytes } = await compressed(params)
        const inflated = inflateAll(bytes, bomb.layers)
        assert.equal(inflated.length, bomb.inflatedBytes)
        assert.ok(inflated.equals(Buffer.from(expectedDocument(bomb.params))), 'the inflated bytes are the document')
        if (bomb.compressedBytes !== null) assert.equal(bytes.length, bomb.compressedBytes)
        if (variant !== 'depth') {
          const doc = JSON.parse(inflated.toString('utf8'))
          assert.equal(doc.meta.bomb, variant)
          assert.ok(Array.isArray(doc.items))
        }
      })
    }

    it('makes the same bytes from the same parameters', async function () {
      for (const variant of BOMB_VARIANTS) {
        const a = await compressed({ variant, bytes: 2 * MiB })
        const b = await compressed({ variant, bytes: 2 * MiB })
        assert.ok(a.bytes.equals(b.bytes), variant)
      }
    })

    it('ratio: 10 GB by default, over 1000:1, and the trailer says so (inflating only 8 MiB of it)', async function () {
      const { bomb, prefix, sent } = await inflatedPrefix({ variant: 'ratio' }, 8 * MiB)
      assert.equal(bomb.inflatedBytes, 10_000_000_000)
      assert.ok(bomb.inflatedBytes / bomb.compressedBytes >= 500, `ratio ${bomb.inflatedBytes / bomb.compressedBytes}`)
      assert.ok(sent < 256 * 1024, `${sent} compressed bytes were made for 8 MiB`)
      const head = '{"meta":{"generator":"streamlab","bomb":"ratio"},"items":['
      assert.equal(prefix.subarray(0, head.length).toString(), head)
      assert.ok(prefix.subarray(head.length).every(function isSpace (byte) { return byte === 0x20 }))

      const whole = await buffer(createBomb({}).streams[0])
      assert.equal(whole.length, bomb.compressedBytes)
      assert.equal(whole.readUInt32LE(whole.length - 4), 10_000_000_000 % 2 ** 32, 'ISIZE is the length modulo 2^32')
    })

    it('ratio: 200 MB inflate whole, CRC and length checked by zlib, at ~1000:1', async function () {
      const bomb = createBomb({ variant: 'ratio', bytes: '200MB' })
      let inflated = 0
      await pipeline(...bomb.streams, zlib.createGunzip(), new Writable({
        write: function count (chunk, encoding, callback) {
          inflated += chunk.length
          callback()
        }
      }))
      assert.equal(inflated, 200_000_000)
      assert.ok(200_000_000 / bomb.compressedBytes > 900)
    })

    it('members: many gzip members, each with its own CRC and length, together one document', async function () {
      const { bomb, bytes } = await compressed({ variant: 'members', bytes: 3_000_000, members: 7 })
      assert.equal(bomb.members, 7)
      const members = []
      let at = 0
      while (at < bytes.length) {
        assert.equal(bytes.readUInt16BE(at), 0x1F8B, `member ${members.length} starts with the gzip magic`)
        const { buffer: out, engine } = zlib.inflateRawSync(bytes.subarray(at + 10), { info: true })
        const end = at + 10 + engine.bytesWritten
        assert.equal(bytes.readUInt32LE(end), zlib.crc32(out), 'CRC-32')
        assert.equal(bytes.readUInt32LE(end + 4), out.length, 'ISIZE')
        members.push(out)
        at = end + 8
      }
      assert.equal(members.length, 7)
      assert.equal(Buffer.concat(members).toString(), expectedDocument(bomb.params))
    })

    it('depth: a million [ then a million ] by default, in a couple of kilobytes', async function () {
      const { bomb, prefix } = await inflatedPrefix({ variant: 'depth' }, 1_000_100)
      assert.equal(bomb.params.depth, 1_000_000)
      assert.ok(bomb.compressedBytes < 4096, `${bomb.compressedBytes} B`)
      const head = '{"meta":{"generator":"streamlab","bomb":"depth"},"items":['
      assert.equal(prefix.subarray(0, head.length).toString(), head)
      assert.equal(prefix.subarray(head.length, head.length + 1_000_000).toString(), '['.repeat(1_000_000))
      assert.equal(prefix[head.length + 1_000_000], 0x5D)
    })

    it('string: one record whose one string is the whole bomb', async function () {
      const { bomb, prefix } = await inflatedPrefix({ variant: 'string' }, 4 * MiB)
      const head = '{"meta":{"generator":"streamlab","bomb":"string"},"items":[{"id":1,"s":"'
      assert.equal(prefix.subarray(0, head.length).toString(), head)
      assert.ok(prefix.subarray(head.length).every(function isA (byte) { return byte === 0x61 }))
      assert.ok(bomb.inflatedBytes / bomb.compressedBytes >= 500)
    })

    it('chained: gzip inside gzip inside gzip, sent as application/gzip with Content-Encoding: gzip, gzip', async function () {
      const { bomb, prefix, sent } = await inflatedPrefix({ variant: 'chained' }, 4 * MiB)
      assert.equal(bomb.layers, 3)
      assert.deepEqual({ ...bomb.uploadHeaders }, { 'content-type': 'application/gzip', 'content-encoding': 'gzip, gzip' })
      assert.equal(bomb.compressedBytes, null, 'known only once made')
      assert.ok(prefix.toString().startsWith('{"meta":{"generator":"streamlab","bomb":"chained"},"items":[   '))
      assert.ok(sent < 4096, `${sent} B of three layers carried 4 MiB`)
      const { bytes } = await compressed({ variant: 'chained', bytes: MiB, layers: 2 })
      assert.equal(zlib.gunzipSync(bytes).readUInt16BE(0), 0x1F8B, 'inside the outer gzip is another gzip')
    })

    it('combines CRC-32s as zlib computes them over the concatenation', function () {
      const a = Buffer.from('{"items":[')
      const b = Buffer.alloc(100_000, 0x20)
      assert.equal(crc32Combine(zlib.crc32(a), zlib.crc32(b), b.length), zlib.crc32(Buffer.concat([a, b])))
      assert.equal(crc32Combine(0, zlib.crc32(b), b.length), zlib.crc32(b), 'an empty prefix')
    })

    it('keeps its memory small while 10 GB bombs stream out', async function () {
      const before = process.memoryUsage.rss()
      let highest = before
      for (const variant of ['ratio', 'members', 'string', 'chained']) {
        const bomb = createBomb({ variant })
        await pipeline(...bomb.streams, new Writable({
          write: function drain (chunk, encoding, callback) {
            highest = Math.max(highest, process.memoryUsage.rss())
            callback()
          }
        }))
      }
      assert.ok(highest - before < 64 * MiB, `RSS rose ${((highest - before) / MiB).toFixed(1)} MiB`)
    })

    it('depth: takes bytes up to those of its deepest nesting, 10,000,000,000 levels', function () {
      const deepest = normalizeBombParams({ variant: 'depth', bytes: String(maximumBytes('depth')) })
      assert.equal(deepest.depth, BOMB_LIMITS.maxDepth)
      assert.equal(deepest.bytes, maximumBytes('depth'))
      assert.equal(normalizeBombParams({ variant: 'depth', depth: String(BOMB_LIMITS.maxDepth) }).bytes, maximumBytes('depth'))
      assert.equal(maximumBytes('ratio'), BOMB_LIMITS.maxBytes)
    })

    it('refuses parameters that do not fit the variant with parameter.invalid', function () {
      const cases = [
        [{ variant: 'nope' }, 'variant'],
        [{ variant: 'ratio', bytes: 'lots' }, 'bytes'],
        [{ variant: 'ratio', bytes: '10' }, 'bytes'],
        [{ variant: 'ratio', bytes: '2TB' }, 'bytes'],
        [{ variant: 'ratio', depth: '5' }, 'depth'],
        [{ variant: 'ratio', size: '5' }, 'size'],
        [{ variant: 'depth', depth: '0' }, 'depth'],
        [{ variant: 'depth', depth: '5', bytes: '1MB' }, 'bytes'],
        [{ variant: 'depth', depth: '10000000001' }, 'depth'],
        [{ variant: 'depth', bytes: '20000000061' }, 'bytes'],
        [{ variant: 'depth', bytes: '1000GB' }, 'bytes'],
        [{ variant: 'members', members: '1' }, 'members'],
        [{ variant: 'chained', layers: '1' }, 'layers'],
        [{ variant: 'chained', layers: '17' }, 'layers']
      ]
      for (const [query, parameter] of cases) {
        assert.throws(function () { normalizeBombParams(query) }, function check (err) {
          assert.equal(err.status, 400, JSON.stringify(query))
          assert.equal(err.type, 'parameter.invalid')
          assert.equal(err.details.parameter, parameter, JSON.stringify(query))
          return true
        })
      }
    })
  })

  describe('in every codec', function () {
    const BYTES = 3 * MiB + 77
    const made = BOMB_CODECS.filter(bombCodecAvailable)

    for (const codec of made) {
      for (const variant of BOMB_VARIANTS.filter(function carried (v) { return v !== 'members' })) {
        it(`${codec} ${variant}: decodes to exactly the valid JSON document of the size asked`, async function () {
          const params = variant === 'depth' ? { variant, codec, depth: MiB + 5 } : { variant, codec, bytes: BYTES }
          const bomb = createBomb(params, { cacheDir: null })
          const chunks = []
          await pipeline(...bomb.streams, new Writable({ write: function keep (chunk, encoding, callback) { chunks.push(chunk); callback() } }))
          const wire = Buffer.concat(chunks)
          assert.deepEqual(bomb.codings, new Array(bomb.layers).fill(codec))
          const inflated = decodeAll(wire, bomb.codings)
          assert.equal(inflated.length, bomb.inflatedBytes)
          assert.ok(inflated.equals(Buffer.from(expectedDocument(bomb.params))), 'the inflated bytes are the document')
          if (variant !== 'depth') assert.equal(JSON.parse(inflated.toString('utf8')).meta.bomb, variant)
          if (bomb.compressedBytes !== null) assert.equal(wire.length, bomb.compressedBytes)
          if (codec !== 'gzip') {
            assert.deepEqual({ ...bomb.uploadHeaders }, { 'content-type': 'application/json', 'content-encoding': bomb.codings.join(', ') })
          }
        })
      }
    }

    it('deflate: the zlib format from gzip\'s repeated blocks, its Adler-32 combined as zlib computes it', async function () {
      const a = Buffer.from('{"items":[')
      const b = Buffer.alloc(100_003, 0x20)
      assert.equal(adler32Combine(adler32(a), adler32(b), b.length), adler32(Buffer.concat([a, b])))
      assert.equal(adler32Combine(1, adler32(b), b.length), adler32(b), 'an empty prefix')
      assert.equal(adler32Repeat(adler32(b), b.length, 5), adler32(Buffer.concat(new Array(5).fill(b))))
      // 200 MB inflate whole, Adler-32 checked by zlib, at gzip's ratio: the same blocks
      const bomb = createBomb({ variant: 'ratio', codec: 'deflate', bytes: '200MB' })
      const gzip = createBomb({ variant: 'ratio', bytes: '200MB' })
      let inflated = 0
      await pipeline(...bomb.streams, zlib.createInflate(), new Writable({ write: function count (chunk, encoding, callback) { inflated += chunk.length; callback() } }))
      assert.equal(inflated, 200_000_000)
      assert.equal(bomb.compressedBytes, gzip.compressedBytes - 18 + 6, 'a 2-byte header and a 4-byte trailer where gzip has 10 and 8')
    })

    it('br: made once into the cache, named by its parameters and compressor, and read from there', async function () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-bomb-cache-'))
      try {
        const first = await prepareBomb({ variant: 'ratio', codec: 'br', bytes: '1GB' }, { cacheDir: dir })
        assert.ok(first.madeMs >= 0)
        for (const stream of first.streams) stream.destroy()
        assert.match(path.basename(first.cacheFile), /^brotli[\d.]+-q5w24-streamlab-bomb-ratio-1000000000B\.json\.br$/)
        const again = await prepareBomb({ variant: 'ratio', codec: 'br', bytes: '1GB' }, { cacheDir: dir })
        assert.equal(again.madeMs, null, 'not made twice')
        const bytes = await buffer(again.streams[0])
        assert.equal(bytes.length, again.compressedBytes)
        assert.ok(1e9 / bytes.length > 100_000, `${bytes.length} B for 1 GB`)
        let inflated = 0
        await pipeline(Readable.from([bytes]), zlib.createBrotliDecompress(), new Writable({ write: function count (chunk, encoding, callback) { inflated += chunk.length; callback() } }))
        assert.equal(inflated, 1e9)
        const third = createBomb({ variant: 'ratio', codec: 'br', bytes: '1GB' }, { cacheDir: dir })
        for (const stream of third.streams) stream.destroy()
        assert.equal(third.cacheFile, first.cacheFile)
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })

    it('refuses zstd where zlib has none, naming the Node that has it, and members in any codec but gzip', function () {
      const cases = [[{ variant: 'members', codec: 'br' }, /members are gzip's/], [{ codec: 'lzma' }, /one of gzip, deflate, br, zstd/]]
      if (!bombCodecAvailable('zstd')) cases.push([{ codec: 'zstd' }, new RegExp(`22\\.15\\.0 and later\\), this is Node ${process.versions.node.replaceAll('.', '\\.')}`)])
      for (const [query, allowed] of cases) {
        assert.throws(function () { normalizeBombParams(query) }, function check (err) {
          assert.equal(err.status, 400, JSON.stringify(query))
          assert.equal(err.details.parameter, 'codec')
          assert.match(err.details.allowed, allowed)
          return true
        })
      }
      assert.equal(maximumBytes('ratio', 'br'), BOMB_LIMITS.maxCompressorBytes)
    })

    it('POST /good refuses a 2 GiB br bomb with 413, its memory flat (from outside, on a lab of its own)', async function () {
      this.timeout(120_000)
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-bomb-good-'))
      try {
        const bomb = await prepareBomb({ variant: 'ratio', codec: 'br', bytes: '2GiB' }, { cacheDir: dir })
        const body = await buffer(bomb.streams[0])
        const small = zlib.brotliCompressSync(JSON.stringify({ items: [{ id: 1 }, { id: 2 }] }))
        async function post (url, bytes) {
          const res = await fetch(`${url}/good`, { method: 'POST', headers: bomb.uploadHeaders, body: bytes })
          return { status: res.status, body: await res.json() }
        }
        const m = await measureOnFreshServer({
          warmUp: async function warm (url) { assert.equal((await post(url, small)).status, 200) },
          load: function sendBomb (url) { return post(url, body) }
        })
        assert.equal(m.outcome.status, 413, JSON.stringify(m.outcome.body))
        assert.match(m.outcome.body.error.type, /^(ratio|inflated)\.too\.large$/)
        if (m.peakAboveIdle !== null) assert.ok(m.peakAboveIdle < 64 * MiB, `grew ${(m.peakAboveIdle / MiB).toFixed(1)} MiB (${m.peakSource})`)
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    })
  })

  describe('GET /generate?kind=bomb', function () {
    let lab

    before(async function () {
      lab = await startLab({ dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-bombs-')) })
    })
    after(async function () {
      await lab.close()
      fs.rmSync(lab.app.locals.options.dataDir, { recursive: true, force: true })
    })

    it('streams the bomb with its size, file name and the headers to upload it with', async function () {
      const res = await fetch(`${lab.url}/generate?kind=bomb&variant=ratio&bytes=20MB`)
      assert.equal(res.status, 200)
      assert.equal(res.headers.get('content-type'), 'application/gzip')
      assert.equal(res.headers.get('content-encoding'), null, 'never Content-Encoding: the client would inflate it')
      assert.match(res.headers.get('content-disposition'), /filename="streamlab-bomb-ratio-20000000B\.json\.gz"/)
      assert.equal(res.headers.get('x-bomb-inflated-bytes'), '20000000')
      assert.equal(res.headers.get('x-upload-content-type'), 'application/gzip')
      assert.equal(res.headers.get('x-upload-content-encoding'), null)
      const body = Buffer.from(await res.arrayBuffer())
      assert.equal(Number(res.headers.get('content-length')), body.length)
      assert.ok(body.equals((await compressed({ variant: 'ratio', bytes: 20_000_000 })).bytes), 'the same bytes as createBomb')
    })

    it('names the Content-Encoding a chained bomb must be sent with', async function () {
      const res = await fetch(`${lab.url}/generate?kind=bomb&variant=chained&layers=3&bytes=1GB`)
      assert.equal(res.status, 200)
      assert.equal(res.headers.get('x-upload-content-type'), 'application/gzip')
      assert.equal(res.headers.get('x-upload-content-encoding'), 'gzip, gzip')
      assert.match(res.headers.get('content-disposition'), /\.json\.gz\.gz\.gz"/)
      const body = Buffer.from(await res.arrayBuffer())
      assert.equal(zlib.gunzipSync(zlib.gunzipSync(body)).readUInt16BE(0), 0x1F8B)
    })

    it('sends a br bomb with the headers to upload it with, made once into the data directory', async function () {
      const res = await fetch(`${lab.url}/generate?kind=bomb&variant=ratio&codec=br&bytes=100MB`)
      assert.equal(res.status, 200)
      assert.equal(res.headers.get('content-type'), 'application/octet-stream')
      assert.equal(res.headers.get('content-encoding'), null, 'never Content-Encoding: the client would inflate it')
      assert.match(res.headers.get('content-disposition'), /filename="streamlab-bomb-ratio-100000000B\.json\.br"/)
      assert.equal(res.headers.get('x-bomb-codec'), 'br')
      assert.equal(res.headers.get('x-upload-content-type'), 'application/json')
      assert.equal(res.headers.get('x-upload-content-encoding'), 'br')
      const body = Buffer.from(await res.arrayBuffer())
      assert.equal(Number(res.headers.get('content-length')), body.length)
      assert.equal(zlib.brotliDecompressSync(body).length, 1e8)
      const cached = fs.readdirSync(path.join(lab.app.locals.options.dataDir, 'bombs'))
      assert.deepEqual(cached.filter(function isBomb (f) { return f.endsWith('.json.br') }).length, 1, cached.join(', '))
      const deflate = await fetch(`${lab.url}/generate?kind=bomb&variant=chained&codec=deflate&bytes=1GB`)
      assert.equal(deflate.headers.get('content-type'), 'application/zlib')
      assert.equal(deflate.headers.get('x-upload-content-encoding'), 'deflate, deflate, deflate')
      assert.match(deflate.headers.get('content-disposition'), /\.json\.zz\.zz\.zz"/)
      assert.equal(zlib.inflateSync(zlib.inflateSync(Buffer.from(await deflate.arrayBuffer()))).readUInt8(0), 0x78)
    })

    it('answers 400 naming the codec for zstd where zlib has none, and for members in br', async function () {
      const queries = [['kind=bomb&variant=members&codec=br', /members are gzip's/]]
      if (!bombCodecAvailable('zstd')) queries.push(['kind=bomb&codec=zstd', /Node whose zlib has zstd \(22\.15\.0 and later\)/])
      for (const [query, allowed] of queries) {
        const res = await fetch(`${lab.url}/generate?${query}`)
        const body = await res.json()
        assert.equal(res.status, 400, query)
        assert.equal(body.error.parameter, 'codec')
        assert.match(body.error.allowed, allowed)
      }
    })

    it('answers 400 parameter.invalid for a bad kind, variant or parameter', async function () {
      for (const [query, parameter] of [['kind=zip', 'kind'], ['kind=bomb&variant=huge', 'variant'],
        ['kind=bomb&bytes=-1', 'bytes'], ['kind=bomb&variant=ratio&size=10', 'size'], ['kind=bomb&save=1', 'save'],
        ['kind=bomb&variant=depth&bytes=21GB', 'bytes']]) {
        const res = await fetch(`${lab.url}/generate?${query}`)
        const body = await res.json()
        assert.equal(res.status, 400, query)
        assert.equal(body.error.type, 'parameter.invalid')
        assert.equal(body.error.parameter, parameter, query)
      }
    })

    it('is refused by POST /good in every variant, long before it is inflated', async function () {
      for (const variant of BOMB_VARIANTS) {
        const { bomb, bytes: body } = await compressed({ variant, bytes: variant === 'depth' ? undefined : '2GB' })
        const res = await fetch(`${lab.url}/good`, { method: 'POST', headers: bomb.uploadHeaders, body })
        const answer = await res.json()
        assert.ok([413, 422].includes(res.status), `${variant}: ${res.status} ${JSON.stringify(answer)}`)
      }
    })

    it('is refused by POST /good in every codec and variant it carries, with the headers the bomb names', async function () {
      for (const codec of BOMB_CODECS.filter(bombCodecAvailable)) {
        for (const variant of BOMB_VARIANTS.filter(function carried (v) { return codec === 'gzip' || v !== 'members' })) {
          const { bomb, bytes: body } = await compressed({ variant, codec, bytes: variant === 'depth' ? undefined : '256MB' })
          const res = await fetch(`${lab.url}/good`, { method: 'POST', headers: bomb.uploadHeaders, body })
          const answer = await res.json()
          assert.ok([413, 422].includes(res.status), `${codec} ${variant}: ${res.status} ${JSON.stringify(answer)}`)
        }
      }
    })
  })

  describe('npm run generate -- --bomb', function () {
    let dir

    before(function () {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'streamlab-bomb-cli-'))
    })
    after(function () {
      fs.rmSync(dir, { recursive: true, force: true })
    })

    it('writes the bomb and says how to send it', async function () {
      const { stdout } = await run(process.execPath, [CLI, '--bomb', 'chained', '--bytes', '1GB', '--out', dir + path.sep])
      const file = path.join(dir, 'streamlab-bomb-chained-1000000000B.json.gz.gz.gz')
      assert.ok(fs.existsSync(file), stdout)
      assert.match(stdout, /953\.7 MiB inflated/)
      assert.match(stdout, /-H 'content-encoding: gzip, gzip'/)
      assert.equal(inflateAll(fs.readFileSync(file), 2).readUInt16BE(0), 0x1F8B)
    })

    it('writes a bomb in another codec, with the headers that codec needs', async function () {
      const { stdout } = await run(process.execPath, [CLI, '--bomb', 'ratio', '--codec', 'deflate', '--bytes', '1GB', '--out', dir + path.sep])
      const file = path.join(dir, 'streamlab-bomb-ratio-1000000000B.json.zz')
      assert.match(stdout, /1 deflate layer/)
      assert.match(stdout, /-H 'content-type: application\/json' -H 'content-encoding: deflate'/)
      let inflated = 0
      await pipeline(fs.createReadStream(file), zlib.createInflate(), new Writable({ write: function count (chunk, encoding, callback) { inflated += chunk.length; callback() } }))
      assert.equal(inflated, 1e9)
    })

    it('exits 2 naming the flag for a bad variant or a flag bombs do not take', async function () {
      for (const [args, flag] of [[['--bomb', 'nope'], '--bomb'], [['--bomb', 'ratio', '--depth', '5'], '--depth'],
        [['--bomb', 'ratio', '--size', '5'], '--size'], [['--layers', '3'], '--layers'], [['--codec', 'br'], '--codec'],
        [['--bomb', 'members', '--codec', 'br'], '--codec']]) {
        await assert.rejects(run(process.execPath, [CLI, ...args, '--out', dir + path.sep]), function check (err) {
          assert.equal(err.code, 2, args.join(' '))
          assert.ok(err.stderr.includes(flag), err.stderr)
          return true
        })
      }
    })

    it('exits 1 with one line, no stack trace, when --out lies under a file', async function () {
      const file = path.join(dir, 'a-file')
      fs.writeFileSync(file, '')
      for (const args of [['--bomb', 'ratio', '--bytes', '1MB'], ['--size', '10']]) {
        await assert.rejects(run(process.execPath, [CLI, ...args, '--out', path.join(file, 'x.gz')]), function check (err) {
          assert.equal(err.code, 1, args.join(' '))
          assert.match(err.stderr, /^generate: could not write .*a-file\/x\.gz: /, err.stderr)
          assert.doesNotMatch(err.stderr, /\n\s+at /, 'no stack trace')
          return true
        })
      }
    })
  })
})
