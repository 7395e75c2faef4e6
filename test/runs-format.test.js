/**
 * The run record (lib/runs/format.js, record.js, timeline.js; docs/runs.md): what the lab writes
 * reads back the same, a file that is no record of this format is refused with an error naming
 * the field at fault, strings stay data, and a long busy run stays within its size with its
 * peaks kept. The recorder and the runs folder: runs-recorder.test.js; GET /runs:
 * runs-routes.test.js; compare: runs-compare.test.js.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import { DEFAULTS } from '../lib/config/options.js'
import { RECORD_MAX_BYTES, RUN_FORMAT, RUN_KIND, readRunRecord } from '../lib/runs/format.js'
import { TIMELINE_DEFAULTS, createTimeline, thinGcEvents, thinSamples } from '../lib/runs/timeline.js'
import { makeRecord, recordText } from '../lib/runs/record.js'
import { fakeSample, makeTestRecord, routesResult } from './runs-helpers.js'

const MiB = 1024 * 1024

/** The error readRunRecord throws for `text`, checked to be run.invalid. */
function refusal (text) {
  try {
    readRunRecord(text, 'spec.json')
  } catch (err) {
    assert.equal(err.type, 'run.invalid', err.message)
    assert.equal(err.status, 422)
    return err
  }
  assert.fail('the record was read')
}

/** A record's text with one change made to its parsed form. */
function altered (change) {
  const { record } = makeTestRecord()
  change(record)
  return JSON.stringify(record)
}

