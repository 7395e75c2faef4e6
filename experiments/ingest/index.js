/**
 * The ingest experiment: one generated gzip document uploaded to this server's ingest routes from a load process,
 * with peak RSS per route. Every route runs in the one watched server, so each is measured from its own baseline
 * (lib/experiments/window.js): /good may run in pages /bad grew. More: experiments/README.md#ingest.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { ensureInput } from '../../lib/measure/inputs.js'
import { latencyStats } from '../../lib/measure/stats.js'
import { uploadFile } from '../../lib/experiments/upload-client.js'
import { WARM_UP_HEADER } from '../../lib/util/lab-events.js'
import { FORMATS } from '../../lib/generate/items.js'
import { badParameter } from '../../lib/errors/index.js'
import { INGEST_ROUTES, INGEST_ROUTE_NAMES, routesRefusing } from '../../lib/ingest/contenders.js'
import { DEFAULTS } from '../../lib/config/options.js'
import { runChildJob, runLoad } from '../../lib/experiments/load.js'
import { boundFraction } from '../../lib/measure/bound.js'
import { cpuPerGB, cpuShare } from '../../lib/measure/cpu.js'
import {
  choiceEntry, deepFreeze, givenParams, integerEntry, isPresent, normalizeBySchema, sizeEntry, sizeParam
} from '../../lib/experiments/params.js'
import { round } from '../../lib/util/units.js'
import { answersVerdict, inputCaption, routesTable } from './result.js'
import { errorsByType } from '../results.js'
import { loadInWindow } from '../window.js'

export const name = 'ingest'
export const title = 'Buffered vs streamed gzip ingest'
export const description = 'Uploads the same generated gzip JSON document to POST /bad (buffers the whole ' +
  'body, inflates it, parses it as one string) and to POST /good (streams it through gunzip and a record ' +
  'scanner), from a separate load process, and reports each route\'s throughput, latency and the server\'s ' +
  'peak memory above idle. "All four" adds POST /express-json, what most Express apps run: express.json(), ' +
  'the buffered pattern with a limit on inflated bytes, and POST /streamparser-json, the textbook streaming route ' +
  'on the library @streamparser/json. Every route must give the same answer.'

const ROUTES = Object.freeze(['both', 'all', ...INGEST_ROUTE_NAMES])
/** What each choice of `route` runs, in order. */
const RUNS = Object.freeze({ both: ['bad', 'good'], all: INGEST_ROUTE_NAMES })
const MAX_CONCURRENCY = 500
const MAX_REQUESTS = 10_000
const MAX_ITEMS = DEFAULTS.generate.maxItems
const MAX_BYTES = DEFAULTS.generate.maxBytes
const DEFAULT_BYTES = '10MB'
const BOUND_PROCESS = fileURLToPath(new URL('./bound-process.js', import.meta.url))
/** The bound's body: the run's up to this gzip size, else one of BOUND_BYTES (the process holds it inflated; shape, not size, matters). */
const BOUND_GZIP_MAX = 16 * 1024 * 1024
const BOUND_BYTES = 64_000_000

