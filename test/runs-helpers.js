/**
 * Run records for the runs specs (runs-format, runs-compare, runs-recorder, runs-routes):
 * samples shaped as the sampler makes them, and whole records made the way the lab makes
 * them (lib/runs/record.js), with the figures a spec chooses.
 */
import { createTimeline } from '../lib/runs/timeline.js'
import { makeRecord, recordText } from '../lib/runs/record.js'

const MiB = 1024 * 1024

/**
 * A sample as lib/metrics/sampler.js makes one.
 * @param {number} time
 * @param {number} rss
 * @param {{ requests?: number, heapUsed?: number }} [more] `requests`: ingest requests in flight, each holding some bytes
 */
export function fakeSample (time, rss, { requests = 0, heapUsed = 20 * MiB } = {}) {
  return {
    time,
    seq: time,
    interval: 100,
    rss,
    heapTotal: 40 * MiB,
    heapUsed,
    external: 2 * MiB,
    arrayBuffers: MiB,
    heapSpaces: { read_only_space: 0, new_space: 2 * MiB, old_space: 14 * MiB, code_space: MiB, large_object_space: 3 * MiB },
    peakRss: rss,
    peakSource: 'VmHWM',
    eventLoop: { p50: 0.1, p99: 1.2, max: 3.4, utilization: 0.25 },
    gc: { count: 1, pauseMs: 0.8 },
    gcEvents: [{ at: time - 50, kind: 'scavenge', ms: 0.8, heapBefore: heapUsed + MiB, heapAfter: heapUsed }],
    gcEventsOmitted: 0,
    requests: Array.from({ length: requests }, function request (_, k) {
      return {
        id: k + 1,
        route: k % 2 === 0 ? 'good' : 'bad',
        held: { read: 65536 * (k + 1), inflate: 65536, records: 4096, parse: 131072 },
        bounds: { read: 376832, inflate: 1114112 },
        unread: ['the parsed records on the parse threads\' heaps']
      }
    }),
    requestsOmitted: { count: 0, bytes: 0 }
  }
}

/**
 * The results of an ingest run as the contract has them: a routes table.
 * @param {Record<string, { peak: number, mbps: number, p99: number, avg?: number }>} routes
 */
export function routesResult (routes) {
  const names = Object.keys(routes)
  function row (field, label, unit, value) {
    return { field, label, unit, values: Object.fromEntries(names.map(function of (r) { return [r, value(routes[r])] })) }
  }
  return {
    caption: '10,000,000 bytes, json, concurrency 1, 1 upload per route',
    tables: [{
      name: 'routes',
      columns: names.map(function column (r) { return { key: r, label: `POST /${r}`, route: r } }),
      rows: [
        row('ok', 'Uploads answered 200', 'text', function ok () { return '1 / 1' }),
        row('mbPerSecond', 'Throughput', 'MB/s', function mbps (r) { return r.mbps }),
        row('peakAboveIdle', 'Server peak above idle', 'MiB', function peak (r) { return r.peak }),
        row('latency', 'Latency avg / p99', 'ms', function latency (r) { return [r.avg ?? r.p99, r.p99] })
      ]
    }],
    verdicts: [{ verdict: 'identical', ok: true, text: 'Answers identical.' }],
    server: { idleRss: 60 * MiB, peakRss: 90 * MiB, peakAboveIdle: 30 * MiB, peakSource: 'VmHWM', peakReset: true }
  }
}

/**
 * A record made as the lab makes one.
 * @param {{ id?: string, experiment?: string, status?: string, source?: string, startedAt?: number, params?: object,
 *   results?: object|null, error?: object|null, samples?: object[], requests?: object[], marks?: Array<[number, string, string]>,
 *   bounds?: object }} [what] `bounds`: the timeline's (createTimeline)
 * @returns {{ record: object, text: string }}
 */
