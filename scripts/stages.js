#!/usr/bin/env node
/**
 * Where the bytes are (docs/metrics.md): one body into each route, each on a fresh lab watched through
 * GET /metrics: what each stage held at the request's peak, the most at any sample against its bound,
 * and how far V8's heap spaces and the array buffers rose.
 */
import fs from 'node:fs'
import { list, readScriptFlags } from '../lib/measure/args.js'
import { keepFigures, log, measureStart, runScript } from './cli.js'
import { startLabProcess } from '../lib/measure/lab-process.js'
import { postBody } from '../lib/measure/post-body.js'
import { openEventStream } from '../lib/measure/event-stream.js'
import { ensureInput } from '../lib/measure/inputs.js'
import { markdownTable } from '../lib/measure/table.js'
import { createBomb } from '../lib/generate/bombs.js'
import { parseByteSize, formatMiB, formatBytes } from '../lib/util/units.js'

/** How long after an answer the heap spaces are still read. */
const AFTER_MS = 1000
const ROUTES = Object.freeze(['bad', 'good', 'express-json', 'streamparser-json'])
/** The bomb of the zip-bomb lesson: 10 GB of JSON in about 10 MB of gzip (lib/generate/bombs.js). */
const BOMB = Object.freeze({ variant: 'ratio', bytes: 10_000_000_000 })

const USAGE = `Usage: npm run stages -- [options]
  --size SIZE        inflated size of the generated document (default 100MB)
  --routes LIST      routes, each on a fresh lab: ${ROUTES.join(', ')} (default bad,good)
  --bomb             also send the ratio zip bomb (10 GB in ~10 MB of gzip) into each route
  --interval MS      the /metrics stream's interval while measuring, 10 to 5000 (default 20)
  --figures NAME     also write docs/figures/NAME.json and NAME.md
  -h, --help`

function readOptions (argv) {
  const flags = readScriptFlags(argv, {
    size: { type: 'string', default: '100MB' },
    routes: { type: 'string', default: 'bad,good' },
    bomb: { type: 'boolean', default: false },
    interval: { type: 'string', default: '20' }
  })
  if (flags === null) return null
  const { values, integer } = flags
  const routes = list(values.routes, function route (name) {
    if (!ROUTES.includes(name)) throw new TypeError(`--routes takes ${ROUTES.join(', ')}, got "${name}"`)
    return name
  })
  const interval = integer('interval', 10, 5000)
  return { bytes: parseByteSize(values.size), routes, bomb: values.bomb, interval, figures: values.figures }
}

async function post (url, route, body, headers) {
  const { status, text } = await postBody(`${url}/${route}`, body, headers)
  return { status, answer: parseOrNull(text) }
}

function parseOrNull (text) {
  try {
    return JSON.parse(text)
  } catch {
    return null // not the lab's JSON: the status alone is reported
  }
}

/** The rise of each heap space, arrayBuffers, external and RSS over `samples`, from `before`. */
function rises (before, samples) {
  const out = { rss: 0, arrayBuffers: 0, external: 0, heapSpaces: {} }
  for (const sample of samples) {
    for (const key of ['rss', 'arrayBuffers', 'external']) out[key] = Math.max(out[key], sample[key] - before[key])
    for (const [space, bytes] of Object.entries(sample.heapSpaces)) {
      out.heapSpaces[space] = Math.max(out.heapSpaces[space] ?? 0, bytes - (before.heapSpaces[space] ?? 0))
    }
  }
  return out
}

/** The most each stage held at any sample, and whether every sample kept within the bounds. */
function sampledStages (samples, id) {
  const most = {}
  let withinBounds = true
  let seen = 0
  for (const sample of samples) {
    const request = sample.requests.find(function mine (r) { return r.id === id })
    if (request === undefined) continue
    seen++
    for (const [stage, bytes] of Object.entries(request.held)) {
      most[stage] = Math.max(most[stage] ?? 0, bytes)
      if (request.bounds[stage] !== undefined && bytes > request.bounds[stage]) withinBounds = false
    }
  }
  return { most, withinBounds, samplesSeen: seen }
}

