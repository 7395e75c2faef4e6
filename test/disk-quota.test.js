/**
 * The disk quota (lib/limits/disk-quota.js): everything the lab writes under its
 * data directory counts, a write past it is refused with 507 and leaves
 * nothing on disk, one save runs at a time, uploads of earlier runs go at
 * start, and the delete routes give the room back. Quotas here are tiny
 * and set through app options; no spec waits on a clock, only on a condition.
 */
import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { createApp } from '../app.js'
import { createDiskQuota } from '../lib/limits/disk-quota.js'
import { uploadDir } from '../experiments/upload/server.js'
import { labInTempDir, startLab, postChunked } from './helpers.js'

const KiB = 1024
const HOUR_MS = 60 * 60 * 1000
/** The quota counts a file in whole blocks of this size, one at least. */
const BLOCK_BYTES = 4096

/** What the quota counts for a file of `bytes` bytes. */
function diskCost (bytes) {
  return Math.max(1, Math.ceil(bytes / BLOCK_BYTES)) * BLOCK_BYTES
}

function tempDir (name) {
  return fs.mkdtempSync(path.join(os.tmpdir(), `streamlab-${name}-`))
}

/** Every name in the uploads directory, parts included. */
function uploadsOnDisk (dataDir) {
  try {
    return fs.readdirSync(uploadDir(dataDir))
  } catch (err) {
    if (err.code === 'ENOENT') return []
    throw err
  }
}

/** Temporary files a save is writing, or left behind. */
function tempFiles (dataDir) {
  return fs.readdirSync(dataDir).filter(function isTemp (name) { return name.endsWith('.tmp') })
}

async function call (url, method = 'GET', body = undefined) {
  const res = await fetch(url, { method, body, headers: body === undefined ? {} : { 'content-type': 'application/octet-stream' } })
  return { status: res.status, headers: res.headers, body: await res.json() }
}