export const params = deepFreeze([
  choiceEntry('route', {
    values: ROUTES,
    valueLabels: {
      both: 'Both: /bad, then /good',
      all: 'All four: /bad, /good, /express-json, then /streamparser-json',
      bad: '/bad (buffered)',
      good: '/good (streamed)',
      'express-json': '/express-json (express.json)',
      'streamparser-json': '/streamparser-json (@streamparser/json)'
    },
    label: 'Route',
    help: '/bad buffers the whole body in memory; /good streams it; /express-json is express.json(), buffered with a limit on ' +
      'inflated bytes; /streamparser-json streams it through the library @streamparser/json, as its README shows. "Both" runs /bad ' +
      'first, then /good, on the same input, so the two can be compared; "All four" adds /express-json and /streamparser-json.'
  }),
  sizeEntry('bytes', {
    default: DEFAULT_BYTES,
    max: MAX_BYTES,
    label: 'Body size (inflated)',
    help: 'Size of the JSON document before gzip, e.g. 10MB, 500MB or 1.5GiB. Generated once into the data directory and reused. ' +
      'Leave empty when giving a number of items.'
  }),
  integerEntry('size', {
    default: null,
    min: 0,
    max: MAX_ITEMS,
    label: 'Items (instead of body size)',
    help: 'Number of items in the document (about 430 bytes each). Give this or the body size, not both.'
  }),
  choiceEntry('format', {
    values: FORMATS,
    valueLabels: { json: '{"items": [...]}', array: '[...] (top-level array)', ndjson: 'NDJSON (one item per line)' },
    default: 'json',
    label: 'Document format',
    help: 'Shape of the generated document. /bad and /good accept all three; /express-json and /streamparser-json one JSON document, ' +
      'not NDJSON.'
  }),
  integerEntry('concurrency', {
    default: 1,
    max: MAX_CONCURRENCY,
    label: 'Concurrent uploads',
    help: 'Uploads in flight at the same time. /bad\'s memory grows with size times concurrency; /good\'s should not.'
  }),
  integerEntry('requests', {
    default: null,
    max: MAX_REQUESTS,
    label: 'Uploads per route',
    help: 'How many uploads each route receives in all. Empty: one per concurrent upload.'
  })
])

/** @throws {LabError} 400 parameter.invalid naming the field, e.g. params.concurrency */
export function normalizeParams (raw, options) {
  const given = givenParams(params, raw)
  const hasSize = isPresent(given.size)
  const hasBytes = isPresent(given.bytes)
  if (hasSize && hasBytes) throw badParameter('params.bytes', given.bytes, 'either params.size or params.bytes, not both')
  const maxItems = Math.min(MAX_ITEMS, options?.generate?.maxItems ?? MAX_ITEMS)
  const maxBytes = Math.min(MAX_BYTES, options?.generate?.maxBytes ?? MAX_BYTES)
  const p = normalizeBySchema(params, given, { max: { size: maxItems, bytes: maxBytes } })
  const refusing = routesRefusing(RUNS[p.route] ?? [p.route], p.format)
  if (refusing.length > 0) {
    const first = INGEST_ROUTES[refusing[0]]
    const why = `/${refusing.join(', /')} takes ${first.formats.join(' or ')} (${first.label} parses one JSON document)`
    throw badParameter('params.format', p.format, `a format every route of "${p.route}" reads: ${why}`)
  }
  return Object.freeze({
    route: p.route,
    size: p.size,
    // the default bytes too are held to the server's maximum, and only stand when no size was given
    bytes: hasSize ? null : hasBytes ? p.bytes : sizeParam('bytes', DEFAULT_BYTES, 1, maxBytes),
    format: p.format,
    concurrency: p.concurrency,
    requests: p.requests ?? p.concurrency
  })
}

/** Make (or reuse) the input, then for each route a warm-up upload, a fresh measurement window and the load in its own process. */
export async function run (ctx) {
  const { params: p, signal, baseUrl, options } = ctx
  const routes = RUNS[p.route] ?? [p.route]
  const total = routes.length * p.requests
  const dir = path.join(options.dataDir, 'bench')
  ctx.progress({ done: 0, total, stage: 'input' })
  const input = await ensureInput({ bytes: p.bytes, size: p.size, format: p.format, dir, signal })
  // one tiny document, so no route meets its first-request costs inside the measurement
  const warm = await ensureInput({ size: 1, format: p.format, dir, signal })
  const bound = await measureBound(ctx, input, dir)
  const byRoute = {}
  for (const [index, route] of routes.entries()) {
    signal.throwIfAborted()
    const url = `${baseUrl}/${route}`
    const headers = INGEST_ROUTES[route].headers
    ctx.progress({ done: index * p.requests, total, route, stage: 'warm-up' })
    await uploadFile(url, warm.file, { ...headers, [WARM_UP_HEADER]: '1' })
    const job = { url, file: input.file, concurrency: p.concurrency, requests: p.requests, headers }
    function uploadAll (hooks) { return runLoad(job, hooks) }
    function relay ({ done }) { ctx.progress({ done: index * p.requests + done, total, route, stage: 'load' }) }
    const { load, server, cpuSeconds } = await loadInWindow(ctx, p.requests, uploadAll, relay)
    byRoute[route] = summariseRoute(route, p, load, { server, cpuSeconds }, bound)
  }
  const summariesAgree = allAgree(Object.values(byRoute))
  const { format, bytes, size } = p
  const described = { file: path.basename(input.file), format, bytes, size, compressedBytes: input.compressedBytes }
  return {
    input: described,
    bound,
    routes: byRoute,
    summariesAgree,
    // the contract's presentation (lib/experiments/result-contract.js): what the dashboard and the CLIs show
    caption: inputCaption(described, p),
    tables: [routesTable(byRoute, bound)],
    verdicts: [answersVerdict(summariesAgree, routes.length)]
  }
}