describe('run records (lib/runs/format.js)', function () {
  describe('the format', function () {
    it('reads back what the lab writes: format 1, what ran, where, its results and its timeline', function () {
      const { record, text } = makeTestRecord({
        requests: [
          { phase: 'start', id: 7, route: 'good', time: 1_790_000_000_150, compressedBytes: 4000 },
          { phase: 'end', id: 7, route: 'good', time: 1_790_000_000_250, status: 200, ms: 100, heldPeak: 9000, held: { read: 4000, parse: 5000 }, bounds: { read: 376832 } }
        ]
      })
      const read = readRunRecord(text)
      assert.deepEqual(read, record)
      assert.equal(read.format, RUN_FORMAT)
      assert.equal(read.kind, RUN_KIND)
      assert.deepEqual(read.run.routes, ['bad', 'good'])
      assert.equal(read.where.node, process.version)
      assert.equal(typeof read.where.portable, 'boolean')
      assert.equal(read.where.lab.name, 'streamlab')
      assert.equal(read.timeline.samples.length, 2)
      assert.deepEqual(Object.keys(read.timeline.samples[0].heapSpaces), ['read_only_space', 'new_space', 'old_space', 'code_space', 'large_object_space'])
      assert.deepEqual(read.timeline.spans, [{ id: 7, route: 'good', start: 1_790_000_000_150, end: 1_790_000_000_250, compressedBytes: 4000, status: 200, ms: 100, heldPeak: 9000, held: { read: 4000, parse: 5000 }, bounds: { read: 376832 } }])
      assert.deepEqual(read.timeline.marks, [{ time: 1_790_000_000_000, kind: 'peak-reset', label: 'peak reset' }])
      assert.equal(read.timeline.thinned, null)
    })

    it('keeps the app options a figure depends on, and nothing secret', function () {
      const timeline = createTimeline({ interval: 100 }).toRecord()
      const record = makeRecord({ id: 'x', experiment: 'ingest', params: {}, status: 'done', source: 'engine', startedAt: 1, endedAt: 2, results: null, error: null, options: { limits: { record: 1 }, guard: { accessToken: 'secret-secret-secret' }, database: { url: 'postgres://u:p@h/d' }, parseThreads: 2 } }, timeline)
      assert.deepEqual(record.where.options, { limits: { record: 1 }, parseThreads: 2 })
      assert.doesNotMatch(JSON.stringify(record), /secret|postgres/)
    })

    it('keeps a failed run\'s error, with no results', function () {
      const { text } = makeTestRecord({ status: 'failed', results: null, error: { status: 500, type: 'internal', message: 'the module broke' } })
      const read = readRunRecord(text)
      assert.equal(read.run.status, 'failed')
      assert.deepEqual(read.error, { status: 500, type: 'internal', message: 'the module broke' })
    })
  })

  describe('a file that is no record', function () {
    it('is refused when it is not JSON, naming (json)', function () {
      const err = refusal('{"format": 1, ')
      assert.equal(err.details.field, '(json)')
      assert.match(err.message, /^spec\.json is not a run record this lab reads: \(json\) is not JSON/)
    })

    it('is refused when it is another program\'s JSON, naming kind', function () {
      assert.equal(refusal('{"format": 1, "items": []}').details.field, 'kind')
      assert.equal(refusal('[1, 2, 3]').details.field, '(record)')
    })

    it('is refused when a later lab wrote it, naming format', function () {
      const err = refusal(altered(function later (r) { r.format = 2 }))
      assert.equal(err.details.field, 'format')
      assert.match(err.details.problem, /is 2; this lab reads format 1/)
    })

    it('is refused past RECORD_MAX_BYTES before it is parsed, naming (file)', function () {
      const err = refusal(' '.repeat(RECORD_MAX_BYTES + 1))
      assert.equal(err.details.field, '(file)')
    })

    it('names the member at fault, deep in the timeline', function () {
      const cases = [
        [function badRss (r) { r.timeline.samples[1].rss = '95 MiB' }, 'timeline.samples[1].rss', /is not a number/],
        [function backwards (r) { r.timeline.samples[1].time = 0 }, 'timeline.samples[1].time', /earlier than the sample before it/],
        [function badSpace (r) { r.timeline.samples[0].heapSpaces.old_space = null }, 'timeline.samples[0].heapSpaces.old_space', /is not a number/],
        [function badSpan (r) { r.timeline.spans = [{ id: 1, route: 'good', start: 'then', end: null }] }, 'timeline.spans[0].start', /is not a number/],
        [function badMark (r) { r.timeline.marks[0].label = { html: '<b>' } }, 'timeline.marks[0].label', /is not a string/],
        [function badGc (r) { r.timeline.gc[1].heapAfter = '3 MiB' }, 'timeline.gc[1].heapAfter', /is not a number or null/],
        [function pathId (r) { r.id = '../../etc/passwd' }, 'id', /is not a run id/],
        [function badStatus (r) { r.run.status = 'running' }, 'run.status', /is not one of done, failed, cancelled/],
        [function badCores (r) { r.where.cores = 0 }, 'where.cores', /positive integer/],
        [function badTable (r) { r.results.tables[0].rows[1].unit = 'furlongs' }, 'results', /tables\[0\]\.rows\[1\]\.unit "furlongs"/]
      ]
      for (const [change, field, problem] of cases) {
        const err = refusal(altered(change))
        assert.equal(err.details.field, field, change.name)
        assert.match(err.details.problem, problem, change.name)
        assert.ok(err.message.includes(field), `${change.name}: the message names ${field}`)
      }
    })
  })

  describe('strings are data', function () {
    it('reads markup and script in any string back as the same text, and lets no key reach a prototype', function () {
      const markup = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
      const text = altered(function hostile (r) {
        r.run.title = markup
        r.timeline.marks[0].label = markup
        r.results.tables[0].columns[0].label = markup
        r.run.params = JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}}')
      })
      const read = readRunRecord(text)
      assert.equal(read.run.title, markup)
      assert.equal(read.timeline.marks[0].label, markup)
      assert.equal(read.results.tables[0].columns[0].label, markup)
      assert.equal({}.polluted, undefined)
      assert.equal(Object.prototype.polluted, undefined)
    })
  })

  describe('the size of a record (docs/runs.md, "How big")', function () {
    it('thins samples by time buckets, keeping in each the lowest and the highest RSS and the most heap', function () {
      const samples = Array.from({ length: 1000 }, function sample (_, k) { return { time: k * 100, rss: 100 + (k % 7), heapUsed: k === 501 ? 1e9 : 10 } })
      samples[333].rss = 10_000
      samples[666].rss = 1
      const kept = thinSamples(samples, 100)
      assert.ok(kept.length <= 100, `${kept.length} kept`)
      for (const k of [0, 333, 501, 666, 999]) assert.ok(kept.includes(samples[k]), `sample ${k} kept`)
      assert.deepEqual(kept.map(function time (s) { return s.time }), [...kept.map(function time (s) { return s.time })].sort(function byNumber (a, b) { return a - b }))
    })

    it('keeps a 10-minute run sampled every 100 ms, 16 uploads in flight throughout, under 4 MiB with its peak', function () {
      this.timeout(20000)
      const start = 1_790_000_000_000
      const peakAt = 4321
      const samples = Array.from({ length: 6000 }, function sample (_, k) {
        return fakeSample(start + k * 100, (k === peakAt ? 900 : 80 + (k % 50)) * MiB, { requests: 16 })
      })
      const requests = []
      for (let k = 0; k < 10_000; k++) {
        requests.push({ phase: 'start', id: k, route: k % 2 ? 'bad' : 'good', time: start + k * 60, compressedBytes: 1e6 })
        requests.push({ phase: 'end', id: k, route: k % 2 ? 'bad' : 'good', time: start + k * 60 + 50, status: 200, ms: 50, heldPeak: 1e6 + k, held: { read: 1e6 }, bounds: {} })
      }
      const { text, record } = makeTestRecord({ samples, requests })
      const bytes = Buffer.byteLength(text)
      assert.ok(bytes <= RECORD_MAX_BYTES, `${(bytes / MiB).toFixed(2)} MiB`)
      const { thinned } = record.timeline
      assert.equal(thinned.samples.seen, 6000)
      assert.equal(thinned.samples.kept, record.timeline.samples.length)
      assert.equal(thinned.spans.seen, 10_000)
      assert.ok(record.timeline.samples.some(function isPeak (s) { return s.rss === 900 * MiB }), 'the peak sample is kept')
      assert.ok(record.timeline.samples.every(function fewRequests (s) { return s.requests.length <= 8 && s.requestsOmitted.count === 8 }))
      assert.ok(record.timeline.spans.some(function largest (s) { return s.heldPeak === 1e6 + 9998 }), 'the largest /good span is kept')
      readRunRecord(text)
    })

    it('keeps the collections beside the samples, and past maxGcEvents every mark-compact, then evenly spaced scavenges', function () {
      const start = 1_790_000_000_000
      const samples = Array.from({ length: 3000 }, function sample (_, k) { return fakeSample(start + k * 100, 80 * MiB) })
      for (let k = 0; k < 10; k++) {
        const s = samples[k * 300 + 7]
        s.gcEvents = [...s.gcEvents, { at: s.time - 10, kind: 'mark-compact', ms: 40 + k, heapBefore: 300 * MiB, heapAfter: 30 * MiB }]
      }
      const { text, record } = makeTestRecord({ samples })
      const { gc, thinned } = record.timeline
      assert.equal(gc.length, TIMELINE_DEFAULTS.maxGcEvents)
      assert.deepEqual(thinned.gc, { seen: 3010, kept: TIMELINE_DEFAULTS.maxGcEvents })
      assert.deepEqual(gc.filter(function full (e) { return e.kind === 'mark-compact' }).map(function ms (e) { return e.ms }), [40, 41, 42, 43, 44, 45, 46, 47, 48, 49])
      assert.ok(gc.at(-1).at - gc[0].at > 280_000, 'the scavenges kept span the run')
      assert.deepEqual(gc.map(function at (e) { return e.at }), gc.map(function at (e) { return e.at }).sort(function byNumber (a, b) { return a - b }))
      assert.ok(record.timeline.samples.every(function noEvents (s) { return s.gcEvents === undefined && s.gc.count === 1 }))
      assert.deepEqual(readRunRecord(text).timeline.gc, gc)
      assert.equal(thinGcEvents(gc, 5000), gc, 'nothing thinned under the bound')
    })

    it('reads a record with no collections in its timeline, as the lab wrote them before it kept them', function () {
      const read = readRunRecord(altered(function older (r) { delete r.timeline.gc; r.timeline.samples.forEach(function bare (s) { delete s.gcEvents }) }), 'older.json')
      assert.equal(read.timeline.gc, undefined)
      assert.equal(read.timeline.samples.length, 2)
    })

    it('is what docs/runs.md says: its bounds are the code\'s', function () {
      const page = fs.readFileSync(new URL('../docs/runs.md', import.meta.url), 'utf8').replace(/\s+/g, ' ')
      assert.ok(page.includes(`At most ${RECORD_MAX_BYTES / MiB} MiB (\`RECORD_MAX_BYTES\``))
      assert.ok(page.includes(`past ${TIMELINE_DEFAULTS.maxSamples} samples`))
      assert.ok(page.includes(`keeps the ${TIMELINE_DEFAULTS.maxRequests} ingest requests`))
      assert.ok(page.includes(`past ${TIMELINE_DEFAULTS.maxSpans} spans`))
      assert.ok(page.includes(`past ${TIMELINE_DEFAULTS.maxMarks} marks`))
      assert.ok(page.includes(`past ${TIMELINE_DEFAULTS.maxGcEvents} garbage collections`))
      assert.ok(page.includes(`past ${TIMELINE_DEFAULTS.maxSiteWindows} site windows`))
      assert.ok(page.includes(`the last ${DEFAULTS.runs.keep} (\`runs.keep\``))
    })

    it('thins the timeline further when a record would pass RECORD_MAX_BYTES, and refuses results too large to fit', function () {
      const timeline = createTimeline({ interval: 100 })
      for (let k = 0; k < 500; k++) timeline.addSample(fakeSample(k * 100, 80 * MiB))
      const build = function build (bounds) {
        return makeRecord({ id: 'x', experiment: 'ingest', params: {}, status: 'done', source: 'engine', startedAt: 0, endedAt: 1, results: null, error: null, options: null }, timeline.toRecord(bounds))
      }
      const text = recordText(build, 100_000)
      assert.ok(Buffer.byteLength(text) <= 100_000)
      assert.ok(JSON.parse(text).timeline.samples.length < 500)
      const big = routesResult({ good: { peak: 1, mbps: 1, p99: 1 } })
      big.caption = 'x'.repeat(200_000)
      assert.throws(function tooBig () {
        recordText(function withBigResults (bounds) { return { ...build(bounds), results: big } }, 100_000)
      }, /results alone take over 100000 bytes/)
    })
  })
})
