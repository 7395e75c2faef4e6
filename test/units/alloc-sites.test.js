/**
 * lib/allocation/ without HTTP: the sampler names the lines that allocate and hold a thread's
 * bytes, Buffer and V8 heap alike, lets go of the Buffer bytes once they are collected, puts
 * Node's Buffer allocators back when it stops, and a parse thread's window comes back marked
 * with its thread. Samples are drawn at random; each spec allocates hundreds of sampling
 * intervals, so that a site it names goes unsampled with a probability below 1e-100.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { Buffer } from 'node:buffer'
import { fileURLToPath } from 'node:url'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import zlib from 'node:zlib'
import { createAllocationSampler, mergeWindows } from '../../lib/allocation/sampler.js'
import { BUFFER_ALLOCATORS, buffersWrapped } from '../../lib/allocation/buffers.js'
import { createParsePool } from '../../lib/parse/pool.js'
import { createThreadSites } from '../../lib/parse/thread-sites.js'

const runFile = promisify(execFile)
const KiB = 1024
const MiB = 1024 * KiB
const THIS_FILE = 'test/units/alloc-sites.test.js'
const SOURCE = fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n')

/** The line of this file that holds `text`, counted from 1. */
function lineOf (text) {
  const at = SOURCE.findIndex(function holds (line) { return line.includes(text) })
  assert.notEqual(at, -1, text)
  return at + 1
}

/** 512 Buffers of 64 KiB: 32 MiB, kept in `into`. */
function allocateBuffers (into) {
  for (let k = 0; k < 512; k++) into.push(Buffer.alloc(64 * KiB)) // allocateBuffers: the site
}

/** Some 30 MiB of small objects and strings, in one array. */
function allocateObjects () {
  const objects = []
  for (let k = 0; k < 400_000; k++) objects.push({ k, name: `object ${k}` })
  return objects
}

function siteNamed (window, functionName, kind) {
  return window.sites.find(function named (site) { return site.functionName === functionName && site.kind === kind })
}

