/** Memory: peak growth against body size and uploads in flight, each point on a fresh process (lib/measure/fresh-server.js). */
import { generatedDocument } from './bodies.js'
import { locateSites, sitesHint } from './memory-sites.js'
import { describeFailure } from './reference.js'
import { leastSquaresSlope } from './figures.js'
import { MB, MiB, round } from '../../lib/util/units.js'
import { LIMITS, timeoutFor } from './settings.js'

const AREA = 'memory'

/** The lab's routes measured beside the handler with `reference`, in chart order. */
export const REFERENCE_ROUTES = Object.freeze(['good', 'streamparser-json', 'bad'])

/** Each curve's unit and its points' x per unit, from the settings; card/measures.js bounds a slope by them. */
export const CURVES = Object.freeze({
  'growth against body size': Object.freeze({
    unit: 'MiB per 100 MB', per: 100, xs: function bodyMB (settings) { return settings.sizes.map(function mb (b) { return b / MB }) }
  }),
  'growth against concurrency': Object.freeze({
    unit: 'MiB per upload in flight', per: 1, xs: function uploads (settings) { return settings.concurrency }
  })
})
const BY_SIZE = CURVES['growth against body size']
const BY_CONCURRENCY = CURVES['growth against concurrency']

export const checks = Object.freeze([
  {
    area: AREA,
    name: 'growth against body size',
    meaning: 'peak memory above idle for one upload of each size: flat when the route streams, a multiple of the body when it buffers',
    limit: `at most ${LIMITS.sizeSlopeMiBPer100MB} MiB more per 100 MB of body (or a rise under ${LIMITS.noiseMiB} MiB in all)`,
    hint: 'Your route holds the whole body: stream it instead. Pipe the request into a PassThrough and pipeline(body, ' +
      'zlib.createGunzip(), your record scanner) (exercise 01, step 4: hand pipeline() a stream it may destroy, not req), and keep only ' +
      'the record being read and the running totals.',
    trips: true,
    run: async function growthBySize (ctx) {
      const { settings } = ctx
      const docs = []
      for (const bytes of settings.sizes) docs.push(await generatedDocument({ bytes, dir: ctx.inputDir }))
      const curve = newCurve(ctx, docs.length)
      const largest = docs.at(-1)
      const load = { warm: docs[0], files: [largest.file], timeoutMs: timeoutFor(settings, largest.inflatedBytes) }
      for (const doc of docs) {
        ctx.note(`${formatMB(doc.inflatedBytes)} body`)
        const timeoutMs = timeoutFor(settings, doc.inflatedBytes)
        const failed = await curve.point(doc.inflatedBytes / MB, docs[0], [doc.file], timeoutMs, `at ${formatMB(doc.inflatedBytes)}`)
        if (failed) return failed.killed ? withSites(ctx, failed, load) : failed
      }
      return withSites(ctx, judgeSlope(curve.points, LIMITS.sizeSlopeMiBPer100MB, BY_SIZE.per, BY_SIZE.unit, curve.reference), load)
    }
  },
  {
    area: AREA,
    name: 'growth against concurrency',
    meaning: 'peak memory above idle with 1 to n uploads of the same body in flight at once: what each request in flight costs',
    limit: `at most ${LIMITS.concurrencySlopeMiBPerRequest} MiB more per upload in flight (or a rise under ${LIMITS.noiseMiB} MiB in all)`,
    hint: 'Each request in flight holds its whole body (or a large part of it): stream each one, with a fixed budget per request, so ' +
      'that n uploads cost n small buffers.',
    trips: true,
    run: async function growthByConcurrency (ctx) {
      const { settings } = ctx
      const doc = await generatedDocument({ bytes: settings.concurrencyBytes, dir: ctx.inputDir })
      const curve = newCurve(ctx, settings.concurrency.length)
      const most = settings.concurrency.at(-1)
      const load = { warm: doc, files: new Array(most).fill(doc.file), timeoutMs: timeoutFor(settings, doc.inflatedBytes * most) }
      for (const n of settings.concurrency) {
        ctx.note(`${n} at once`)
        // n uploads share the machine: each may take n times as long
        const timeoutMs = timeoutFor(settings, doc.inflatedBytes * n)
        const failed = await curve.point(n, doc, new Array(n).fill(doc.file), timeoutMs, `with ${n} at once`)
        if (failed) return failed.killed ? withSites(ctx, failed, load) : failed
      }
      const { per, unit } = BY_CONCURRENCY
      const extra = { bodyBytes: doc.inflatedBytes }
      const verdict = judgeSlope(curve.points, LIMITS.concurrencySlopeMiBPerRequest, per, unit, curve.reference, extra)
      return withSites(ctx, verdict, load)
    }
  }
])

