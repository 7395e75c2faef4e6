/**
 * "Where the bytes are" and the per-request bars, in Chromium against a real
 * lab on port 0 (test/dashboard-session.js): one body of 100 MB inflated,
 * sent to /bad and then to /good. Under /bad, large-object space and the
 * array buffers rise by over 100 MiB; under /good, by a few MiB. The bars
 * show /bad's peak at more than the body's inflated size (the compressed
 * body, the inflated Buffer and the string are alive at once), and /good's
 * stages within their bounds. Then the exports carry the new series, the
 * PNG holds the new charts, and projector mode thickens them.
 *
 * The lab runs in this process, so the client must not add Buffers of its
 * own while it sends: the body is made before the page measures anything,
 * and written whole, never copied.
 */
/* global window, document -- the functions given to page.evaluate and waitForFunction run in the page */
import assert from 'node:assert/strict'
import http from 'node:http'
import { setTimeout as delay } from 'node:timers/promises'
import { generatedGzip } from '../helpers.js'
import { MiB, dashboardSession, downloadFrom, mib } from '../dashboard-session.js'

const INFLATED = 100_000_000
/** The layers a buffered body lands in: its string (new, then old large-object space) and its Buffers. */
const BODY_LAYERS = Object.freeze(['heap_new_large_object_space', 'heap_large_object_space', 'arrayBuffers'])
/**
 * What /good may add to those layers: its bars stay under a MiB, but the Buffers it let go of
 * count in `arrayBuffers` until the collector runs. The spec prints what it saw.
 */
const GOOD_RISE_MAX = 32 * MiB

/** POST the body whole (one write, no copy) and read the JSON answer. */
function upload (url, body) {
  return new Promise(function send (resolve, reject) {
    const req = http.request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/gzip', 'content-length': body.length } }, function answered (res) {
      const parts = []
      res.on('data', function keep (chunk) { parts.push(chunk) })
      res.on('end', function done () { resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(parts).toString()) }) })
    })
    req.on('error', reject)
    req.end(body)
  })
}

/**
 * Runs in the page: from the chart's points (MiB), the sum of `keys` at the last sample at or
 * before `start`, and its highest from `start` to `until`.
 */
function riseInPage ({ keys, start, until }) {
  const layers = window.streamlab.bytes.layers
  // the store's series share their times: one point per sample in each
  const series = keys.map(function points (key) { return layers.find(function byKey (l) { return l.key === key })?.points ?? [] })
  const times = layers[0]?.points ?? []
  let before = null
  let highest = null
  for (let i = 0; i < times.length; i++) {
    const x = times[i].x
    let sum = 0
    for (const s of series) sum += s[i]?.y ?? 0
    if (x <= start) before = sum
    else if (x <= until && (highest === null || sum > highest)) highest = sum
  }
  return { before, highest }
}