/**
 * The machine's bound on this body's shape (lib/measure/bound.js) and the stages' CPU per GB, one pass a stage in a
 * process of its own (bound-process.js) before any route runs; `mbPerSecond: null` with the reason when it could not be measured.
 */
async function measureBound (ctx, input, dir) {
  const { params: p, signal } = ctx
  ctx.progress({ done: 0, total: 1, stage: 'bound' })
  try {
    const measured = input.compressedBytes <= BOUND_GZIP_MAX
      ? input
      : await ensureInput({ bytes: BOUND_BYTES, format: p.format, dir, signal })
    const job = { file: measured.file, format: p.format }
    return await runChildJob(BOUND_PROCESS, job, {
      signal,
      onSpawn: ctx.trackProcess,
      onProgress: function relayProgress ({ done, total }) { ctx.progress({ done, total, stage: 'bound' }) }
    })
  } catch (err) {
    signal.throwIfAborted()
    return { mbPerSecond: null, reason: err.message }
  }
}

function summariseRoute (route, p, { results, wallMs }, { server, cpuSeconds }, bound) {
  const ok = results.filter(function succeeded (r) { return r.status === 200 })
  const errors = errorsByType(results)
  const answers = new Set(ok.map(function key (r) { return JSON.stringify(r.summary) }))
  const inflatedBytes = ok.reduce(function add (sum, r) { return sum + (r.summary?.inflatedBytes ?? 0) }, 0)
  const latency = latencyStats(results.map(function ms (r) { return r.ms }))
  return {
    route,
    concurrency: p.concurrency,
    requests: results.length,
    ok: ok.length,
    errors,
    latencyMs: roundAll(latency, 10),
    wallMs: round(wallMs, 10),
    inflatedBytes,
    mbPerSecond: round(inflatedBytes / 1e6 / (wallMs / 1000), 100),
    boundShare: ok.length === 0 ? null : boundFraction(inflatedBytes / 1e6 / (wallMs / 1000), bound.mbPerSecond),
    cpuPerGB: cpuPerGB(cpuSeconds, inflatedBytes),
    cpuShare: cpuShare(cpuPerGB(cpuSeconds, inflatedBytes), bound.cpuPerGB ?? null),
    server,
    summary: ok[0]?.summary ?? null,
    summariesAgree: ok.length === 0 ? null : answers.size === 1
  }
}

/** Every answer from every route identical; null when there was no answer to compare. */
function allAgree (routeResults) {
  const answered = routeResults.filter(function hasAnswer (r) { return r.summary !== null })
  if (answered.length === 0) return null
  const distinct = new Set(answered.map(function key (r) { return JSON.stringify(r.summary) }))
  return distinct.size === 1 && answered.every(function agrees (r) { return r.summariesAgree === true })
}

function roundAll (figures, scale) {
  const out = {}
  for (const [key, value] of Object.entries(figures)) out[key] = round(value, scale)
  return out
}