describe('createAllocationSampler', function () {
  let sampler = null
  afterEach(function stopSampler () {
    sampler?.stop()
    sampler = null
  })

  it('names a function that allocates Buffers, and one that allocates objects, with their file and line among the top sites', function () {
    sampler = createAllocationSampler({ intervalBytes: 64 * KiB })
    sampler.start()
    const buffers = []
    allocateBuffers(buffers)
    const objects = allocateObjects()
    const window = sampler.window()
    assert.equal(objects.length, 400_000)

    const buffer = siteNamed(window, 'allocateBuffers', 'buffer')
    assert.ok(buffer, JSON.stringify(window.sites))
    assert.deepEqual([buffer.file, buffer.line], [THIS_FILE, lineOf('// allocateBuffers: the site')])
    // 32 MiB in 512 sampling intervals: the estimate within a quarter of it
    assert.ok(buffer.allocatedBytes > 24 * MiB && buffer.allocatedBytes < 40 * MiB, `${buffer.allocatedBytes}`)
    assert.ok(buffer.heldBytes > 24 * MiB, `${buffer.heldBytes}`)

    // a heap site is the function, at its first line: V8 samples by function
    const heap = siteNamed(window, 'allocateObjects', 'heap')
    assert.ok(heap, JSON.stringify(window.sites))
    assert.deepEqual([heap.file, heap.line], [THIS_FILE, lineOf('function allocateObjects')])
    assert.ok(heap.heldBytes > 8 * MiB, `${heap.heldBytes}`)
    assert.equal(window.intervalBytes, 64 * KiB)
    assert.ok(window.totals.buffer.allocatedBytes >= buffer.allocatedBytes)
    assert.equal(window.heapError, null)
  })

  it('keeps what a function held at a peak noted inside it, though it is garbage when the window closes', function () {
    sampler = createAllocationSampler({ intervalBytes: 64 * KiB })
    sampler.start()
    function parseAndDrop () {
      const objects = allocateObjects()
      sampler.notePeak()
      return objects.length
    }
    assert.equal(parseAndDrop(), 400_000)
    const window = sampler.window()
    const heap = siteNamed(window, 'allocateObjects', 'heap')
    assert.ok(heap, JSON.stringify(window.sites))
    // some 30 MiB in hundreds of intervals: held at the peak, and allocated in this window
    assert.ok(heap.heldBytes > 8 * MiB, `${heap.heldBytes}`)
    assert.ok(heap.allocatedBytes > 8 * MiB, `${heap.allocatedBytes}`)
    assert.ok(window.totals.heap.heldBytes >= heap.heldBytes)
    const next = siteNamed(sampler.window(), 'allocateObjects', 'heap')
    assert.ok(next === undefined || next.heldBytes < 1 * MiB, 'the next window holds only what lives at its end')
  })

  it('lets go of the held bytes of Buffers once they are dropped and collected', async function () {
    // alone in a process of its own: no other sampler or lab of the suite shares its allocators or its collector
    const { stdout } = await runFile(process.execPath, ['--expose-gc', fileURLToPath(new URL('../fixtures/alloc/held-release.js', import.meta.url))])
    const { before, after } = JSON.parse(stdout)
    assert.ok(before > 24 * MiB, `held ${before} while the Buffers lived`)
    assert.ok(after < 1 * MiB, `still held: ${after}`)
  })

  it('charges zlib\'s output chunks to node:zlib when no caller of the lab\'s is on the stack', async function () {
    sampler = createAllocationSampler({ intervalBytes: 16 * KiB })
    const input = zlib.gzipSync(Buffer.alloc(16 * MiB))
    sampler.start()
    const gunzip = zlib.createGunzip()
    gunzip.resume()
    gunzip.end(input)
    await new Promise(function ended (resolve) { gunzip.on('end', resolve) })
    const site = siteNamed(sampler.window(), 'processCallback', 'buffer')
    assert.ok(site, 'a site in processCallback')
    assert.equal(site.file, 'node:zlib')
    assert.ok(site.allocatedBytes > 8 * MiB, `${site.allocatedBytes}`)
  })

  it('puts the Buffer allocators back, and lets the heap profiler go, on stop()', function () {
    const originals = BUFFER_ALLOCATORS.map(function original (name) { return Buffer[name] })
    sampler = createAllocationSampler()
    sampler.start()
    // V8 has one sampling heap profiler a thread: a second sampler is told so
    const second = createAllocationSampler({ buffers: false })
    second.start()
    assert.match(second.window().heapError, /taken by another allocation sampler/)
    second.stop()
    assert.ok(buffersWrapped())
    assert.notEqual(Buffer.alloc, originals[0])
    sampler.stop()
    assert.equal(buffersWrapped(), false)
    assert.deepEqual(BUFFER_ALLOCATORS.map(function now (name) { return Buffer[name] }), originals)
    assert.equal(sampler.window().sites.length, 0)
    // the thread's one sampling heap profiler is free for the next sampler
    const next = createAllocationSampler()
    next.start()
    try {
      assert.equal(next.window().heapError, null)
    } finally {
      next.stop()
    }
  })

  it('does not count Buffer.from over an ArrayBuffer, which allocates nothing', function () {
    sampler = createAllocationSampler({ intervalBytes: 1024 })
    const memory = new ArrayBuffer(64 * MiB)
    sampler.start()
    const views = []
    for (let k = 0; k < 64; k++) views.push(Buffer.from(memory, k * MiB, MiB))
    assert.equal(views.length, 64)
    assert.equal(sampler.window().totals.buffer.samples, 0)
  })

  it('refuses bad options with a TypeError that names the option', function () {
    for (const [options, name] of [
      [{ intervalBytes: 10 }, /option intervalBytes/],
      [{ intervalBytes: '64KiB' }, /option intervalBytes/],
      [{ top: 0 }, /option top/],
      [{ heap: 'yes' }, /option heap/],
      [{ buffers: 1 }, /option buffers/],
      [null, /options must be an object/]
    ]) {
      assert.throws(function make () { createAllocationSampler(options) }, function named (err) {
        return err instanceof TypeError && name.test(err.message)
      })
    }
    const options = { intervalBytes: 4096 }
    assert.ok(Object.isFrozen(createAllocationSampler(options).options))
    assert.deepEqual(options, { intervalBytes: 4096 })
  })
})

