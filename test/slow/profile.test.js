/**
 * `npm run profile`, end to end through Node's own profilers (--fallback and
 * snapshot): small bodies, short loads, real files read back. Clinic.js is
 * never run here: it downloads hundreds of packages.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { DEFAULTS } from '../../lib/config/options.js'
import { readProfileArgs } from '../../scripts/profile.js'
import { clinicRefusal } from '../../scripts/profile/clinic.js'
import { procAvailable } from '../../lib/util/platform.js'

const run = promisify(execFile)
const CLI = fileURLToPath(new URL('../../scripts/profile.js', import.meta.url))

/** Every frame of a profile's call tree (heap profiles nest `children` objects). */
function framesOf (node, frames = []) {
  frames.push(node.callFrame)
  for (const child of node.children ?? []) framesOf(child, frames)
  return frames
}

/** The main thread's file: `Heap.<date>.<time>.<pid>.0.<seq>.heapprofile` (thread 0). */
async function mainThreadFile (dir, ext) {
  const names = await fs.promises.readdir(dir)
  const main = names.filter(function isMain (name) { return new RegExp(`^(Heap|CPU)\\.\\d+\\.\\d+\\.\\d+\\.0\\.\\d+\\${ext}$`).test(name) })
  assert.equal(main.length, 1, `one main-thread ${ext} in ${names.join(', ')}`)
  return path.join(dir, main[0])
}

/** The app factory's file, as a frame's url ends (`file://` + the path). */
const APP_PATH = new URL('../../app.js', import.meta.url).pathname

function fromLab (file) {
  return function isLabFrame (frame) { return frame.url.endsWith(file) }
}

