/**
 * The zip-bomb experiment: a bomb (lib/generate/bombs.js) streamed into this server's /good and /bad from a load
 * process. /good runs first: it refuses early and cheaply. /bad's guard stops it at the inflate limit after holding
 * that much; unguarded (`--unsafe-bad`) the bomb takes the worker past its budget, and the new worker records this
 * run as failed (`worker.crashed`) with `event: crash`.
 */
import path from 'node:path'
import { ensureInput } from '../../lib/measure/inputs.js'
import { uploadFile } from '../../lib/experiments/upload-client.js'
import { WARM_UP_HEADER } from '../../lib/util/lab-events.js'
import {
  BOMB_CODECS, BOMB_DEFAULTS, BOMB_LIMITS, BOMB_VARIANTS, bombCodecProblem, maximumBytes, minimumBytes, prepareBomb
} from '../../lib/generate/bombs.js'
import { badParameter } from '../../lib/errors/index.js'
import { runLoad } from '../../lib/experiments/load.js'
import { choiceEntry, deepFreeze, normalizeBySchema, sizeEntry } from '../../lib/experiments/params.js'
import { round } from '../../lib/util/units.js'
import { bombTable, bombVerdict } from './result.js'
import { loadInWindow } from '../window.js'

export const name = 'zip-bomb'
export const title = 'Zip bombs against /good and /bad'
export const description = 'Streams a zip bomb (a few MB of gzip, or a few KB of br, that inflate to gigabytes of valid JSON) ' +
  'into POST /good and POST /bad from a separate load process, and reports how each route met it: the status ' +
  'and error type, the time to refusal, how many inflated bytes the server let through before refusing, and ' +
  'the server\'s peak memory above idle. /good refuses early at a constant cost; /bad holds everything it ' +
  'inflates. Started with --unsafe-bad, /bad has no inflate limit: the bomb takes the worker past its memory ' +
  'budget, the supervisor kills and restarts it, and this run is lost with it (the dashboard gets event: crash).'

const ROUTES = Object.freeze(['both', 'good', 'bad'])
const WARM_HEADERS = Object.freeze({ 'content-type': 'application/gzip' })

export const params = deepFreeze([
  choiceEntry('variant', {
    values: BOMB_VARIANTS,
    valueLabels: {
      ratio: 'Ratio: one run of spaces, ~1000:1',
      members: 'Members: many concatenated gzip members',
      depth: 'Depth: a million nested arrays',
      string: 'String: one gigantic string',
      chained: 'Chained: gzip inside gzip inside gzip'
    },
    default: BOMB_DEFAULTS.variant,
    label: 'Bomb',
    help: 'What the bomb is made of. All are valid compressed bodies holding valid JSON; see docs/zip-bombs.md.'
  }),
  choiceEntry('codec', {
    values: BOMB_CODECS,
    valueLabels: {
      gzip: 'gzip (Content-Type: application/gzip)',
      deflate: 'deflate: the zlib format (Content-Encoding: deflate)',
      br: 'br: brotli (Content-Encoding: br)',
      zstd: 'zstd (Content-Encoding: zstd; Node 22.15 and later)'
    },
    default: BOMB_DEFAULTS.codec,
    label: 'Codec',
    help: 'The content coding the bomb rides. Members are gzip\'s; br and zstd bombs are made once by zlib\'s compressor ' +
      '(seconds per 10 GB) and kept in the data directory.'
  }),
  choiceEntry('route', {
    values: ROUTES,
    valueLabels: { both: 'Both: /good, then /bad', good: '/good (streamed)', bad: '/bad (buffered)' },
    label: 'Route',
    help: '/good counts what it inflates and refuses early; /bad inflates first. "Both" runs /good first, so its figure survives ' +
      'if /bad (unsafe) takes the worker down.'
  }),
  sizeEntry('bytes', {
    default: null,
    max: BOMB_LIMITS.maxBytes,
    label: 'Inflated size',
    help: `What the bomb inflates to, e.g. 2GB or 10GB. Empty: ${BOMB_DEFAULTS.bytes / 1e9}GB ` +
      `(depth: ${BOMB_DEFAULTS.depth.toLocaleString('en')} levels).`
  })
])

/** @throws {LabError} 400 parameter.invalid naming the field */
export function normalizeParams (raw) {
  const p = normalizeBySchema(params, raw)
  // zstd where this Node has none, members in another codec: refused before the run starts
  const problem = bombCodecProblem(p.variant, p.codec)
  if (problem !== null) throw badParameter('params.codec', p.codec, problem)
  if (p.bytes !== null && p.bytes < minimumBytes(p.variant)) {
    throw badParameter('params.bytes', raw.bytes, `at least ${minimumBytes(p.variant)} bytes for the ${p.variant} bomb`)
  }
  // checked here, not when the run makes the bomb: the depth bomb's bytes set its depth, which has its own maximum
  if (p.bytes !== null && p.bytes > maximumBytes(p.variant, p.codec)) {
    const most = maximumBytes(p.variant, p.codec)
    throw badParameter('params.bytes', raw.bytes, `at most ${most} bytes for the ${p.variant} bomb in ${p.codec}`)
  }
  return Object.freeze(p)
}