/** One body into one route on a fresh lab: its answer and where its bytes were. */
async function measureOne (route, body, interval, log) {
  const lab = await startLabProcess()
  let stream = null
  try {
    stream = await openEventStream(`${lab.url}/metrics?interval=${interval}`)
    const first = await stream.waitFor(isSample, 10_000)
    // settle: the last sample before the request is the baseline
    await new Promise(function settle (resolve) { setTimeout(resolve, 10 * interval) })
    const from = stream.events.length
    const baseline = stream.events.findLast(isSample)?.data ?? first.data
    log(`/${route}: ${body.label} ...`)
    const { status, answer } = await post(lab.url, route, body.streams(), body.headers)
    const end = await stream.waitFor(function ended (e) {
      return e.event === 'request' && e.data.phase === 'end' && e.data.route === route
    }, 60_000)
    // what a buffering route made is garbage after its answer, but V8 holds it until its next
    // collection: the heap spaces are read for a second after the answer too
    await new Promise(function linger (resolve) { setTimeout(resolve, AFTER_MS) })
    const samples = stream.events.slice(from).filter(isSample).map(function data (e) { return e.data })
    const sampled = sampledStages(samples, end.data.id)
    return {
      route,
      body: body.kind,
      status,
      errorType: answer?.error?.type ?? null,
      inflatedBytes: answer?.summary?.inflatedBytes ?? null,
      held: end.data.held,
      heldPeak: end.data.heldPeak,
      bounds: end.data.bounds,
      sampledMost: sampled.most,
      samplesSeen: sampled.samplesSeen,
      withinBounds: sampled.withinBounds,
      rise: rises(baseline, samples)
    }
  } finally {
    stream?.close()
    await lab.stop()
  }
}

function isSample (event) {
  return event.event === 'sample'
}

function stagesText (bytes) {
  return Object.entries(bytes).map(function part ([stage, n]) { return `${stage} ${formatMiB(n)}` }).join(', ')
}

function table (cells) {
  const rows = cells.map(function row (c) {
    const rose = [formatMiB(c.rise.heapSpaces.large_object_space ?? 0), formatMiB(c.rise.arrayBuffers), formatMiB(c.rise.rss)]
    const held = [stagesText(c.held), formatMiB(c.heldPeak), c.withinBounds ? 'yes' : 'NO']
    return [`/${c.route}`, c.body, c.status, c.errorType ?? '', ...held, ...rose]
  })
  return markdownTable(['route', 'body', 'status', 'error', 'held at the peak, by stage', 'in all', 'within bounds',
    'large-object space rose', 'array buffers rose', 'RSS rose'], rows) +
    '\nHeld: each stage at the moment their sum was highest (the request\'s end event). ' +
    'Within bounds: every sample of /good\'s stages under their bounds. ' +
    `Rises: the most above the sample before the request, until ${AFTER_MS / 1000} s after its answer.\n`
}

async function measure (options) {
  const meta = measureStart()
  const input = await ensureInput({ bytes: options.bytes }, log)
  const bodies = [{
    kind: 'items',
    label: `${formatBytes(options.bytes)} of generated JSON`,
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': input.compressedBytes },
    streams: function fileStreams () { return [fs.createReadStream(input.file)] }
  }]
  if (options.bomb) {
    const probe = createBomb(BOMB)
    bodies.push({
      kind: 'bomb',
      label: `the ratio bomb (${formatBytes(probe.inflatedBytes)} in ${formatBytes(probe.compressedBytes)})`,
      headers: { ...probe.uploadHeaders, 'content-length': probe.compressedBytes },
      streams: function bombStreams () { return createBomb(BOMB).streams }
    })
  }
  const cells = []
  for (const body of bodies) {
    for (const route of options.routes) cells.push(await measureOne(route, body, options.interval, log))
  }
  const markdown = `${formatBytes(options.bytes)} of generated JSON (${formatBytes(input.compressedBytes)} gzip)` +
    `${options.bomb ? ' and the ratio bomb' : ''}, each into a fresh lab, sampled every ${options.interval} ms.\n\n${table(cells)}\n`
  process.stdout.write(`\n${markdown}`)
  await keepFigures('stages', options.figures, {
    title: 'Where the bytes are: each stage of each route at its peak',
    meta,
    markdown,
    data: { options: { ...options, figures: undefined }, input: { bytes: options.bytes, compressedBytes: input.compressedBytes }, cells }
  })
  return cells.every(function answered (c) { return c.status !== 500 }) ? 0 : 1
}

runScript('stages', { usage: USAGE, readOptions, run: measure })