/** A curve of the handler's growth (the reference routes' beside it when asked), each point on a fresh process. */
function newCurve (ctx, length) {
  const reference = ctx.settings.reference ? REFERENCE_ROUTES : []
  const routes = ['student', ...reference]
  let left = length * routes.length
  const curve = {
    points: [],
    reference: reference.length === 0 ? null : Object.fromEntries(reference.map(function noPoints (route) { return [route, []] })),
    point: async function measurePoint (x, warm, files, timeoutMs, where) {
      for (const [k, route] of routes.entries()) {
        left--
        // the process for the next measurement starts while this one is measured
        const next = left > 0 ? routes[(k + 1) % routes.length] : false
        const m = await measureFresh(ctx, route, warm, files, timeoutMs, next)
        if (route === 'student') {
          const failed = await failure(ctx, m, where)
          if (failed) return { ...failed, details: { points: curve.points, reference: curve.reference } }
          // the idle figure too: memory held before the window counts as idle (docs/grading-isolation.md)
          curve.points.push({ x, growthMiB: toMiB(m.growth), idleMiB: toMiB(m.idleRss), ms: round(m.ms, 10) })
        } else {
          // a reference route: a figure for the charts and the card, never the handler's fault if it fails
          const ok = m.died === null && m.failedWarmUp === undefined &&
            m.outcome.every(function answered (res) { return res.status === 200 })
          curve.reference[route].push({ x, growthMiB: ok ? toMiB(m.growth) : null })
        }
      }
      return null
    }
  }
  return curve
}

/** On a fresh process: one upload of `warm` (first-request costs are not growth), then the window around all `files` at once. */
async function measureFresh (ctx, route, warm, files, timeoutMs, next) {
  const lab = await ctx.freshLab(next, route)
  const warmUp = await ctx.postTo(lab, route, { file: warm.file, timeoutMs: timeoutFor(ctx.settings, warm.inflatedBytes) })
  let m
  if (!answeredBy(ctx, route, warmUp)) {
    // not even the warm-up was answered: that is the figure, measuring more would only wait again
    m = { failedWarmUp: warmUp, outcome: null, ms: warmUp.ms, growth: null }
  } else {
    m = await lab.measure(function uploadAll () {
      return Promise.all(files.map(function upload (file) { return ctx.postTo(lab, route, { file, timeoutMs }) }))
    })
  }
  // a reset connection can reach us before the exit does
  if ((await lab.settle()) === 'dead' || lab.deaths > 0) return { ...m, died: lab.lastDeath, lab }
  return { ...m, died: null, lab }
}

/** Whether a route took a body: lab routes answer 200, the graded endpoint as its contract says. */
function answeredBy (ctx, route, res) {
  return route === 'student' ? ctx.contract.answered(res) : res.status === 200
}

/** The check's failure when the handler did not answer 200 (or the figure could not be read), else null. */
async function failure (ctx, m, where) {
  const res = m.failedWarmUp ?? m.outcome.find(function notAnswered (r) { return !ctx.contract.answered(r) }) ?? m.outcome[0]
  const place = m.failedWarmUp ? `${where}, on the warm-up upload` : where
  if (m.died !== null) {
    const killed = m.died.reason === 'memory'
    return {
      pass: false,
      died: true,
      killed,
      figure: killed ? `killed ${place}: +${toMiB(m.growth)} MiB and rising` : `${m.lab.label ?? 'the lab'} died ${place}`,
      reason: m.died.message
    }
  }
  const hung = `no answer within ${Math.round(res.ms / 1000)} s ${place}`
  if (res.error === 'timeout') return { pass: false, hung: true, elsewhere: true, figure: hung }
  if (!ctx.contract.answered(res)) return { pass: false, figure: `${describeFailure(res)} ${place}`, reason: await ctx.explain(res, m.lab) }
  if (m.growth === null) {
    return m.unreadable
      ? { pass: false, figure: 'not measured: memory could not be read from outside (no /proc here); the ' +
        'student\'s process is not asked for its own' }
      : { pass: false, figure: 'not measured: the kernel\'s peak could not be read or reset' }
  }
  return null
}

/** A failed check gets its load's allocation sites (memory-sites.js) in its details, and their top line's hint. */
async function withSites (ctx, result, load) {
  if (result.pass) return result
  ctx.note('the lines that allocate')
  const sites = await locateSites(ctx, load)
  return { ...result, hint: sitesHint(sites) ?? undefined, details: { ...result.details, sites } }
}

/** Least-squares slope per `per` units of x: passes under the limit, or when the whole rise is under the noise. */
function judgeSlope (points, limit, per, unit, reference, extra = {}) {
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
    details: {
      points, slope: round(slope, 10), riseMiB: round(rise, 10), unit, reference, referenceSlopes: referenceSlopes(reference, per), ...extra
    }
  }
}

/** Each reference route's slope, as the handler's is taken; null where a point is missing. */
function referenceSlopes (reference, per) {
  if (reference === null) return null
  return Object.fromEntries(Object.entries(reference).map(function slopeOf ([route, points]) {
    const complete = points.length > 1 && points.every(function measured (p) { return p.growthMiB !== null })
    return [route, complete ? round(leastSquaresSlope(points.map(function xy (p) { return [p.x / per, p.growthMiB] })), 10) : null]
  }))
}

function toMiB (bytes) {
  return bytes === null ? null : round(bytes / MiB, 10)
}

function formatMB (bytes) {
  return `${Math.round(bytes / MB)} MB`
}
