/**
 * The profiler's "where each thread's CPU went": a sample counts for the first kind of work its
 * stack names from the leaf up, so a native call with no file (JSON.parse, postMessage) counts
 * for the lab code that made it, and V8's own entries (idle, the collector) for themselves.
 */
import assert from 'node:assert/strict'
import { summarizeProfile, summaryLines } from '../../scripts/profile/cpu-summary.js'

const LAB = 'file:///lab/lib'

/** A .cpuprofile of the given stacks (root first), each sampled for its ms. */
function profileOf (stacks) {
  const nodes = [{ id: 1, callFrame: { functionName: '(root)', url: '' }, children: [] }]
  const samples = []
  const timeDeltas = [0]
  for (const { frames, ms } of stacks) {
    let parent = nodes[0]
    for (const [functionName, url] of frames) {
      const node = { id: nodes.length + 1, callFrame: { functionName, url }, children: [] }
      nodes.push(node)
      parent.children.push(node.id)
      parent = node
    }
    for (let k = 0; k < ms; k++) {
      samples.push(parent.id)
      timeDeltas.push(1000)
    }
  }
  return { nodes, samples, timeDeltas: timeDeltas.slice(0, samples.length) }
}

describe('scripts/profile/cpu-summary.js', function () {
  it('puts a native leaf under the lab code that called it, and idle apart from busy', function () {
    const summary = summarizeProfile(profileOf([
      { frames: [['(idle)', '']], ms: 50 },
      { frames: [['onBatch', `${LAB}/parse/parse-thread.js`], ['parseBatch', `${LAB}/parse/parse-batch.js`], ['parse', '']], ms: 30 },
      { frames: [['parseBatch', `${LAB}/parse/parse-batch.js`], ['slice', 'node:buffer']], ms: 20 },
      { frames: [['tallyRecord', `${LAB}/parse/tally.js`]], ms: 5 },
      { frames: [['(garbage collector)', '']], ms: 10 },
      { frames: [['run', `${LAB}/parse/record-sink.js`], ['postMessage', '']], ms: 8 },
      { frames: [['write', `${LAB}/json/records.js`], ['scanValue', `${LAB}/json/records.js`]], ms: 12 },
      { frames: [['countChunk', `${LAB}/ingest/count.js`], ['update', 'node:internal/crypto/hash']], ms: 4 },
      { frames: [['somethingElse', 'file:///elsewhere.js']], ms: 1 }
    ]))
    const ms = Object.fromEntries(summary.kinds.map(function entry (k) { return [k.kind, k.ms] }))
    // each sample lasts until the next one: the last sample's length is unknown and not counted
    assert.deepEqual(ms, { idle: 50, parse: 30, decode: 20, tally: 5, collections: 10, messages: 8, 'find records': 12, digest: 4, other: 0 })
    assert.equal(summary.ms, 139)
    assert.equal(summary.busyMs, 89)
    assert.deepEqual(summary.kinds.map(function kind (k) { return k.kind }).slice(0, 3), ['idle', 'parse', 'decode'])
  })

  it('prints busy time and each kind over 1 % of it, idle left out', function () {
    const lines = summaryLines('main thread', { ms: 2000, busyMs: 1000, kinds: [{ kind: 'idle', ms: 1000 }, { kind: 'find records', ms: 600 }, { kind: 'digest', ms: 395 }, { kind: 'other', ms: 5 }] })
    assert.deepEqual(lines, [
      'main thread: busy 1.00 s of 2.00 s profiled',
      '    find records             0.60 s   60 %',
      '    digest                   0.40 s   40 %'
    ])
  })

  it('refuses what is no .cpuprofile', function () {
    assert.throws(function notAProfile () { summarizeProfile({ nodes: [] }) }, /nodes, samples and timeDeltas/)
  })
})