export function makeTestRecord (what = {}) {
  const startedAt = what.startedAt ?? 1_790_000_000_000
  const timeline = createTimeline({ interval: 100, ...what.bounds })
  // in time order, as the recorder hears them: a site window goes to the routes in flight
  const heard = [
    ...(what.samples ?? [fakeSample(startedAt + 100, 80 * MiB), fakeSample(startedAt + 200, 95 * MiB)]).map(function sample (s) { return { time: s.time, add: function add () { timeline.addSample(s) } } }),
    ...(what.requests ?? []).map(function request (e) { return { time: e.time, add: function add () { timeline.addRequest(e) } } }),
    ...(what.siteWindows ?? []).map(function sites (w) { return { time: w.at, add: function add () { timeline.addSiteWindow(w) } } })
  ]
  for (const event of heard.sort(function byTime (x, y) { return x.time - y.time })) event.add()
  for (const [time, kind, label] of what.marks ?? [[startedAt, 'peak-reset', 'peak reset']]) timeline.addMark(time, kind, label)
  const text = recordText(function build (bounds) {
    return makeRecord({
      id: what.id ?? 'run-a',
      experiment: what.experiment ?? 'ingest',
      title: 'Buffered vs streamed gzip ingest',
      params: what.params ?? { route: 'both', bytes: 10_000_000, concurrency: 1 },
      status: what.status ?? 'done',
      source: what.source ?? 'engine',
      startedAt,
      endedAt: startedAt + 1000,
      results: what.results === undefined ? routesResult({ bad: { peak: 60 * MiB, mbps: 40, p99: 300 }, good: { peak: 4 * MiB, mbps: 80, p99: 150 } }) : what.results,
      error: what.error ?? null,
      options: { limits: { inflated: 500 * MiB }, parseThreads: 2 }
    }, timeline.toRecord(bounds))
  })
  return { record: JSON.parse(text), text }
}

/**
 * A record of a run with load in it, as the replay and the export draw it: samples every 100 ms
 * whose RSS rises to `peak` above 80 MiB and falls back, with the bytes in array buffers and
 * large-object space, and an upload per route in turn, each with what its stages held at their peak.
 * @param {{ id?: string, peak?: number, routes?: string[], startedAt?: number }} [what]
 * @returns {{ record: object, text: string }}
 */
export function makeBusyRecord ({ id = 'busy-run', peak = 200 * MiB, routes = ['bad', 'good'], startedAt = 1_790_000_000_000 } = {}) {
  const count = 60
  const samples = []
  for (let k = 0; k < count; k++) {
    // one rise and fall per route, the first route's to the peak, the next ones' a tenth of it
    const slot = Math.floor(k / (count / routes.length))
    const phase = (k % (count / routes.length)) / (count / routes.length)
    const rise = Math.round(Math.sin(Math.PI * phase) * (slot === 0 ? peak : peak / 10) / 4096) * 4096
    const sample = fakeSample(startedAt + 50 + k * 100, 80 * MiB + rise, { heapUsed: 20 * MiB + rise / 2 })
    sample.arrayBuffers = MiB + rise / 2
    sample.external = 2 * MiB + rise / 2
    sample.heapSpaces = { ...sample.heapSpaces, large_object_space: 3 * MiB + rise / 2 }
    sample.peakRss = 80 * MiB + Math.round((slot === 0 ? peak : peak / 10) / 4096) * 4096
    // the first route's fall: a mark-compact frees half its rise
    if (k === 20) sample.gcEvents = [...sample.gcEvents, { at: sample.time - 30, kind: 'mark-compact', ms: 35, heapBefore: 20 * MiB + peak / 2, heapAfter: 20 * MiB + peak / 4 }]
    samples.push(sample)
  }
  const requests = []
  const width = count * 100 / routes.length
  routes.forEach(function upload (route, k) {
    const start = startedAt + 100 + k * width
    const held = k === 0 ? { read: 20 * MiB, inflate: 100 * MiB, parse: 80 * MiB } : { read: 65536, inflate: 65536, records: 4096, parse: 131072 }
    const heldPeak = Object.values(held).reduce(function sum (a, b) { return a + b }, 0)
    requests.push({ phase: 'start', id: k + 1, route, time: start, compressedBytes: 4_000_000 })
    requests.push({ phase: 'end', id: k + 1, route, time: start + width - 300, status: 200, ms: width - 300, heldPeak, held, bounds: k === 0 ? {} : { read: 376832, inflate: 1114112 } })
  })
  const results = routesResult(Object.fromEntries(routes.map(function figures (route, k) { return [route, { peak: k === 0 ? peak : peak / 10, mbps: 40 * (k + 1), p99: 300 / (k + 1) }] })))
  return makeTestRecord({ id, startedAt, samples, requests, results, marks: [[startedAt, 'peak-reset', 'peak reset'], [startedAt + 100, 'stage', `load /${routes[0]}`]] })
}

/** Markup that runs script if a page ever parses it as HTML rather than drawing it as text. */
export const MARKUP = '<img src=x onerror="window.__xss=1">'

