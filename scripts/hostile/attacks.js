/**
 * The attacks on the bounded-memory promise (docs/hostile.md), one function each: given a context
 * (AttackContext), each answers what its own requests got. Every loop is bounded in count and time,
 * every request goes to the lab on 127.0.0.1. An attack on the ingest routes is replayed on each
 * route it lists, a fresh lab a row; a route that does not read what it sends gets a row saying so.
 */
import fs from 'node:fs'
import path from 'node:path'
import zlib from 'node:zlib'
import { performance } from 'node:perf_hooks'
import { createBomb } from '../../lib/generate/bombs.js'
import { createGzipStream } from '../../lib/generate/items.js'
import { INGEST_ROUTES } from '../../lib/ingest/contenders.js'
import { formatBytes } from '../../lib/util/units.js'
import { ATTACK_GROUPS } from './params.js'
import { denseDocument, repeatedBytes, tinyGoodBody, writeGzipPrefix } from './bodies.js'
import { prepareRatioBombs, prepareWideBodies, prepareWindowBombs, wideWindows, windowBombs } from './window-attacks.js'
import { boundedPool, brief, countLabels, countsText, outcomeLabel, pause } from './outcomes.js'

export { outcomeLabel } from './outcomes.js'

/**
 * @typedef {{ url: string, params: object, input: any, clients: object, probeAfter: (ms: number) => Promise<object>,
 *   signal: AbortSignal, timeLeft: () => number, route: string|null }} AttackContext
 *   `input`: what `prepare` made, or null; `probeAfter(ms)`: the normal /good request, sent once, `ms` after
 *   the first call; `route`: the ingest route an attack on them goes to, else null
 */

/** The routes that stream: the worker's growth bound is judged on attacks to them. */
const STREAMING_ROUTES = Object.freeze(['good', 'streamparser-json'])
/** The textbook streaming route, where every attack on the ingest routes is replayed. */
const TEXTBOOK_ROUTE = 'streamparser-json'
const OCTETS = Object.freeze({ 'content-type': 'application/octet-stream' })
/** SSE streams opened at once while the flood builds up. */
const SSE_BATCH = 100

/** The url and the headers of a gzip JSON body to the ingest route the attack goes to. */
function ingestTarget (ctx) {
  return { url: `${ctx.url}/${ctx.route}`, headers: INGEST_ROUTES[ctx.route].headers }
}

/** 1. One valid body of dense records to an ingest route (/good, /streamparser-json), gzipped as it is made and sent. */
function denseAttack (kind) {
  return async function sendDenseRecords (ctx) {
    const { records, recordBytes } = ctx.params
    const document = denseDocument({ kind, records, recordBytes })
    const target = ingestTarget(ctx)
    const probe = ctx.probeAfter(1000)
    const answer = await ctx.clients.request(target.url, {
      method: 'POST',
      headers: target.headers,
      streams: [document.stream, zlib.createGzip()],
      timeoutMs: ctx.timeLeft()
    })
    await probe
    return {
      summary: `${records} records of ${document.elementsPerRecord.toLocaleString('en')} ${kind} ` +
        `(${formatBytes(document.inflatedBytes)} inflated, ${formatBytes(answer.sentBytes)} sent): ` +
        `${outcomeLabel(answer)} in ${Math.round(answer.ms)} ms`,
      inflatedBytes: document.inflatedBytes,
      elementsPerRecord: document.elementsPerRecord,
      answer: brief(answer)
    }
  }
}

/** 2. Its body: the start of a gzipped document, made once into the bench's scratch directory. */
async function prepareAbandoned (params, scratch) {
  const file = path.join(scratch, 'abandoned-upload.json.gz')
  return { file, bytes: await writeGzipPrefix(file, params.abandonBytes) }
}

/** 2. Clients that give up mid-upload, some at a time; the normal request comes after. */
async function abandonUploads (ctx) {
  const { abandonClients, abandonConcurrency, abandonAfterMs } = ctx.params
  const { file, bytes } = ctx.input
  const target = ingestTarget(ctx)
  const outcomes = await boundedPool(abandonClients, abandonConcurrency, ctx.signal, function abandonOne () {
    return ctx.clients.request(target.url, {
      method: 'POST',
      headers: { ...target.headers, 'content-length': String(bytes) },
      streams: [fs.createReadStream(file)],
      timeoutMs: Math.min(30_000, ctx.timeLeft()),
      abandonAfterMs
    })
  })
  const probe = await ctx.probeAfter(0)
  const counts = countLabels(outcomes)
  const sent = outcomes.reduce(function add (sum, o) { return sum + o.sentBytes }, 0)
  return {
    summary: `${outcomes.length} uploads of a ${formatBytes(bytes)} gzip body, each abandoned after ${abandonAfterMs} ms ` +
      `(${formatBytes(sent / Math.max(1, outcomes.length))} sent on average): ${countsText(counts)}; ` +
      `then the normal /good: ${outcomeLabel(probe)}`,
    clients: outcomes.length,
    bodyBytes: bytes,
    sentBytes: sent,
    outcomes: counts
  }
}

