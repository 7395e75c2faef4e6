/**
 * The allocation site and its window (lib/allocation/site.js), the one shape the samplers, the
 * metrics, a run record, the dashboard and the grader share: its kinds, its key, its reader.
 */
import assert from 'node:assert/strict'
import { SITE_KINDS, lineKey, readSite, readWindow, siteKey, siteLine, windowAllocated } from '../../lib/allocation/site.js'

const MiB = 1024 * 1024

function site (more = {}) {
  return { thread: 'main', functionName: 'readWhole', file: 'lib/ingest/read.js', line: 41, column: 3, kind: 'buffer', allocatedBytes: MiB, heldBytes: null, samples: 2, ...more }
}

describe('an allocation site (lib/allocation/site.js)', function () {
  it('knows every kind a sampler names: V8\'s heap, a Buffer, a string made of bytes, a text parsed whole', function () {
    assert.deepEqual(SITE_KINDS, ['heap', 'buffer', 'string', 'parsed'])
  })

  it('tells sites apart by thread, kind, place and function, and a line by file and line alone', function () {
    assert.equal(siteKey(site()), siteKey(site({ allocatedBytes: 5 * MiB, samples: 9 })))
    for (const other of [{ thread: 'parse thread 1' }, { kind: 'heap' }, { line: 42 }, { column: 4 }, { functionName: 'f' }, { file: 'x.js' }]) {
      assert.notEqual(siteKey(site()), siteKey(site(other)), JSON.stringify(other))
    }
    const { kind, ...kindless } = site()
    assert.equal(siteKey(kindless, kind), siteKey(site()), 'a kind given apart, for a site that does not carry it yet')
    assert.equal(lineKey(site({ kind: 'heap', thread: 'parse thread 2', functionName: 'g' })), lineKey(site()))
    assert.equal(siteLine(site()), 'lib/ingest/read.js:41 readWhole')
    assert.equal(siteLine(site({ file: null, line: null })), '(no file):? readWhole')
  })

  it('reads a site from untrusted input: its known members, strings bounded, null for what is not one', function () {
    const read = readSite({ ...site(), file: 'x'.repeat(5000), extra: 'dropped', thread: undefined })
    assert.equal(read.file.length, 2000)
    assert.equal(read.thread, 'main')
    assert.equal('extra' in read, false)
    for (const bad of [null, [], { ...site(), kind: 'stack' }, { ...site(), allocatedBytes: -1 }, { ...site(), allocatedBytes: '1' }]) {
      assert.equal(readSite(bad), null, JSON.stringify(bad))
    }
    assert.deepEqual(readSite(site({ heldBytes: 'lots', line: 1.5, samples: -3 })), site({ heldBytes: null, line: null, samples: 0 }))
  })

  it('reads a window as a run keeps it: when it closed, its sites, each kind\'s totals, and what it allocated in all', function () {
    const totals = { buffer: { allocatedBytes: 3 * MiB, heldBytes: 0, samples: 6 }, omitted: { count: 0 } }
    const window = readWindow({ at: 5000, windowMs: 2000, intervalBytes: 2 * MiB, sites: [site(), { kind: 'nope' }], totals })
    assert.deepEqual(window, {
      time: 5000,
      windowMs: 2000,
      intervalBytes: 2 * MiB,
      routes: [],
      sites: [site()],
      totals: { heap: null, buffer: totals.buffer, string: null, parsed: null }
    })
    assert.equal(windowAllocated(window), 3 * MiB, 'the totals, where they say more than the sites')
    assert.equal(windowAllocated({ ...window, totals: {} }), MiB, 'the sites, where the totals say less')
    assert.equal(readWindow({ sites: [] }), null, 'no time')
    assert.equal(readWindow({ sites: [] }, 7).time, 7)
    assert.equal(readWindow({ at: 1, sites: 'none' }), null)
  })
})