describe('the dashboard in Chromium: where the bytes are', function () {
  this.timeout(180_000)
  // room for the whole body on /bad (the session's own limit is 64 MiB)
  const session = dashboardSession({ limits: { inflated: 128 * MiB } })
  let lab
  let page
  let problems
  let body
  const requests = new Map()
  const answers = {}
  /** In-flight /good bars seen while it ran. */
  const goodInFlight = []

  before(async function sendBothRoutes () {
    ({ lab, page, problems } = session)
    body = await generatedGzip({ bytes: INFLATED, format: 'json', seed: 35, level: 1 })
    lab.app.locals.events.on('request', function noteTimes (event) {
      const r = requests.get(event.id) ?? { route: event.route }
      r[event.phase] = event.time
      requests.set(event.id, r)
    })
    // samples every 20 ms: the page sees the Buffers grow while the body is read and inflated
    await page.goto(`${lab.url}/?interval=20&test=1&projector=0`)
    await page.waitForFunction(function liveWithSpaces () {
      return window.streamlab?.state === 'live' && window.streamlab.samples >= 25 && window.streamlab.bytes.spaces.length > 0
    })
    await delay(500)
    answers.bad = await upload(`${lab.url}/bad`, body)
    await delay(1500)
    const good = upload(`${lab.url}/good`, body)
    let done = false
    good.then(function stopWatching () { done = true }, function stopWatching () { done = true })
    while (!done) {
      const bars = await page.evaluate(function readBars () { return window.streamlab.requestBars.bars })
      goodInFlight.push(...bars.filter(function goodLive (b) { return b.route === 'good' && !b.peak }))
      await delay(100)
    }
    answers.good = await good
    // the chart holds a second past the end of both
    const last = Math.max(...[...requests.values()].map(function ended (r) { return r.end ?? 0 }))
    await page.waitForFunction(function pastTheEnd (until) { return window.streamlab.latest >= until }, last + 1000, { timeout: 30_000 })
  })

  it('answers both uploads: the same body, whole', function () {
    for (const route of ['bad', 'good']) assert.equal(answers[route].status, 200, JSON.stringify(answers[route].body))
    assert.ok(answers.bad.body.summary.inflatedBytes >= INFLATED)
    assert.deepEqual(answers.good.body.summary, answers.bad.body.summary)
  })

  it('stacks V8\'s heap spaces by their V8 names, then array buffers and other external, under RSS as a line', async function () {
    const { spaces, windowMax, layers, sample } = await page.evaluate(function readLayers () {
      // a redraw now, so that the layers drawn and the window's figures are of the same samples
      window.streamlab.inject([])
      const bytes = window.streamlab.bytes
      return {
        spaces: bytes.spaces,
        windowMax: bytes.windowMax,
        layers: bytes.layers.map(function head (l) { return { key: l.key, label: l.label, stacked: l.stacked } }),
        sample: window.streamlab.lastSample
      }
    })
    // the names the running Node gives, in its order
    assert.deepEqual(spaces, Object.keys(sample.heapSpaces))
    const heap = layers.filter(function isHeap (l) { return l.key.startsWith('heap_') })
    assert.deepEqual(heap.map(function key (l) { return l.key }), heap.map(function fromLabel (l) { return `heap_${l.label}` }))
    // every space that held bytes in the window, none that stayed at 0
    assert.deepEqual(heap.map(function label (l) { return l.label }), spaces.filter(function held (s) { return windowMax[s] > 0 }))
    assert.ok(heap.some(function lo (l) { return l.label === 'large_object_space' }))
    assert.deepEqual(layers.slice(heap.length).map(function key (l) { return [l.key, l.stacked] }),
      [['arrayBuffers', true], ['otherExternal', true], ['rss', false]])
    assert.ok(heap.every(function stacked (l) { return l.stacked }))
  })

  it('shows /bad\'s body in large-object space and array buffers, over 100 MiB, and /good adding under a third of that', async function () {
    const rises = {}
    for (const [id, r] of requests) {
      const { before, highest } = await page.evaluate(riseInPage, { keys: BODY_LAYERS, start: r.start, until: r.end + 1000 })
      assert.ok(before !== null && highest !== null, `request ${id} on /${r.route}: no samples around it`)
      rises[r.route] = (highest - before) * MiB
    }
    console.log(`      large-object spaces + array buffers rose ${mib(rises.bad)} under /bad, ${mib(rises.good)} under /good`)
    assert.ok(rises.bad > 100 * MiB, `under /bad: ${mib(rises.bad)}`)
    assert.ok(rises.good < GOOD_RISE_MAX, `under /good: ${mib(rises.good)}`)
    assert.deepEqual(problems, [])
  })

  it('draws /bad\'s peak bar past 0.8 times the inflated size, and /good\'s stages under their bound ticks', async function () {
    const state = await page.evaluate(function readBars () { return window.streamlab.requestBars })
    assert.equal(state.scale, 'linear')
    assert.match(state.title.join(' '), /linear scale/)
    const bad = state.bars.find(function badPeak (b) { return b.route === 'bad' && b.peak })
    assert.ok(bad, JSON.stringify(state.bars))
    assert.match(bad.label, /^\/bad #\d+ · peak \(ended\)$/)
    assert.ok(bad.total > 0.8 * answers.bad.body.summary.inflatedBytes, `/bad held ${mib(bad.total)} at its peak`)
    assert.deepEqual(bad.bounds, {}, '/bad bounds nothing')
    const good = state.bars.find(function goodPeak (b) { return b.route === 'good' && b.peak })
    assert.ok(good, JSON.stringify(state.bars))
    assert.ok(Object.keys(good.bounds).length > 0, JSON.stringify(good))
    for (const bar of [good, ...goodInFlight]) {
      for (const [stage, bytes] of Object.entries(bar.held)) {
        if (stage in bar.bounds) assert.ok(bytes <= bar.bounds[stage], `/good ${stage}: ${bytes} of ${bar.bounds[stage]} (${bar.peak ? 'peak' : 'in flight'})`)
      }
    }
    assert.ok(state.boundTicks >= Object.keys(good.bounds).length, `${state.boundTicks} ticks`)
    console.log(`      bars: /bad ${mib(bad.total)} peak, /good ${mib(good.total)} peak; ${goodInFlight.length} in-flight /good bars seen`)

    // the log axis: both bars' stages visible, and the chart says which axis it is
    await page.click('#held-log')
    await page.waitForFunction(function logScale () { return window.streamlab.requestBars.scale === 'logarithmic' })
    const log = await page.evaluate(function readBars () { return window.streamlab.requestBars })
    assert.match(log.title.join(' '), /log scale/)
    assert.equal(await page.getAttribute('#held-log', 'aria-pressed'), 'true')
    await page.click('#held-log')
    await page.waitForFunction(function linearScale () { return window.streamlab.requestBars.scale === 'linear' })
    assert.deepEqual(problems, [])
  })

  it('exports the heap spaces and what the requests held, in CSV and JSON, and the new charts in the PNG', async function () {
    const csv = (await downloadFrom(page, '#export-csv')).bytes.toString('utf8').trim().split('\n')
    const header = csv[0].split(',')
    assert.deepEqual(header.slice(0, 10), ['time', 'isoTime', 'rss', 'heapTotal', 'heapUsed', 'external', 'arrayBuffers', 'peakRss', 'eventLoopP99Ms', 'eventLoopMaxMs'])
    for (const column of ['heap_old_space', 'heap_large_object_space']) assert.ok(header.includes(column), column)
    // /good streamed for seconds with a sample every 20 ms: it was caught in flight
    const heldColumns = header.filter(function held (c) { return c.startsWith('held_good_') })
    assert.ok(heldColumns.length > 0, csv[0])
    const rows = csv.slice(1).map(function cells (line) { return line.split(',') })
    assert.ok(rows.every(function sameWidth (cells) { return cells.length === header.length }))
    const at = header.indexOf(heldColumns[0])
    assert.ok(rows.some(function holding (cells) { return Number(cells[at]) > 0 }), heldColumns[0])

    const doc = JSON.parse((await downloadFrom(page, '#export-json')).bytes.toString('utf8'))
    const last = doc.samples[doc.samples.length - 1]
    assert.ok(Number.isInteger(last.heapSpaces.large_object_space), JSON.stringify(last.heapSpaces))
    const caught = doc.samples.find(function goodInFlight (s) { return s.requests.some(function good (r) { return r.route === 'good' }) })
    assert.ok(caught, 'a sample with /good in flight')
    const entry = caught.requests.find(function good (r) { return r.route === 'good' })
    assert.ok(Number.isInteger(entry.id) && Object.keys(entry.held).length > 0, JSON.stringify(entry))

    // the memory chart and the bars on a row, "where the bytes are" under them
    const png = (await downloadFrom(page, '#export-png')).bytes
    assert.deepEqual([...png.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47])
    const size = { width: png.readUInt32BE(16), height: png.readUInt32BE(20) }
    const canvases = await page.evaluate(function canvasSizes () {
      const size = {}
      for (const id of ['memory-chart', 'held-chart', 'bytes-chart']) {
        const c = document.getElementById(id)
        size[id] = { width: c.width, height: c.height }
      }
      return size
    })
    assert.ok(size.width >= canvases['memory-chart'].width + canvases['held-chart'].width, `${JSON.stringify(size)} ${JSON.stringify(canvases)}`)
    assert.ok(size.height >= canvases['memory-chart'].height + canvases['bytes-chart'].height, `${JSON.stringify(size)} ${JSON.stringify(canvases)}`)
    assert.deepEqual(problems, [])
  })

  it('keeps the new charts legible in projector mode: thicker lines and ticks, larger type, the bars full width', async function () {
    const before = await page.evaluate(function readLook () {
      return { font: window.Chart.defaults.font.size, layers: Object.fromEntries(window.streamlab.bytes.layers.map(function width (l) { return [l.key, l.width] })) }
    })
    await page.click('#projector')
    await page.waitForFunction(function projectorOn () { return window.streamlab.projector && window.streamlab.requestBars.projector })
    const on = await page.evaluate(function readLook () {
      return {
        font: window.Chart.defaults.font.size,
        layers: Object.fromEntries(window.streamlab.bytes.layers.map(function width (l) { return [l.key, l.width] }))
      }
    })
    assert.ok(on.font > before.font, `${on.font} > ${before.font}`)
    for (const [key, width] of Object.entries(before.layers)) assert.equal(on.layers[key], width * 2, key)
    // the bars go between the charts, as wide as the memory chart, once Chart.js has resized them
    await page.waitForFunction(function barsFullWidth () {
      const width = function width (id) { return document.getElementById(id).getBoundingClientRect().width }
      return Math.abs(width('held-chart') - width('memory-chart')) < 2
    })
    await page.click('#projector')
    await page.waitForFunction(function projectorOff () { return !window.streamlab.projector })
    assert.deepEqual(problems, [])
  })
})