/** 3a. Its bodies: the bombs of --bomb-codecs. */
function prepareBombs (params, scratch) {
  return prepareRatioBombs(params.bombCodecs, params.bombBytes, scratch)
}

/**
 * 3a. Ratio bombs to an ingest route (/bad, /streamparser-json), one after another, `bombs` in each codec
 * of --bomb-codecs; the normal request goes during the first.
 */
async function ratioBombs (ctx) {
  const { bombs, bombBytes, bombCodecs } = ctx.params
  const target = ingestTarget(ctx)
  const probe = ctx.probeAfter(500)
  const answers = []
  const sizes = {}
  for (const codec of bombCodecs) {
    for (let k = 0; k < bombs && !ctx.signal.aborted; k++) {
      const bomb = createBomb({ variant: 'ratio', codec, bytes: String(bombBytes) }, { cacheDir: ctx.input.cacheDir })
      sizes[codec] = bomb.compressedBytes
      // gzip: the route's own headers (one gzip layer); another codec: its Content-Encoding on JSON, as express.json reads it too
      const headers = codec === 'gzip' ? target.headers : bomb.uploadHeaders
      const answer = await ctx.clients.request(target.url, {
        method: 'POST',
        headers: { ...headers, 'content-length': String(bomb.compressedBytes) },
        streams: bomb.streams,
        timeoutMs: Math.min(60_000, ctx.timeLeft())
      })
      answers.push({ ...answer, codec })
    }
  }
  await probe
  const made = Object.entries(sizes).map(function sized ([codec, bytes]) { return `${formatBytes(bytes ?? 0)} of ${codec}` }).join(', ')
  return {
    summary: `${answers.length} ratio bombs (${made}; ${formatBytes(bombBytes)} inflated each) to /${ctx.route}: ` +
      answers.map(function labelled (a) { return `${a.codec} ${outcomeLabel(a)}` }).join(', '),
    compressedBytes: sizes,
    answers: answers.map(function briefWithCodec (a) { return { codec: a.codec, ...brief(a) } })
  }
}

/** 3b. One large seed-style document (the generator's own items) through an ingest route (/bad, /streamparser-json). */
async function bigBadBody (ctx) {
  const { badBytes } = ctx.params
  const { json, gzip } = createGzipStream({ bytes: badBytes })
  const target = ingestTarget(ctx)
  const probe = ctx.probeAfter(1000)
  const answer = await ctx.clients.request(target.url, {
    method: 'POST',
    headers: target.headers,
    streams: [json, gzip],
    timeoutMs: ctx.timeLeft()
  })
  await probe
  return {
    summary: `a ${formatBytes(badBytes)} generated document (${formatBytes(answer.sentBytes)} gzipped) to /${ctx.route}: ` +
      `${outcomeLabel(answer)} in ${Math.round(answer.ms)} ms`,
    answer: brief(answer)
  }
}

/** 4. Large uploads to the buffering upload route, all at once. */
async function bufferedUploads (ctx) {
  const { uploads, uploadBytes } = ctx.params
  const probe = ctx.probeAfter(1000)
  const answers = await Promise.all(Array.from({ length: uploads }, function uploadOne () {
    return ctx.clients.request(`${ctx.url}/upload-buffer`, {
      method: 'POST',
      headers: { ...OCTETS, 'content-length': String(uploadBytes) },
      streams: [repeatedBytes(uploadBytes)],
      timeoutMs: ctx.timeLeft()
    })
  }))
  await probe
  return {
    summary: `${uploads} x ${formatBytes(uploadBytes)} to /upload-buffer at once: ${countsText(countLabels(answers))}`,
    answers: answers.map(brief)
  }
}

/** 5. One large buffered page of the database export. */
async function batchExport (ctx) {
  const { batchLimit, batchTimeoutMs } = ctx.params
  const probe = ctx.probeAfter(1000)
  const answer = await ctx.clients.request(`${ctx.url}/db/batch?limit=${batchLimit}`, {
    headers: { accept: 'application/json' },
    timeoutMs: Math.min(batchTimeoutMs, ctx.timeLeft())
  })
  await probe
  const detail = answer.status >= 400 && answer.body?.error?.message ? ` (${String(answer.body.error.message).slice(0, 160)})` : ''
  return {
    summary: `GET /db/batch?limit=${batchLimit}: ${outcomeLabel(answer)}${detail} after ${Math.round(answer.ms)} ms, ` +
      `${formatBytes(answer.receivedBytes ?? 0)} received`,
    answer: brief(answer)
  }
}

