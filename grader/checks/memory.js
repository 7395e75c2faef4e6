/**
 * Memory: the lab process's peak growth (the kernel's peak, VmHWM, above the
 * RSS just before, after a garbage collection: GradeLab.measure) against
 * body size and against uploads in flight. A route that streams costs about
 * the same whatever the size and a little per request; one that buffers
 * costs a multiple of the body, per request.
 *
 * Every point is measured on a fresh lab, warmed up with one small upload,
 * as the benches measure (bench/fresh-server.js): in a process that has
 * already held a large body, the allocator hands the next one memory it
 * kept, and a buffering route would seem to grow by nothing. With
 * `reference`, /bad and /good are measured beside the handler, on the same
 * bodies and in the same way, for the report's charts.
 */
import { generatedDocument } from '../bodies.js'
import { judgeAnswer } from '../reference.js'
import { LIMITS, timeoutFor } from '../settings.js'

const AREA = 'memory'
const MiB = 1024 * 1024
const MB = 1e6

export const checks = Object.freeze([
  {
    area: AREA,
    name: 'growth against body size',
    meaning: 'peak memory above idle for one upload of each size: flat when the route streams, a multiple of the body when it buffers',
    limit: `at most ${LIMITS.sizeSlopeMiBPer100MB} MiB more per 100 MB of body (or a rise under ${LIMITS.noiseMiB} MiB in all)`,
    hint: 'Your route holds the whole body: stream it instead, pipeline(req, zlib.createGunzip(), your record scanner), and keep only the record being read and the running totals.',
    trips: true,
    run: async function growthBySize (ctx) {
      const { settings } = ctx
      const docs = []
      for (const bytes of settings.sizes) docs.push(await generatedDocument({ bytes, dir: ctx.inputDir }))
      const points = []
      const reference = { good: [], bad: [] }
      for (const doc of docs) {
        ctx.note(`${formatMB(doc.inflatedBytes)} body`)
        const timeoutMs = timeoutFor(settings, doc.inflatedBytes)
        const m = await measureFresh(ctx, 'student', docs[0], function uploadOnce () { return ctx.post('student', { file: doc.file, timeoutMs }) })
        const failed = await failure(ctx, m.failedWarmUp ? { ...m, outcome: m.failedWarmUp } : m, doc, m.failedWarmUp ? `on the warm-up upload (${formatMB(docs[0].inflatedBytes)})` : `at ${formatMB(doc.inflatedBytes)}`)
        if (failed) return { ...failed, details: { points, reference } }
        points.push({ x: doc.inflatedBytes / MB, growthMiB: toMiB(m.growth), ms: round(m.ms), answer: judgeAnswer(m.outcome, doc.reference).why })
        if (settings.reference) {
          for (const route of ['good', 'bad']) reference[route].push({ x: doc.inflatedBytes / MB, growthMiB: await measureReference(ctx, route, docs[0], [doc.file], timeoutMs) })
        }
      }
      return judgeSlope(points, LIMITS.sizeSlopeMiBPer100MB, 100, 'MiB per 100 MB', { reference })
    }
  },
  {
    area: AREA,
    name: 'growth against concurrency',
    meaning: 'peak memory above idle with 1 to n uploads of the same body in flight at once: what each request in flight costs',
    limit: `at most ${LIMITS.concurrencySlopeMiBPerRequest} MiB more per upload in flight (or a rise under ${LIMITS.noiseMiB} MiB in all)`,
    hint: 'Each request in flight holds its whole body (or a large part of it): stream each one, with a fixed budget per request, so that n uploads cost n small buffers.',
    trips: true,
    run: async function growthByConcurrency (ctx) {
      const { settings } = ctx
      const doc = await generatedDocument({ bytes: settings.concurrencyBytes, dir: ctx.inputDir })
      const points = []
      const reference = { good: [], bad: [] }
      for (const n of settings.concurrency) {
        ctx.note(`${n} at once`)
        // n uploads share the machine: each may take n times as long
        const timeoutMs = timeoutFor(settings, doc.inflatedBytes * n)
        const m = await measureFresh(ctx, 'student', doc, function uploadAtOnce () {
          return Promise.all(Array.from({ length: n }, function upload () { return ctx.post('student', { file: doc.file, timeoutMs }) }))
        })
        const worst = m.failedWarmUp ?? m.outcome.find(function notAnswered (res) { return res.status !== 200 }) ?? m.outcome[0]
        const failed = await failure(ctx, { ...m, outcome: worst }, doc, m.failedWarmUp ? 'on the warm-up upload' : `with ${n} at once`)
        if (failed) return { ...failed, details: { points, reference } }
        points.push({ x: n, growthMiB: toMiB(m.growth), ms: round(m.ms) })
        if (settings.reference) {
          for (const route of ['good', 'bad']) reference[route].push({ x: n, growthMiB: await measureReference(ctx, route, doc, new Array(n).fill(doc.file), timeoutMs) })
        }
      }
      return judgeSlope(points, LIMITS.concurrencySlopeMiBPerRequest, 1, 'MiB per upload in flight', { reference, bodyBytes: doc.inflatedBytes })
    }
  }
])