describe('the parse threads\' allocation sites (lib/parse/thread-sites.js)', function () {
  let pool = null
  afterEach(async function stopPool () {
    await pool?.destroy()
    pool = null
  })

  it('brings a parse thread\'s sites back marked with its thread', async function () {
    pool = createParsePool(1)
    const threads = createThreadSites(pool)
    threads.start(64 * KiB)
    // one 4 MiB string to parse: the batch's text, and on Node 20 the parsed string too, in parseBatch
    const bytes = new TextEncoder().encode(JSON.stringify(['x'.repeat(4 * MiB)]))
    await pool.run({ kind: 'values', bytes })
    const windows = await threads.windows()
    assert.deepEqual(windows.map(function thread (w) { return w.thread }), ['parse thread 1'])
    const merged = mergeWindows(windows, 20)
    const parse = siteNamed(merged, 'parseBatch', 'heap')
    assert.ok(parse, JSON.stringify(merged.sites))
    assert.deepEqual([parse.thread, parse.file], ['parse thread 1', 'lib/parse/parse-batch.js'])
    assert.ok(parse.allocatedBytes > 3 * MiB, `${parse.allocatedBytes}`)
    // the thread samples what it allocates: what it holds is not known
    assert.equal(parse.heldBytes, null)
  })

  it('has a thread started in place of a dead one sample as its peers do', async function () {
    pool = createParsePool(1)
    const threads = createThreadSites(pool)
    threads.start(64 * KiB)
    const [dead] = pool.threads
    await dead.terminate()
    for (let k = 0; k < 1000 && (pool.threads.has(dead) || pool.threads.size === 0); k++) await new Promise(setImmediate)
    assert.equal(pool.threads.size, 1, 'a thread in its place')
    await pool.run({ kind: 'values', bytes: new TextEncoder().encode(JSON.stringify(['x'.repeat(MiB)])) })
    assert.deepEqual((await threads.windows()).map(function thread (w) { return w.thread }), ['parse thread 1'])
  })

  it('asks nothing of the threads while they do not sample', async function () {
    pool = createParsePool(1)
    const threads = createThreadSites(pool)
    assert.deepEqual(await threads.windows(), [])
    threads.start(64 * KiB)
    threads.stop()
    assert.deepEqual(await threads.windows(), [])
  })
})

describe('mergeWindows', function () {
  it('marks each site with its thread, keeps the top of all, and sums the totals', function () {
    const site = function site (name, allocatedBytes, heldBytes) {
      return { functionName: name, file: 'x.js', line: 1, column: 1, kind: 'buffer', allocatedBytes, heldBytes, samples: 1 }
    }
    const totals = function totals (allocatedBytes, heldBytes) {
      return { heap: null, buffer: { allocatedBytes, heldBytes, samples: 2 }, omitted: { count: 1, allocatedBytes: 1, heldBytes: 0 } }
    }
    const merged = mergeWindows([
      { thread: 'main', window: { intervalBytes: 4096, windowMs: 2000, sites: [site('a', 10, 5), site('b', 1, 0)], totals: totals(11, 5), heapError: null } },
      { thread: 'parse thread 1', window: { intervalBytes: 4096, windowMs: 1990, sites: [site('c', 7, null)], totals: totals(7, 0), heapError: 'busy' } }
    ], 2)
    assert.deepEqual(merged.sites.map(function label (s) { return `${s.thread}:${s.functionName}` }), ['main:a', 'parse thread 1:c'])
    assert.deepEqual(merged.totals.buffer, { allocatedBytes: 18, heldBytes: 5, samples: 4 })
    assert.deepEqual(merged.totals.omitted, { count: 3, allocatedBytes: 3, heldBytes: 0 })
    assert.deepEqual(merged.threads, ['main', 'parse thread 1'])
    assert.deepEqual(merged.heapErrors, { 'parse thread 1': 'busy' })
    assert.equal(merged.windowMs, 2000)
  })
})