/** 6. Clients that send a valid body to an ingest route (/good, /streamparser-json) one byte at a time, for a bounded while. */
async function dripClients (ctx) {
  const { drips, dripEveryMs, dripForMs } = ctx.params
  const body = tinyGoodBody()
  const target = ingestTarget(ctx)
  const started = performance.now()
  const all = Array.from({ length: drips }, function dripOne () {
    return ctx.clients.request(target.url, {
      method: 'POST',
      headers: { ...target.headers, 'content-length': String(body.length) },
      send: function dripBytes (req, count) {
        let at = 0
        function sendByte () {
          if (at >= body.length) return
          req.write(body.subarray(at, at + 1))
          count(1)
          at++
          if (at === body.length) req.end()
        }
        sendByte()
        const timer = setInterval(sendByte, dripEveryMs)
        return function stopDripping () { clearInterval(timer) }
      },
      // the bound: each drip hangs up after dripForMs, answered or not
      timeoutMs: Math.min(dripForMs, ctx.timeLeft())
    })
  })
  // the normal request goes once the drips hold their connections
  const probe = ctx.probeAfter(Math.min(2000, dripForMs / 2))
  const outcomes = await Promise.all(all)
  await probe
  const counts = countLabels(outcomes)
  return {
    summary: `${drips} clients sending a ${body.length}-byte body one byte every ${dripEveryMs / 1000} s for up to ` +
      `${dripForMs / 1000} s (${Math.round((performance.now() - started) / 1000)} s): ${countsText(counts)}`,
    bodyBytes: body.length,
    outcomes: counts
  }
}

/** 7. Many /metrics event streams held open (read and dropped), while the normal request is timed. */
async function metricsFlood (ctx) {
  const { sseClients, sseIntervalMs, sseHoldMs } = ctx.params
  const opened = []
  const started = performance.now()
  // opening is bounded too: a lab that stops accepting must not stretch the attack
  const openDeadline = started + Math.min(60_000, ctx.timeLeft() / 2)
  for (let k = 0; k < sseClients && !ctx.signal.aborted && performance.now() < openDeadline; k += SSE_BATCH) {
    const batch = Array.from({ length: Math.min(SSE_BATCH, sseClients - k) }, function openOne () {
      return ctx.clients.openStream(`${ctx.url}/metrics?interval=${sseIntervalMs}`, {
        headers: { accept: 'text/event-stream' },
        timeoutMs: 10_000
      })
    })
    opened.push(...await Promise.all(batch))
  }
  const openMs = performance.now() - started
  const counts = {}
  for (const result of opened) {
    const label = result.status === 0 ? result.error : String(result.status)
    counts[label] = (counts[label] ?? 0) + 1
  }
  const probe = ctx.probeAfter(0)
  await pause(sseHoldMs, ctx.signal)
  await probe
  // the streams the lab kept open through the hold (it may end some: a stalled one, say)
  const stillOpen = ctx.clients.open()
  return {
    summary: `${opened.length} GET /metrics?interval=${sseIntervalMs} streams opened in ${Math.round(openMs)} ms ` +
      `(${countsText(counts)}), held ${sseHoldMs / 1000} s, ${stillOpen} of them still open at the end of the hold`,
    streams: counts,
    stillOpen
  }
}

/** 8. Uploads streamed to disk in a loop, beside a large saved document, both for a bounded while. */
async function diskFill (ctx) {
  const { fillForMs, fillBytes, fillConcurrency, fillUploads, fillGenerateBytes } = ctx.params
  const until = performance.now() + Math.min(fillForMs, ctx.timeLeft())
  const probe = ctx.probeAfter(1000)
  const save = ctx.clients.request(`${ctx.url}/generate?save=1&bytes=${fillGenerateBytes}&level=0`, {
    timeoutMs: Math.min(fillForMs, ctx.timeLeft())
  })
  const loop = new AbortController()
  function stopLoop () { loop.abort() }
  ctx.signal.addEventListener('abort', stopLoop, { once: true })
  const loopTimer = setTimeout(stopLoop, Math.max(0, until - performance.now()))
  let uploads
  try {
    uploads = await boundedPool(fillUploads, fillConcurrency, loop.signal, function uploadOne () {
      return ctx.clients.request(`${ctx.url}/upload-stream`, {
        method: 'POST',
        headers: { ...OCTETS, 'content-length': String(fillBytes) },
        streams: [repeatedBytes(fillBytes)],
        timeoutMs: Math.max(1000, until - performance.now() + 5000)
      })
    })
  } finally {
    clearTimeout(loopTimer)
    ctx.signal.removeEventListener('abort', stopLoop)
  }
  const saved = await save
  await probe
  const counts = countLabels(uploads)
  const written = uploads.reduce(function add (sum, o) { return sum + (o.status === 200 ? o.body?.bytes ?? 0 : 0) }, 0)
  return {
    summary: `${uploads.length} x ${formatBytes(fillBytes)} to /upload-stream ` +
      `(${countsText(counts)}; ${formatBytes(written)} acknowledged), ` +
      `and GET /generate?save=1&bytes=${formatBytes(fillGenerateBytes)}&level=0: ${outcomeLabel(saved)} after ${Math.round(saved.ms)} ms`,
    uploads: counts,
    acknowledgedBytes: written,
    save: brief(saved)
  }
}