/** Wait for `condition` to hold, checking every 10 ms, for at most `ms`. */
async function until (condition, what, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${what}`)
    await new Promise(function wait (resolve) { setTimeout(resolve, 10) })
  }
}

function assertQuotaError (body, quota) {
  assert.equal(body.error.status, 507)
  assert.equal(body.error.type, 'disk.quota.exceeded')
  assert.equal(body.error.quota, quota)
  assert.ok(Number.isInteger(body.error.used) && body.error.used >= 0, `used ${body.error.used}`)
  assert.ok(body.error.used + body.error.asked > quota, `used ${body.error.used} + asked ${body.error.asked} passes ${quota}`)
  assert.match(body.error.message, /DELETE \/uploads/)
  assert.match(body.error.message, /--disk-quota/)
}

describe('createDiskQuota', function () {
  let dir
  beforeEach(function () { dir = tempDir('quota') })
  afterEach(function () { fs.rmSync(dir, { recursive: true, force: true }) })

  it('counts what is on disk at start in 4 KiB blocks, one at least per file, subdirectories included', async function () {
    fs.mkdirSync(path.join(dir, 'a', 'b'), { recursive: true })
    fs.writeFileSync(path.join(dir, 'empty'), '')
    fs.writeFileSync(path.join(dir, 'a', 'one-block'), Buffer.alloc(BLOCK_BYTES))
    fs.writeFileSync(path.join(dir, 'a', 'b', 'two-blocks'), Buffer.alloc(BLOCK_BYTES + 1))
    const quota = createDiskQuota({ dir, quota: 1024 * KiB })
    await quota.ready
    const snapshot = quota.snapshot()
    assert.equal(snapshot.used, 4 * BLOCK_BYTES)
    assert.equal(snapshot.quota, 1024 * KiB)
    assert.equal(snapshot.files, 3)
    assert.equal(snapshot.scan.complete, true)
  })

  it('stops a walk at maxEntries and says it is incomplete', async function () {
    for (let i = 0; i < 10; i++) fs.writeFileSync(path.join(dir, `f${i}`), 'x')
    const quota = createDiskQuota({ dir, quota: 1024 * KiB, maxEntries: 4 })
    await quota.ready
    assert.equal(quota.snapshot().files, 4)
    assert.equal(quota.snapshot().scan.complete, false)
  })

  it('refuses a reservation past the quota with 507 naming quota, used and asked, and takes nothing', async function () {
    fs.writeFileSync(path.join(dir, 'there'), Buffer.alloc(3 * BLOCK_BYTES))
    const quota = createDiskQuota({ dir, quota: 4 * BLOCK_BYTES })
    await assert.rejects(quota.reserve(2 * BLOCK_BYTES), function check (err) {
      assert.equal(err.status, 507)
      assert.deepEqual(err.details, { quota: 4 * BLOCK_BYTES, used: 3 * BLOCK_BYTES, asked: 2 * BLOCK_BYTES })
      return true
    })
    assert.equal(quota.used(), 3 * BLOCK_BYTES)
    const fits = await quota.reserve(BLOCK_BYTES)
    assert.equal(quota.used(), 4 * BLOCK_BYTES)
    fits.release()
    assert.equal(quota.used(), 3 * BLOCK_BYTES)
  })

  it('walks again before refusing, so a file removed behind its back frees its room', async function () {
    fs.writeFileSync(path.join(dir, 'big'), Buffer.alloc(3 * BLOCK_BYTES))
    const quota = createDiskQuota({ dir, quota: 4 * BLOCK_BYTES })
    await quota.ready
    fs.rmSync(path.join(dir, 'big'))
    const reservation = await quota.reserve(3 * BLOCK_BYTES)
    assert.equal(quota.used(), 3 * BLOCK_BYTES)
    reservation.release()
  })

  it('counts a committed file once, and a file written again at the same path once', async function () {
    const quota = createDiskQuota({ dir, quota: 16 * BLOCK_BYTES })
    const first = await quota.reserve(0)
    first.commit(path.join(dir, 'saved'), 2 * BLOCK_BYTES)
    const second = await quota.reserve(0)
    assert.equal(second.tryCover(BLOCK_BYTES), true)
    second.commit(path.join(dir, 'saved'), BLOCK_BYTES)
    assert.equal(quota.used(), BLOCK_BYTES)
    assert.equal(quota.forget(path.join(dir, 'saved')), BLOCK_BYTES)
    assert.equal(quota.used(), 0)
  })

  it('keeps two quotas on the same directory apart', async function () {
    const a = createDiskQuota({ dir, quota: 2 * BLOCK_BYTES })
    const b = createDiskQuota({ dir, quota: 2 * BLOCK_BYTES })
    const held = await a.reserve(2 * BLOCK_BYTES)
    assert.equal(a.used(), 2 * BLOCK_BYTES)
    assert.equal(b.used(), 0)
    held.release()
  })

  it('throws a TypeError for a quota that is not a positive integer, and the app option too', function () {
    for (const bad of [0, -1, 1.5, '2GiB', Infinity]) {
      assert.throws(function make () { createDiskQuota({ dir, quota: bad }) }, TypeError)
      assert.throws(function build () { createApp({ dataDir: dir, diskQuota: bad }) }, /diskQuota/)
    }
    assert.throws(function build () { createApp({ dataDir: dir, upload: { maxAgeMs: -1 } }) }, /upload\.maxAgeMs/)
  })
})

describe('uploads past the disk quota', function () {
  const QUOTA = 64 * KiB
  const lab = labInTempDir('quota-upload', { diskQuota: QUOTA })

  afterEach(async function () {
    const res = await call(`${lab.url}/uploads`, 'DELETE')
    assert.equal(res.status, 200)
  })

  for (const route of ['upload-buffer', 'upload-stream']) {
    describe(`POST /${route}`, function () {
      it('answers 507 disk.quota.exceeded when Content-Length passes the quota, and writes nothing', async function () {
        const res = await call(`${lab.url}/${route}`, 'POST', Buffer.alloc(100_000))
        assert.equal(res.status, 507)
        assertQuotaError(res.body, QUOTA)
        assert.equal(res.body.error.used, 0)
        assert.equal(res.body.error.asked, diskCost(100_000))
        assert.deepEqual(uploadsOnDisk(lab.dataDir), [])
      })

      it('answers 507 when a chunked body passes the quota mid-body, and leaves no file, not even a part', async function () {
        const piece = randomBytes(16 * KiB)
        const res = await postChunked(`${lab.url}/${route}`, Array(8).fill(piece))
        assert.equal(res.status, 507)
        assertQuotaError(res.body, QUOTA)
        assert.deepEqual(uploadsOnDisk(lab.dataDir), [])
        assert.equal(lab.app.locals.diskQuota.used(), 0, 'the refused write holds no room')
      })

      it('counts the uploads already stored: one that fits alone is refused when the others take the room', async function () {
        const first = await call(`${lab.url}/${route}`, 'POST', randomBytes(40_000))
        assert.equal(first.status, 200)
        const second = await call(`${lab.url}/${route}`, 'POST', randomBytes(40_000))
        assert.equal(second.status, 507)
        assert.equal(second.body.error.used, diskCost(40_000))
        assert.equal(second.body.error.asked, diskCost(40_000))
        assert.deepEqual(uploadsOnDisk(lab.dataDir), [first.body.file])
      })
    })
  }

  it('bounds the number of files too: every upload, an empty one included, costs a block', async function () {
    const answers = []
    for (let i = 0; i < QUOTA / BLOCK_BYTES; i++) answers.push(await call(`${lab.url}/upload-stream`, 'POST', Buffer.alloc(0)))
    assert.deepEqual(answers.map(function status (a) { return a.status }), Array(QUOTA / BLOCK_BYTES).fill(200))
    const refused = await call(`${lab.url}/upload-stream`, 'POST', Buffer.alloc(0))
    assert.equal(refused.status, 507)
    assert.deepEqual(refused.body.error, { ...refused.body.error, used: QUOTA, asked: BLOCK_BYTES })
  })

  it('refuses the second of two uploads that fit one at a time but not together, both by Content-Length', async function () {
    // the first is held open mid-body: its whole Content-Length is reserved before its first byte
    const length = 40_000
    const held = http.request(`${lab.url}/upload-stream`, { method: 'POST', headers: { 'content-length': String(length) } })
    const heldAnswer = new Promise(function answer (resolve, reject) {
      held.on('response', function onResponse (res) {
        const parts = []
        res.on('data', function keep (c) { parts.push(c) })
        res.on('end', function done () { resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(parts).toString()) }) })
      })
      held.on('error', reject)
    })
    held.write(Buffer.alloc(1000))
    await until(function partExists () { return uploadsOnDisk(lab.dataDir).length === 1 }, 'the first upload\'s part')
    const second = await call(`${lab.url}/upload-buffer`, 'POST', Buffer.alloc(length))
    assert.equal(second.status, 507)
    assert.equal(second.body.error.used, diskCost(length))
    held.end(Buffer.alloc(length - 1000))
    assert.equal((await heldAnswer).status, 200)
  })

})

describe('files the lab did not write', function () {
  it('count from the start, and stop counting once removed behind the lab\'s back', async function () {
    const QUOTA = 64 * KiB
    const dataDir = tempDir('quota-stranger')
    const stranger = path.join(dataDir, 'left-by-someone.bin')
    fs.writeFileSync(stranger, Buffer.alloc(48 * KiB))
    const lab = await startLab({ dataDir, diskQuota: QUOTA })
    try {
      const refused = await call(`${lab.url}/upload-stream`, 'POST', Buffer.alloc(20 * KiB))
      assert.equal(refused.status, 507)
      assert.equal(refused.body.error.used, 48 * KiB)
      fs.rmSync(stranger)
      // the lab still counts it, but walks the directory again before refusing: it is gone, the upload fits
      const accepted = await call(`${lab.url}/upload-stream`, 'POST', Buffer.alloc(20 * KiB))
      assert.equal(accepted.status, 200)
    } finally {
      await lab.close()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe('DELETE /uploads and DELETE /uploads/:file', function () {
  const QUOTA = 64 * KiB
  const lab = labInTempDir('quota-delete', { diskQuota: QUOTA })

  it('removes one upload, answers what went and the bytes freed, and gives its room back to the quota', async function () {
    const first = await call(`${lab.url}/upload-buffer`, 'POST', randomBytes(40_000))
    assert.equal(first.status, 200)
    assert.equal((await call(`${lab.url}/upload-stream`, 'POST', randomBytes(40_000))).status, 507)
    const res = await call(`${lab.url}/uploads/${first.body.file}`, 'DELETE')
    assert.equal(res.status, 200)
    assert.deepEqual(res.body, { removed: 1, files: [first.body.file], bytes: 40_000, disk: { used: 0, quota: QUOTA } })
    assert.deepEqual(uploadsOnDisk(lab.dataDir), [])
    const again = await call(`${lab.url}/upload-stream`, 'POST', randomBytes(40_000))
    assert.equal(again.status, 200, 'the room is free again')
    await call(`${lab.url}/uploads/${again.body.file}`, 'DELETE')
  })

  it('removes every finished upload and leaves the parts of uploads in flight', async function () {
    const sizes = [1000, 2000, 3000]
    const names = []
    for (const size of sizes) names.push((await call(`${lab.url}/upload-stream`, 'POST', Buffer.alloc(size))).body.file)
    const part = `${randomUUID()}.${process.pid}.part`
    fs.writeFileSync(path.join(uploadDir(lab.dataDir), part), 'x')
    try {
      const res = await call(`${lab.url}/uploads`, 'DELETE')
      assert.equal(res.status, 200)
      assert.equal(res.body.removed, 3)
      assert.deepEqual([...res.body.files].sort(), [...names].sort())
      assert.equal(res.body.bytes, 6000)
      assert.deepEqual(uploadsOnDisk(lab.dataDir), [part])
    } finally {
      fs.rmSync(path.join(uploadDir(lab.dataDir), part))
    }
    const none = await call(`${lab.url}/uploads`, 'DELETE')
    assert.deepEqual(none.body, { removed: 0, files: [], bytes: 0, disk: { used: 0, quota: QUOTA } })
  })

  it('answers 404 upload.not.found for an upload name it does not have', async function () {
    const file = `${randomUUID()}.upload`
    const res = await call(`${lab.url}/uploads/${file}`, 'DELETE')
    assert.equal(res.status, 404)
    assert.equal(res.body.error.type, 'upload.not.found')
    assert.equal(res.body.error.file, file)
  })

  for (const name of ['..%2F..%2Fetc%2Fpasswd', 'README.md', `${randomUUID()}.${process.pid}.part`, `${randomUUID().toUpperCase()}.upload`]) {
    it(`answers 400 parameter.invalid naming file for ${name}, and removes nothing`, async function () {
      const res = await call(`${lab.url}/uploads/${name}`, 'DELETE')
      assert.equal(res.status, 400)
      assert.equal(res.body.error.type, 'parameter.invalid')
      assert.equal(res.body.error.parameter, 'file')
    })
  }

  it('answers 405 with Allow: DELETE to another method on /uploads', async function () {
    const res = await fetch(`${lab.url}/uploads`)
    assert.equal(res.status, 405)
    assert.equal(res.headers.get('allow'), 'DELETE')
  })
})

describe('GET /generate?save=1 and the disk quota', function () {
  // size=2000 at level 6 is 188,358 bytes gzipped (test/generate.test.js makes the same document)
  const QUOTA = 160 * KiB
  const lab = labInTempDir('quota-save', { diskQuota: QUOTA })

  afterEach(function () {
    assert.deepEqual(tempFiles(lab.dataDir), [], 'no temp file left behind')
  })

  it('refuses with 507 before writing a byte when even the least the save can take does not fit', async function () {
    const res = await call(`${lab.url}/generate?save=1&size=20000`)
    assert.equal(res.status, 507)
    assertQuotaError(res.body, QUOTA)
    assert.deepEqual(fs.readdirSync(lab.dataDir), [])
  })

  it('stops a save that passes the quota mid-write, with 507, leaving neither the file nor its temp file', async function () {
    const res = await call(`${lab.url}/generate?save=1&size=2000&level=6`)
    assert.equal(res.status, 507)
    assertQuotaError(res.body, QUOTA)
    assert.ok(res.body.error.asked <= diskCost(188_358), 'stopped at the chunk that crossed, not at the end')
    assert.deepEqual(fs.readdirSync(lab.dataDir), [])
    assert.equal(lab.app.locals.diskQuota.used(), 0)
  })

  it('counts a saved file once, however many times it is saved again', async function () {
    const first = await call(`${lab.url}/generate?save=1&size=100`)
    assert.equal(first.status, 200)
    const used = lab.app.locals.diskQuota.used()
    assert.equal(used, diskCost(first.body.compressedBytes))
    const second = await call(`${lab.url}/generate?save=1&size=100`)
    assert.equal(second.status, 200)
    assert.equal(lab.app.locals.diskQuota.used(), used)
    fs.rmSync(path.join(lab.dataDir, 'test.json.gz'))
  })
})

describe('one save at a time', function () {
  const lab = labInTempDir('quota-busy')

  it('answers a second concurrent save=1 with 503 save.busy and Retry-After, and saves again once the first has ended', async function () {
    // 8 GiB at level 9 takes minutes: it is still being written when the second save asks
    const first = new AbortController()
    const firstAnswer = fetch(`${lab.url}/generate?save=1&bytes=8GiB&level=9`, { signal: first.signal }).catch(function aborted (err) { return err })
    await until(function writing () { return tempFiles(lab.dataDir).length === 1 }, 'the first save\'s temp file')
    const second = await call(`${lab.url}/generate?save=1&size=10`)
    assert.equal(second.status, 503)
    assert.equal(second.headers.get('retry-after'), '1')
    assert.deepEqual(second.body.error, { ...second.body.error, status: 503, type: 'save.busy', retryAfter: 1 })
    // the client that hangs up cancels its save: the temp file goes, and the next save is welcome
    first.abort()
    assert.equal((await firstAnswer).name, 'AbortError')
    await until(function removed () { return tempFiles(lab.dataDir).length === 0 }, 'the cancelled save\'s temp file removed')
    let third
    await until(async function saved () {
      third = await call(`${lab.url}/generate?save=1&size=10`)
      return third.status !== 503
    }, 'the lock to be released')
    assert.equal(third.status, 200)
    assert.equal(lab.app.locals.diskQuota.used(), diskCost(third.body.compressedBytes))
  })
})

describe('uploads of earlier runs', function () {
  let dataDir
  let lab
  beforeEach(function () { dataDir = tempDir('quota-old') })
  afterEach(async function () {
    await lab?.close()
    lab = null
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  function plant (name, ageMs, bytes = 10) {
    const file = path.join(uploadDir(dataDir), name)
    fs.mkdirSync(uploadDir(dataDir), { recursive: true })
    fs.writeFileSync(file, Buffer.alloc(bytes))
    const when = new Date(Date.now() - ageMs)
    fs.utimesSync(file, when, when)
    return name
  }

  it('are removed at start when older than upload.maxAgeMs (an hour), and the quota counts only what stays', async function () {
    const old = plant(`${randomUUID()}.upload`, 2 * HOUR_MS, 5000)
    const fresh = plant(`${randomUUID()}.upload`, 0, 5000)
    const livePart = plant(`${randomUUID()}.${process.pid}.part`, 2 * HOUR_MS)
    lab = await startLab({ dataDir })
    assert.deepEqual(await lab.app.locals.oldUploadsRemoved, [old])
    assert.deepEqual(fs.readdirSync(uploadDir(dataDir)).sort(), [fresh, livePart].sort())
    await lab.app.locals.diskQuota.ready
    assert.equal(lab.app.locals.diskQuota.used(), diskCost(5000) + diskCost(10))
  })

  it('follow upload.maxAgeMs, and stay however old with 0', async function () {
    const old = plant(`${randomUUID()}.upload`, 2 * HOUR_MS)
    const recent = plant(`${randomUUID()}.upload`, 10 * 60 * 1000)
    lab = await startLab({ dataDir, upload: { maxAgeMs: 5 * 60 * 1000 } })
    assert.deepEqual((await lab.app.locals.oldUploadsRemoved).sort(), [old, recent].sort())
    await lab.close()
    const kept = plant(`${randomUUID()}.upload`, 2 * HOUR_MS)
    lab = await startLab({ dataDir, upload: { maxAgeMs: 0 } })
    assert.deepEqual(await lab.app.locals.oldUploadsRemoved, [])
    assert.deepEqual(fs.readdirSync(uploadDir(dataDir)), [kept])
  })
})