describe('npm run profile', function () {
  this.timeout(60000)
  let out

  before(async function () {
    await fs.promises.mkdir(DEFAULTS.dataDir, { recursive: true })
    out = await fs.promises.mkdtemp(path.join(DEFAULTS.dataDir, 'profile-test-'))
  })
  after(async function () {
    await fs.promises.rm(out, { recursive: true, force: true })
  })

  it('runs the lab\'s allocation sampler with heap, and names the lines that buffer /bad\'s body', async function () {
    const dir = path.join(out, 'sites')
    const { stdout } = await run(process.execPath, [CLI, 'heap', 'bad', '--size', '5MB', '--amount', '6', '--connections', '2', '--out', dir])
    assert.match(stdout, /heap bad: the lab's allocation sampler/)
    assert.match(stdout, /Which lines allocated the bytes and which hold them/)
    const written = JSON.parse(await fs.promises.readFile(path.join(dir, 'allocation-sites.json'), 'utf8'))
    assert.equal(written.route, 'bad')
    assert.ok(written.windows >= 1, `${written.windows} windows`)
    // /bad keeps the inflated body whole: its join in the buffered inflate is among the Buffer sites, named by its line
    const join = written.sites.find(function isJoin (s) { return s.kind === 'buffer' && s.file === 'lib/ingest/gzip-framing.js' })
    assert.ok(join, JSON.stringify(written.sites.map(function line (s) { return `${s.file}:${s.line} ${s.functionName}` })))
    assert.ok(join.allocatedBytes > 2 * 1024 * 1024, `${join.allocatedBytes}`)
    assert.match(stdout, new RegExp(`lib/ingest/gzip-framing\\.js:${join.line} `))
    // the heaviest site's share of all /bad allocated in its windows, and the most one request held beside it
    assert.match(stdout, /top site \S+ \S+ allocated [\d.]+ MiB: share (0\.\d\d|1\.00) of \/bad's sampled allocation \([\d.]+ MiB\); the most one request held: [\d.]+ MiB/)
    assert.ok(written.heldPeak > 5_000_000, JSON.stringify(written.heldPeak))
    // the mark-compacts the lab forced by reading the heap profile, counted apart
    assert.match(stdout, /the main thread's mark-compacts: \d+, of them the lab's \(each forced by a read of the heap profile\): \d+/)
    assert.ok(written.collections.labMarkCompacts >= 1 && written.collections.labMarkCompacts <= written.collections.markCompacts, JSON.stringify(written.collections))
    const sum = written.sites.reduce(function add (total, s) { return total + s.allocatedBytes }, 0)
    assert.ok(sum <= written.allocatedBytes + 1, `the lines allocated ${sum} of ${written.allocatedBytes}`)
    const summary = JSON.parse(await fs.promises.readFile(path.join(dir, 'profile.json'), 'utf8'))
    assert.equal(summary.sites.windows, written.windows)
  })

  it('refuses --clinic beside --fallback, and on a mode that is not heap', function () {
    assert.throws(function both () { readProfileArgs(['heap', 'bad', '--clinic', '--fallback']) }, /one or the other/)
    assert.throws(function flame () { readProfileArgs(['flame', 'bad', '--clinic']) }, /--clinic is for heap/)
  })

  it('writes a .heapprofile of the lab itself (not the supervisor) with heap --fallback', async function () {
    const dir = path.join(out, 'heap')
    const { stdout } = await run(process.execPath, [CLI, 'heap', 'good', '--fallback', '--size', '200KB', '--amount', '20', '--connections', '2', '--out', dir])
    assert.match(stdout, /heap good: node --heap-prof/)
    assert.match(stdout, /load: 20 answers 2xx of 20 requests \(20 x 200\)/)
    assert.match(stdout, /\.heapprofile {2}Chrome DevTools, Memory tab: "Load profile"/)

    const profile = JSON.parse(await fs.promises.readFile(await mainThreadFile(dir, '.heapprofile'), 'utf8'))
    assert.equal(profile.head.callFrame.functionName, '(root)')
    // one sample per 32 KiB allocated: hundreds, where Node's default 512 KiB gives a few dozen
    assert.ok(profile.samples.length > 100, `${profile.samples.length} allocation samples`)
    const frames = framesOf(profile.head)
    // what the app factory built is still held when the profile is written
    assert.ok(frames.some(function built (f) { return f.functionName === 'createApp' && f.url.endsWith(APP_PATH) }), 'createApp in the tree')
    // no assertion on /good's own frames: --heap-prof keeps the samples of what was still live when the
    // lab exited (docs/profiling.md), and whether one of the load's collected buffers is among them is luck
    assert.ok(!frames.some(fromLab('/lib/supervisor/supervisor.js')), 'no supervisor frames')

    const summary = JSON.parse(await fs.promises.readFile(path.join(dir, 'profile.json'), 'utf8'))
    assert.equal(summary.tool, 'node --heap-prof')
    assert.equal(summary.load.ok, 20)
    assert.equal(summary.load.non2xx, 0)
    assert.equal(summary.clinic.reason, 'skipped (--fallback)')
    const memory = await fs.promises.readFile(path.join(dir, 'memory.csv'), 'utf8')
    // the server's RSS over time is read from /proc: Linux only, outside portable mode (docs/install.md)
    if (procAvailable()) assert.match(memory, /^ms,rss_bytes,peak_rss_bytes\n\d+,\d+,\d+\n/)
    else assert.equal(memory, 'ms,rss_bytes,peak_rss_bytes\n\n')
    assert.ok(!fs.existsSync(path.join(dir, 'lab-data')), 'the lab\'s data directory is gone')
  })

  it('writes a .cpuprofile whose nodes include the buffered route with flame --fallback', async function () {
    const dir = path.join(out, 'flame')
    const { stdout } = await run(process.execPath, [CLI, 'flame', 'bad', '--fallback', '--size', '500KB', '--amount', '40', '--connections', '2', '--out', dir])
    assert.match(stdout, /flame bad: node --cpu-prof/)
    assert.match(stdout, /\.cpuprofile {3}Chrome DevTools, Performance panel/)

    const profile = JSON.parse(await fs.promises.readFile(await mainThreadFile(dir, '.cpuprofile'), 'utf8'))
    assert.ok(profile.nodes.length > 0)
    assert.equal(profile.samples.length, profile.timeDeltas.length)
    assert.ok(profile.endTime > profile.startTime)
    const frames = profile.nodes.map(function frame (node) { return node.callFrame })
    assert.ok(frames.some(fromLab('/lib/ingest/buffered.js')), 'POST /bad\'s code was sampled')
  })

  it('writes heap snapshots before, during and after the load with snapshot', async function () {
    const dir = path.join(out, 'snapshot')
    const { stdout } = await run(process.execPath, [CLI, 'snapshot', 'upload-stream', '--size', '200KB', '--amount', '20', '--connections', '2', '--out', dir])
    assert.match(stdout, /\.heapsnapshot Chrome DevTools, Memory tab/)
    const names = (await fs.promises.readdir(dir)).filter(function isSnapshot (n) { return n.endsWith('.heapsnapshot') })
    assert.deepEqual(names.sort(), ['1-before-load.heapsnapshot', '2-during-load.heapsnapshot', '3-after-load.heapsnapshot'])
    for (const name of names) {
      const snapshot = JSON.parse(await fs.promises.readFile(path.join(dir, name), 'utf8'))
      assert.ok(snapshot.snapshot.node_count > 1000, `${name}: ${snapshot.snapshot.node_count} nodes`)
      // named closures make snapshots readable: the upload route's handler is one of them
      assert.ok(snapshot.strings.includes('answerUpload'), `${name} holds the lab's answerUpload`)
    }
    // every upload the load made was deleted, with the lab's own data directory
    assert.ok(!fs.existsSync(path.join(dir, 'lab-data')))
  })

  it('exits 2 with the usage for an unknown mode', async function () {
    await assert.rejects(run(process.execPath, [CLI, 'xray', 'good']), function check (err) {
      assert.equal(err.code, 2)
      assert.match(err.stderr, /unknown mode "xray": try doctor, heap, flame, snapshot/)
      assert.match(err.stderr, /Usage: npm run profile -- <mode> <route>/)
      return true
    })
  })

  it('exits 2 with the usage for an unknown or missing route', async function () {
    await assert.rejects(run(process.execPath, [CLI, 'heap', 'worse']), function check (err) {
      assert.equal(err.code, 2)
      assert.match(err.stderr, /unknown route "worse": try bad, good, upload-buffer, upload-stream/)
      return true
    })
    await assert.rejects(run(process.execPath, [CLI, 'heap']), function check (err) {
      assert.equal(err.code, 2)
      assert.match(err.stderr, /a route is needed after "heap"/)
      return true
    })
  })

  it('reads sensible defaults: a 10 MB body, 10 connections, 20 s, under test-data/profiles/', function () {
    const args = readProfileArgs(['doctor', 'bad'], new Date('2026-01-02T03:04:05.678Z'))
    assert.deepEqual(
      { size: args.size, connections: args.connections, duration: args.duration, amount: args.amount, fallback: args.fallback },
      { size: 10e6, connections: 10, duration: 20, amount: 0, fallback: false })
    assert.equal(args.out, path.join(DEFAULTS.dataDir, 'profiles', 'doctor-bad-2026-01-02T03-04-05-678Z'))
    assert.throws(function zeroConnections () { readProfileArgs(['heap', 'good', '--connections', '0']) }, /--connections takes an integer of 1 or more/)
  })

  it('does not try clinic doctor on Node >= 21.7, and tries heapprofiler and flame anywhere', function () {
    assert.equal(clinicRefusal('doctor', '20.19.0'), null)
    assert.equal(clinicRefusal('doctor', '21.6.2'), null)
    assert.match(clinicRefusal('doctor', '21.7.0'), /clinic doctor is broken on Node >= 21.7/)
    assert.match(clinicRefusal('doctor', '24.11.0'), /this is 24.11.0/)
    assert.equal(clinicRefusal('heap', '24.11.0'), null)
    assert.equal(clinicRefusal('flame', '24.11.0'), null)
    assert.match(clinicRefusal('snapshot', '20.19.0'), /Node's own/)
  })
})