/**
 * A fresh lab, one upload of `warm` (the curve's smallest body) to the route:
 * the first request's costs (compiling the handler, the heap's young
 * generation growing to its working size) are not growth. Then the window
 * around `load`.
 */
async function measureFresh (ctx, route, warm, load) {
  await ctx.freshLab()
  const warmUp = await ctx.post(route, { file: warm.file, timeoutMs: timeoutFor(ctx.settings, warm.inflatedBytes) })
  // not even the warm-up was answered: that is the figure, measuring more would only wait again
  if (warmUp.status !== 200) return { failedWarmUp: warmUp, outcome: null, ms: warmUp.ms, idleRss: null, peakRss: null, growth: null }
  return ctx.lab.measure(load)
}

/** /good or /bad on the same files: a figure for the charts, never the handler's fault if it fails. */
async function measureReference (ctx, route, warm, files, timeoutMs) {
  const m = await measureFresh(ctx, route, warm, function referenceUpload () {
    return Promise.all(files.map(function upload (file) { return ctx.post(route, { file, timeoutMs }) }))
  })
  if (ctx.lab.alive === false || m.failedWarmUp || m.outcome.some(function failed (res) { return res.status !== 200 })) {
    await ctx.referenceFailed()
    return null
  }
  return toMiB(m.growth)
}

/** The check's failure when the handler did not answer 200 (or the figure could not be read), else null. */
async function failure (ctx, m, doc, where) {
  const res = m.outcome
  if (res.error === 'timeout') return { pass: false, hung: true, figure: `no answer within ${Math.round(res.ms / 1000)} s ${where}` }
  if (res.status !== 200) {
    const killed = !ctx.lab.alive && ctx.lab.lastDeath?.reason === 'memory' && m.growth !== null
    return {
      pass: false,
      figure: killed ? `killed ${where}: +${toMiB(m.growth)} MiB and rising` : `${judgeAnswer(res, doc.reference).why} ${where}`,
      reason: await ctx.explain(res)
    }
  }
  if (m.growth === null) return { pass: false, figure: 'not measured: the kernel\'s peak is read from /proc (Linux only)' }
  return null
}

/**
 * Least-squares slope of growth against x, per `per` units of x; the check
 * passes under the limit, or when the whole curve rises less than the noise.
 */
function judgeSlope (points, limit, per, unit, extra) {
  const slope = leastSquaresSlope(points.map(function xy (p) { return [p.x / per, p.growthMiB] }))
  const growths = points.map(function growth (p) { return p.growthMiB })
  const rise = Math.max(...growths) - Math.min(...growths)
  const flat = rise < LIMITS.noiseMiB
  const pass = slope <= limit || flat
  const curve = points.map(function describe (p) { return `+${p.growthMiB.toFixed(1)}` }).join(' / ')
  return {
    pass,
    figure: `${slope >= 0 ? '+' : ''}${slope.toFixed(1)} ${unit} (${curve} MiB)`,
    reason: pass && slope > limit ? `the slope is noise: the whole curve rises ${rise.toFixed(1)} MiB` : null,
    details: { points, slope: round(slope), riseMiB: round(rise), ...extra }
  }
}

/** @param {Array<[number, number]>} xy */
export function leastSquaresSlope (xy) {
  const n = xy.length
  const mx = xy.reduce(function sum (s, [x]) { return s + x }, 0) / n
  const my = xy.reduce(function sum (s, [, y]) { return s + y }, 0) / n
  let num = 0
  let den = 0
  for (const [x, y] of xy) {
    num += (x - mx) * (y - my)
    den += (x - mx) ** 2
  }
  return den === 0 ? 0 : num / den
}

function toMiB (bytes) {
  return bytes === null ? null : Math.round(bytes / MiB * 10) / 10
}

function round (value) {
  return Math.round(value * 10) / 10
}

function formatMB (bytes) {
  return `${Math.round(bytes / MB)} MB`
}
