/**
 * lib/allocation/ without HTTP, its options for a process whose heap cannot be sampled (the
 * grader's student process): `strings` names the line that decodes a body's bytes into a string
 * or parses a text whole, and `preferFiles` names the caller's line in the folders preferred
 * rather than the library's that allocated. Each spec allocates hundreds of sampling intervals
 * (test/units/alloc-sites.test.js says why that is enough).
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { Buffer } from 'node:buffer'
import { fileURLToPath } from 'node:url'
import { createAllocationSampler } from '../../lib/allocation/sampler.js'
import { stringsWrapped } from '../../lib/allocation/strings.js'
import { joinAll } from '../fixtures/alloc/library.js'

const KiB = 1024
const MiB = 1024 * KiB
const THIS_FILE = 'test/units/alloc-sites-strings.test.js'
const SOURCE = fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n')
const HERE = path.dirname(fileURLToPath(import.meta.url))

function lineOf (text) {
  const at = SOURCE.findIndex(function holds (line) { return line.includes(text) })
  assert.notEqual(at, -1, text)
  return at + 1
}

/** 16 MiB of JSON text as 256 Buffer chunks. */
function jsonChunks () {
  const chunk = Buffer.from(`[${'"abcdefghijklmnop",'.repeat(3449)}"q"]`.padEnd(64 * KiB, ' '))
  return Array.from({ length: 256 }, function copy () { return Buffer.from(chunk) })
}

function sitesAt (window, line) {
  return window.sites.filter(function at (site) { return site.file === THIS_FILE && site.line === line })
}

describe('createAllocationSampler: strings and preferFiles', function () {
  let sampler = null
  afterEach(function stopSampler () {
    sampler?.stop()
    sampler = null
  })

  it('names the line that appends Buffer chunks to a string, and the line that parses bytes whole, as string sites; a string parsed, as parsed', function () {
    sampler = createAllocationSampler({ intervalBytes: 64 * KiB, heap: false, strings: true })
    sampler.start()
    let text = ''
    const parsed = []
    for (const chunk of jsonChunks()) {
      text += chunk // the string site
      parsed.push(JSON.parse(chunk)) // the parse site
    }
    for (const doc of parsed) JSON.parse(JSON.stringify(doc)) // the text parsed
    const window = sampler.window()
    assert.equal(text.length, 16 * MiB)
    for (const marker of ['// the string site', '// the parse site']) {
      const [site] = sitesAt(window, lineOf(marker))
      assert.ok(site, `${marker}: ${JSON.stringify(window.sites)}`)
      assert.equal(site.kind, 'string')
      assert.equal(site.heldBytes, null)
      assert.ok(site.allocatedBytes > 10 * MiB && site.allocatedBytes < 24 * MiB, `${site.allocatedBytes}`)
    }
    // its text was made by JSON.stringify, which is not wrapped: counted where it is read, as read
    const [read] = sitesAt(window, lineOf('// the text parsed'))
    assert.ok(read, JSON.stringify(window.sites))
    assert.equal(read.kind, 'parsed')
    assert.ok(read.allocatedBytes > 10 * MiB && read.allocatedBytes < 24 * MiB, `${read.allocatedBytes}`)
    assert.ok(window.totals.string.allocatedBytes > 20 * MiB, JSON.stringify(window.totals))
  })

  it('puts the string makers back when it stops, and keeps a window without strings as it was', function () {
    const originals = [Buffer.prototype.toString, TextDecoder.prototype.decode, JSON.parse]
    sampler = createAllocationSampler({ intervalBytes: 64 * KiB, heap: false, strings: true })
    sampler.start()
    assert.equal(stringsWrapped(), true)
    sampler.stop()
    assert.equal(stringsWrapped(), false)
    assert.deepEqual([Buffer.prototype.toString, TextDecoder.prototype.decode, JSON.parse], originals)
    const plain = createAllocationSampler({ intervalBytes: 64 * KiB, heap: false })
    plain.start()
    assert.equal(Object.hasOwn(plain.window().totals, 'string'), false)
    plain.stop()
  })

  it('names the caller\'s line in the folder preferred, not the library\'s line that allocated', function () {
    sampler = createAllocationSampler({ intervalBytes: 64 * KiB, heap: false, preferFiles: [HERE] })
    const plain = createAllocationSampler({ intervalBytes: 64 * KiB, heap: false })
    sampler.start()
    plain.start()
    const joined = []
    for (let k = 0; k < 32; k++) joined.push(joinAll(jsonChunks().slice(0, 16))) // the caller's line
    const preferred = sampler.window()
    const first = plain.window()
    plain.stop()
    assert.equal(joined.length, 32)
    const [site] = sitesAt(preferred, lineOf('// the caller\'s line'))
    assert.ok(site, JSON.stringify(preferred.sites))
    assert.equal(site.kind, 'buffer')
    assert.ok(first.sites.some(function inLibrary (s) { return s.file === 'test/fixtures/alloc/library.js' && s.functionName === 'joinAll' }), JSON.stringify(first.sites))
  })

  it('refuses preferFiles that are not absolute folders', function () {
    assert.throws(function relative () { createAllocationSampler({ preferFiles: ['lib'] }) }, /preferFiles must be null or a non-empty array of absolute folder paths/)
    assert.throws(function empty () { createAllocationSampler({ preferFiles: [] }) }, /preferFiles/)
    assert.throws(function notBoolean () { createAllocationSampler({ strings: 'yes' }) }, /option strings must be a boolean/)
  })
})
