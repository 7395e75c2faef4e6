/**
 * npm run bench -- hostile: its options, the rows it measures (an attack on
 * the ingest routes on its own route and on the textbook route
 * /streamparser-json), its verdict, and the docs page that names every
 * attack. A tiny run end to end is test/slow/hostile-run.test.js's.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { fileURLToPath } from 'node:url'
import zlib from 'node:zlib'
import { normalizeHostileOptions } from '../scripts/hostile/params.js'
import { hostileTable, judge } from '../scripts/hostile/verdict.js'
import { attackRows } from '../scripts/hostile/attacks.js'
import { normalize as normalizeBench, usage } from '../scripts/hostile/bench.js'
import { parseByteSize } from '../lib/util/units.js'
import { readCrashes } from '../scripts/hostile/lab.js'

const DOC = fileURLToPath(new URL('../docs/hostile.md', import.meta.url))
const MiB = 1024 * 1024

/** What the usage says a flag is in a full run and with --quick: `(default 8, quick 2)`. */
function usageValues (flag) {
  const line = usage.split('\n').find(function declares (l) { return l.startsWith(`  --${flag} `) })
  const [, full, quick] = /\(default (\S+), quick (\S+)\)$/.exec(line)
  return { full, quick }
}

describe('npm run bench -- hostile', function () {
  describe('options', function () {
    it('takes the full sizes by default and the quick ones with --quick, flags overriding either', function () {
      const full = normalizeHostileOptions({})
      assert.equal(String(full.records), usageValues('records').full)
      assert.deepEqual(full.attacks, normalizeHostileOptions({ attacks: '1,2,3,4,5,6,7,8,9' }).attacks, 'every attack of every group')
      const quick = normalizeHostileOptions({ quick: true, bombs: '1', 'drip-for': '500ms' })
      assert.equal(quick.recordBytes, parseByteSize(usageValues('record-bytes').quick))
      assert.equal(quick.bombs, 1)
      assert.equal(quick.dripForMs, 500)
    })

    it('reads attacks by group number and id, in the order they run', function () {
      assert.deepEqual(normalizeHostileOptions({ attacks: 'drip-clients,1' }).attacks,
        ['dense-objects', 'dense-arrays', 'dense-numbers', 'drip-clients'])
    })

    it('reads the ingest routes to attack, in the order tables show them, or none given', function () {
      assert.equal(normalizeHostileOptions({}).routes, null)
      assert.deepEqual(normalizeHostileOptions({ routes: 'streamparser-json,/good' }).routes, ['good', 'streamparser-json'])
    })

    it('sends the ratio bombs in every codec this Node has, or those --bomb-codecs names, in their order', function () {
      const here = typeof zlib.zstdCompressSync === 'function' ? ['gzip', 'deflate', 'br', 'zstd'] : ['gzip', 'deflate', 'br']
      assert.deepEqual(normalizeHostileOptions({}).bombCodecs, here)
      assert.deepEqual(normalizeHostileOptions({ 'bomb-codecs': 'br,gzip' }).bombCodecs, ['gzip', 'br'])
      assert.throws(function () { normalizeHostileOptions({ 'bomb-codecs': 'lzma' }) }, /--bomb-codecs takes gzip, deflate, br, zstd/)
      if (!here.includes('zstd')) assert.throws(function () { normalizeHostileOptions({ 'bomb-codecs': 'zstd' }) }, /no zstd in zlib \(Node 22\.15 and later\)/)
    })

    it('answers a TypeError naming the flag for a bad value', function () {
      assert.throws(function () { normalizeHostileOptions({ attacks: 'nine' }) }, /--attacks/)
      assert.throws(function () { normalizeHostileOptions({ routes: 'fast' }) }, /--routes takes bad, good, express-json, streamparser-json/)
      assert.throws(function () { normalizeBench({ attacks: 'dense-objects', routes: 'bad' }) }, /--routes bad leaves none of dense-objects to run/)
      assert.throws(function () { normalizeHostileOptions({ 'bomb-bytes': 'huge' }) }, /--bomb-bytes/)
      assert.throws(function () { normalizeHostileOptions({ 'server-flag': ['--port=80'] }) }, /--server-flag/)
    })

    it('never changes the caller\'s object', function () {
      const values = Object.freeze({ quick: true, records: '3' })
      assert.equal(normalizeHostileOptions(values).records, 3)
    })
  })

  describe('rows', function () {
    it('replays each attack on the ingest routes on the textbook route, beside its own', function () {
      const rows = attackRows(['dense-objects', 'ratio-bombs', 'metrics-flood'])
      assert.deepEqual(rows.map(function shown (r) { return [r.label, r.target, r.judged] }), [
        ['dense-objects', 'POST /good', true],
        ['dense-objects (/streamparser-json)', 'POST /streamparser-json', true],
        ['ratio-bombs', 'POST /bad', false],
        ['ratio-bombs (/streamparser-json)', 'POST /streamparser-json', true],
        ['metrics-flood', 'GET /metrics (SSE)', false]
      ])
      assert.ok(rows.every(function run (r) { return r.skip === null }))
    })

    it('keeps the rows of the routes asked for, and the attacks on no ingest route', function () {
      const rows = attackRows(['abandoned-uploads', 'big-bad-body', 'disk-fill'], ['bad', 'streamparser-json'])
      assert.deepEqual(rows.map(function label (r) { return r.label }), [
        'abandoned-uploads (/streamparser-json)', 'big-bad-body', 'big-bad-body (/streamparser-json)', 'disk-fill'
      ])
    })

    it('skips a route that does not read what the attack sends, and says why', function () {
      const ndjson = { 'ndjson-flood': { id: 'ndjson-flood', title: 'dense records, as NDJSON', group: 1, routes: ['good', 'express-json', 'streamparser-json'], sends: 'ndjson', run: function unused () {} } }
      const rows = attackRows(['ndjson-flood'], null, ndjson)
      assert.equal(rows[0].skip, null)
      assert.equal(rows[1].skip, '/express-json reads json and array, not the ndjson this attack sends')
      assert.equal(rows[2].skip, '/streamparser-json reads json and array, not the ndjson this attack sends')
      const judged = { ...rows[2], ...judge({ label: rows[2].label, skipped: rows[2].skip }) }
      assert.equal(judged.verdict, 'skipped: /streamparser-json reads json and array, not the ndjson this attack sends')
      assert.match(hostileTable([{ ...judged, group: 1 }]), /\| 1\. ndjson-flood \(\/streamparser-json\) +\| n\/a +\| n\/a .*\| skipped: /)
    })
  })

  describe('verdict', function () {
    const measured = {
      judged: true,
      idleRss: 90 * MiB,
      peakRss: 100 * MiB,
      kills: 0,
      labAlive: true,
      probe: { status: 200, ms: 12, label: '200', errorType: null },
      inFlight: { requestsInFlight: 0, waitedMs: 5, error: null },
      diskAdded: 0
    }

    it('holds with no kill, nothing in flight, an answer and growth within the bound', function () {
      assert.equal(judge(measured, 64 * MiB).verdict, 'held')
      const busy = { ...measured, probe: { status: 503, ms: 3, label: '503 server.busy', errorType: 'server.busy' } }
      assert.equal(judge(busy, 64 * MiB).verdict, 'held')
    })

    it('is BROKEN, with every reason, otherwise', function () {
      const row = {
        ...measured,
        peakRss: 500 * MiB,
        kills: 2,
        probe: { status: 0, ms: 30000, label: 'timeout', errorType: null },
        inFlight: { requestsInFlight: 3, waitedMs: 5000, error: null }
      }
      const { verdict, reasons } = judge(row, 64 * MiB)
      assert.match(verdict, /^BROKEN: /)
      assert.equal(reasons.length, 4, reasons.join('; '))
      assert.equal(judge({ ...row, judged: false, kills: 0, probe: measured.probe, inFlight: measured.inFlight }, 64 * MiB).verdict, 'held')
    })

    it('counts a crash told twice once', function () {
      const output = 'streamlab: worker 7 killed: RSS 1.1 GiB passed the 1 GiB budget while POST /bad was in flight; restarting at once\n' +
        'streamlab: worker 7 killed: RSS 1.1 GiB passed the 1 GiB budget while POST /bad was in flight; restarted in 80 ms (worker pid 9)\n'
      assert.equal(readCrashes(output).kills, 1)
    })
  })

  it('docs/hostile.md names every attack', async function () {
    const doc = await fs.promises.readFile(DOC, 'utf8')
    for (const id of normalizeHostileOptions({}).attacks) assert.ok(doc.includes(`\`${id}\``), id)
    assert.match(doc, /## Results\n[\s\S]*\| attack +\| worker kills/, 'the results table is there')
  })
})