/** The bomb made first where it must be (br, zstd: once, into the cache), then per route a warm-up, a fresh window and one bomb. */
export async function run (ctx) {
  const { params: p, signal, baseUrl, options } = ctx
  const routes = p.route === 'both' ? ['good', 'bad'] : [p.route]
  const bombParams = { variant: p.variant, codec: p.codec, bytes: p.bytes }
  const bombCacheDir = path.join(options.dataDir, 'bombs')
  const made = p.codec === 'br' || p.codec === 'zstd'
  ctx.progress({ done: 0, total: routes.length, stage: made ? `making the ${p.codec} bomb` : 'warm-up' })
  // the same bomb the load process will read: sizes and headers, nothing sent yet
  const bomb = await prepareBomb(bombParams, { cacheDir: bombCacheDir, signal })
  for (const stream of bomb.streams) stream.destroy()
  ctx.progress({ done: 0, total: routes.length, stage: 'warm-up' })
  const warm = await ensureInput({ size: 1, format: 'json', dir: path.join(options.dataDir, 'bench'), signal })
  const byRoute = {}
  for (const [index, route] of routes.entries()) {
    signal.throwIfAborted()
    const url = `${baseUrl}/${route}`
    await uploadFile(url, warm.file, { ...WARM_HEADERS, [WARM_UP_HEADER]: '1' })
    signal.throwIfAborted()
    // /bad without its guard is expected to take this process down: say so while it still can
    const fatal = route === 'bad' && options.unsafeBad === true
    ctx.progress({ done: index, total: routes.length, route, stage: fatal ? 'bomb (unsafe: the worker may be killed)' : 'bomb' })
    const job = { url, bomb: bombParams, bombCacheDir, requests: 1, concurrency: 1 }
    const { load, server } = await loadInWindow(ctx, 1, function sendBomb (hooks) { return runLoad(job, hooks) })
    byRoute[route] = summariseRoute(route, load, server)
    ctx.progress({ done: index + 1, total: routes.length, route, stage: 'bomb' })
  }
  const bombFigures = {
    variant: bomb.params.variant,
    codec: bomb.params.codec,
    // how long zlib's compressor took to make it for this run (null: gzip and deflate, or already made)
    madeMs: bomb.madeMs,
    inflatedBytes: bomb.inflatedBytes,
    compressedBytes: bomb.compressedBytes ?? byRoute[routes[0]]?.sentBytes ?? null,
    ratio: ratioOf(bomb.inflatedBytes, bomb.compressedBytes ?? byRoute[routes[0]]?.sentBytes),
    depth: bomb.params.depth,
    members: bomb.members,
    layers: bomb.layers,
    uploadHeaders: bomb.uploadHeaders
  }
  return {
    bomb: bombFigures,
    unsafeBad: options.unsafeBad === true,
    limits: { inflated: options.limits.inflated, compressed: options.limits.compressed },
    routes: byRoute,
    // the contract's presentation (lib/experiments/result-contract.js): what the dashboard and the CLIs show
    tables: [bombTable(bombFigures, byRoute)],
    verdicts: [bombVerdict(byRoute)]
  }
}

function summariseRoute (route, { results }, server) {
  const r = results[0] ?? { status: 0, ms: null, errorType: 'no answer' }
  let outcome = 'refused'
  if (r.status === 200) outcome = 'accepted'
  else if (r.status === 0) outcome = 'connection lost'
  return {
    route,
    status: r.status,
    outcome,
    errorType: r.status === 200 ? null : r.errorType,
    // time from the first byte sent to the whole answer: for a refusal, the time to refuse
    ms: round(r.ms, 10),
    // how far the server let the body get, from the error's own figures
    inflatedBytesReached: inflatedReached(r),
    limit: r.limit ?? null,
    received: r.received ?? null,
    sentBytes: r.sentBytes ?? null,
    summary: r.summary ?? null,
    server
  }
}

/**
 * Inflated bytes the server had let through when it answered: the error's `inflatedBytes` or `offset`, or `received`
 * for inflated.too.large only (for ratio.too.large it is the ratio, for record.too.large the record's size).
 */
function inflatedReached (r) {
  if (Number.isFinite(r.inflatedBytes)) return r.inflatedBytes
  if (r.errorType === 'inflated.too.large' && Number.isFinite(r.received)) return r.received
  if (Number.isFinite(r.offset)) return r.offset
  return r.summary?.inflatedBytes ?? null
}

function ratioOf (inflated, compressed) {
  return Number.isFinite(compressed) && compressed > 0 ? Math.round(inflated / compressed) : null
}