/** An attack on the ingest routes: JSON to route `own`, then replayed on the textbook route. */
function onIngest (id, title, own, fields) {
  return { id, title, routes: [own, TEXTBOOK_ROUTE], sends: 'json', ...fields }
}

/**
 * The attacks by id: `run(ctx)`, `prepare(params, scratchDir)` for inputs made before the lab starts
 * (`ctx.input`), and how to show it. An attack on the ingest routes lists `routes` (its own first)
 * and the format it `sends`; its target, and whether the bound on the worker's growth is `judged`
 * (a route meant to hold constant memory), come with each route (`attackRows`).
 */
const ATTACKS = Object.freeze(Object.fromEntries([
  onIngest('dense-objects', 'dense records, tiny objects', 'good', { run: denseAttack('objects') }),
  onIngest('dense-arrays', 'dense records, tiny arrays', 'good', { run: denseAttack('arrays') }),
  onIngest('dense-numbers', 'dense records, numbers', 'good', { run: denseAttack('numbers') }),
  onIngest('abandoned-uploads', 'abandoned uploads', 'good', { prepare: prepareAbandoned, run: abandonUploads }),
  onIngest('ratio-bombs', 'ratio bombs in a row, in each codec', 'bad', { prepare: prepareBombs, run: ratioBombs }),
  onIngest('big-bad-body', 'large seed-style body', 'bad', { run: bigBadBody }),
  { id: 'buffered-uploads', title: 'large buffered uploads', target: 'POST /upload-buffer', judged: false, run: bufferedUploads },
  { id: 'batch-export', title: 'large batch export', target: 'GET /db/batch', judged: false, run: batchExport },
  onIngest('drip-clients', 'drip clients', 'good', { run: dripClients }),
  { id: 'metrics-flood', title: '/metrics flood', target: 'GET /metrics (SSE)', judged: false, run: metricsFlood },
  { id: 'disk-fill', title: 'disk fill', target: 'POST /upload-stream, GET /generate?save=1', judged: false, run: diskFill },
  onIngest('wide-windows', 'valid bodies in the widest windows, at once', 'good', {
    prepare: prepareWideBodies, run: wideWindows, routes: ['good']
  }),
  onIngest('window-bombs', 'ratio bombs in windowed codecs, at once', 'good', { prepare: prepareWindowBombs, run: windowBombs })
].map(function withGroup (attack) {
  const group = Number(Object.keys(ATTACK_GROUPS).find(function holds (g) { return ATTACK_GROUPS[g].includes(attack.id) }))
  return [attack.id, Object.freeze({ ...attack, group })]
})))

/**
 * The rows a run measures, in order: one per attack, and for an attack on the ingest routes one per
 * route it lists that `routes` lets through (null: all). A route that does not read what the attack
 * sends gets `skip`, the reason, and is not run. `attacks`: the registry (a spec passes its own).
 */
export function attackRows (ids, routes = null, attacks = ATTACKS) {
  const rows = []
  for (const id of ids) {
    const attack = attacks[id]
    if (!attack.routes) {
      rows.push({ attack, route: null, label: attack.id, target: attack.target, judged: attack.judged, skip: null })
      continue
    }
    for (const [k, route] of attack.routes.entries()) {
      if (routes !== null && !routes.includes(route)) continue
      const reads = INGEST_ROUTES[route].formats
      rows.push({
        attack,
        route,
        // the attack's own route keeps its plain name; a replay says where it went
        label: k === 0 ? attack.id : `${attack.id} (/${route})`,
        target: `POST /${route}`,
        judged: STREAMING_ROUTES.includes(route),
        skip: reads.includes(attack.sends) ? null : `/${route} reads ${reads.join(' and ')}, not the ${attack.sends} this attack sends`
      })
    }
  }
  return rows
}