/**
 * A record whose strings are markup: a route name, the title, a parameter, a mark's label and a
 * results column. A page that draws it must show each as text and run nothing.
 */
export function makeMarkupRecord () {
  const { record } = makeBusyRecord({ id: 'markup-run', routes: [MARKUP, 'good'] })
  record.run.title = `</script><script>window.__xss = 2</script>${MARKUP}`
  record.run.params = { ...record.run.params, note: `<script>window.__xss = 3</script>${MARKUP}` }
  record.timeline.marks.push({ time: record.run.startedAt + 200, kind: 'stage', label: MARKUP })
  record.results.tables[0].columns[0].label = `POST ${MARKUP}`
  return { record, text: JSON.stringify(record) }
}

/** A site as the sampler names one (lib/metrics/alloc-sites.js). */
export function site (kind, where, functionName, allocatedMiB, heldMiB, thread = 'main') {
  const [file, line] = where.split(/:(?=\d+$)/)
  return { thread, functionName, file, line: Number(line), column: 3, kind, allocatedBytes: allocatedMiB * MiB, heldBytes: heldMiB === null ? null : heldMiB * MiB, samples: Math.ceil(allocatedMiB * 2) }
}

/** A bus `sites` event: a 2 s window of these sites, closed at `more.at`. */
export function sitesWindow (sites, more = {}) {
  return { intervalBytes: 2 * 1024 * 1024, windowMs: 2000, threads: ['main', 'parse thread 1'], sites, totals: { heap: null, buffer: null, omitted: { count: 0, allocatedBytes: 0, heldBytes: 0 } }, heapErrors: {}, ...more }
}

/**
 * An ingest run of /bad then /good with allocation sites: a window every 2 s, two during /bad's
 * upload, one while /bad ended and /good began (it goes to neither route), one during /good's.
 * @param {{ id?: string, functionName?: string, badScale?: number }} [what] `functionName`: /bad's
 *   top site's; `badScale`: /bad's figures times this (a run after a fix)
 */
export function makeSitesRecord ({ id = 'sites-run', functionName = 'parseWhole', badScale = 1 } = {}) {
  const startedAt = 1_790_000_000_000
  const k = badScale
  const windows = new Map([
    [2000, [site('buffer', 'lib/ingest/read.js:41', 'readWhole', 30 * k, 30 * k), site('heap', 'lib/ingest/buffered.js:120', functionName, 10 * k, 10 * k)]],
    [4000, [site('heap', 'lib/ingest/buffered.js:120', functionName, 150 * k, 160 * k), site('buffer', 'lib/ingest/gzip-framing.js:88', 'decodeWhole', 100 * k, 100 * k), site('buffer', 'lib/ingest/read.js:41', 'readWhole', 0, 30 * k)]],
    [6000, [site('buffer', 'node:zlib:600', 'processCallback', 5, 0.25)]],
    [8000, [site('buffer', 'node:zlib:600', 'processCallback', 40, 0.25), site('heap', 'lib/json/records.js:200', 'flush', 8, 1), site('heap', 'lib/parse/worker.js:30', 'parseBatch', 20, null, 'parse thread 1')]]
  ])
  const samples = Array.from({ length: 90 }, function sample (_, j) {
    return fakeSample(startedAt + (j + 1) * 100, (j < 42 ? 80 + j * 7 : 84) * MiB)
  })
  const siteWindows = [...windows].map(function closed ([t, sites]) { return sitesWindow(sites, { at: startedAt + t }) })
  const requests = [
    { phase: 'start', id: 1, route: 'bad', time: startedAt + 100 },
    { phase: 'end', id: 1, route: 'bad', time: startedAt + 4100, status: 200, ms: 4000, heldPeak: 290 * MiB },
    { phase: 'start', id: 2, route: 'good', time: startedAt + 4300 },
    { phase: 'end', id: 2, route: 'good', time: startedAt + 8300, status: 200, ms: 4000, heldPeak: 2 * MiB }
  ]
  const results = routesResult({ bad: { peak: 300 * MiB * k, mbps: 25, p99: 4000 }, good: { peak: 4 * MiB, mbps: 25, p99: 4000 } })
  return makeTestRecord({ id, startedAt, samples, requests, siteWindows, results, marks: [[startedAt, 'peak-reset', 'peak reset'], [startedAt + 4100, 'stage', 'load /bad'], [startedAt + 8300, 'stage', 'load /good']] })
}
