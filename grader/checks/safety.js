/**
 * Safety: zip bombs (generators/bombs.js) refused with a 4xx before memory
 * grows, and truncated or corrupt bodies refused with a 4xx, not a crash or
 * a hang; each sent chunked and with its Content-Length, and a refusal
 * counts only when a good body sent the same way is answered (framing.js).
 */
import { createBomb } from '../../generators/bombs.js'
import { bombParams, corrupt, FRAMING_LABELS, framed, lookalikeStrings, truncated } from './bodies.js'
import { FRAMING_REASON, goodBodyAnswered } from './framing.js'
import { LIMITS } from './settings.js'

const AREA = 'safety'
const MiB = 1024 * 1024
/** The bombs go chunked first (a stream of unknown length, the usual attack), then with their Content-Length. */
const BOMB_FRAMINGS = Object.freeze(['chunked', 'length'])

const BOMB_HINT = 'Count what you inflate and stop at once: refuse (413) when the inflated bytes pass a limit (say 256 MiB), or when inflated/compressed passes a ratio (say 100) once a MiB has come out, and when records nest deeper than you need (say 64). Check on every chunk, then destroy the pipeline. Judge the bytes, not the framing: a bomb may come with or without a Content-Length.'

function bombCheck (variant, meaning) {
  return {
    area: AREA,
    name: `zip bomb: ${variant}`,
    meaning,
    limit: `4xx with a JSON body, chunked and with a Content-Length, peak growth at most ${LIMITS.bombGrowthMiB} MiB; a good body sent the same way answered`,
    hint: BOMB_HINT,
    // a slow refusal is this check's failure, not a sign that the handler hangs on everything
    trips: false,
    run: async function zipBomb (ctx) {
      const sends = []
      for (const [k, framing] of BOMB_FRAMINGS.entries()) {
        const last = variant === 'depth' && k === BOMB_FRAMINGS.length - 1
        const outcome = await sendBomb(ctx, variant, framing, !last)
        sends.push(outcome.details)
        if (!outcome.pass) return { ...outcome, figure: `${outcome.figure} (${FRAMING_LABELS[framing]})`, details: { variant, sends } }
      }
      return {
        pass: true,
        figure: sends.map(function described (d) { return `${d.refusal} (${FRAMING_LABELS[d.framing]})` }).join(' · '),
        details: { variant, sends }
      }
    }
  }
}

/**
 * One bomb, one way, on a lab of its own (as the memory checks measure: what
 * an earlier check left in the allocator's free lists would be reused
 * without a byte of growth); after a refusal, a good body sent the same way
 * to the same lab.
 * @returns {Promise<{ pass: boolean, figure: string, reason?: string|null, hung?: boolean, died?: boolean,
 *   elsewhere?: boolean, details: object }>}
 */
async function sendBomb (ctx, variant, framing, another) {
  const bomb = createBomb(bombParams(variant, ctx.settings.bombBytes, ctx.seed))
  const headers = framing === 'length' ? { 'content-length': String(bomb.compressedBytes) } : {}
  const lab = await ctx.freshLab(another)
  const m = await lab.measure(function sendBombOnce () {
    return ctx.postTo(lab, 'student', { streams: bomb.streams, headers, timeoutMs: ctx.settings.bombMs })
  })
  const details = { framing, inflatedBytes: bomb.inflatedBytes, compressedBytes: bomb.compressedBytes }
  if ((await lab.settle()) === 'dead' || lab.deaths > 0) {
    const killed = lab.lastDeath.reason === 'memory'
    return { pass: false, died: true, figure: killed && m.growth !== null ? `killed: +${(m.growth / MiB).toFixed(0)} MiB and rising` : `${lab.label ?? 'the lab'} died`, reason: lab.lastDeath.message, details }
  }
  const res = m.outcome
  const growth = m.growth === null ? null : m.growth / MiB
  const grew = growth === null ? '' : `, +${growth.toFixed(1)} MiB`
  Object.assign(details, { sentBytes: res.sentBytes, status: res.status, ms: res.ms, growthMiB: growth === null ? null : Math.round(growth * 10) / 10 })
  if (res.error === 'timeout') {
    return { pass: false, hung: true, elsewhere: true, figure: `no answer within ${Math.round(res.ms / 1000)} s${grew}: still inflating`, details }
  }
  const verdict = ctx.contract.refusal(res)
  // a service the grader has no pid of is judged by its refusal alone, and the figure says so
  const unwatched = growth === null && lab.measurable === false
  const small = unwatched || (growth !== null && growth <= LIMITS.bombGrowthMiB)
  details.refusal = `${verdict.why} after ${(res.ms / 1000).toFixed(1)} s${unwatched ? ', growth not measured (no pid)' : grew}`
  if (!verdict.ok || !small) {
    return {
      pass: false,
      figure: details.refusal,
      reason: verdict.ok ? (growth === null ? 'memory not measured (Linux only)' : `refused, but only after memory grew by ${growth.toFixed(0)} MiB`) : await ctx.explain(res, lab),
      details
    }
  }
  const control = await goodBodyAnswered(function postToFreshLab (body) { return ctx.postTo(lab, 'student', body) }, framing, ctx.seed, ctx.contract)
  details.control = { status: control.status, ok: control.ok, why: control.why }
  if (!control.ok) {
    return { pass: false, figure: `${details.refusal}, and a good body sent the same way: ${control.why}`, reason: FRAMING_REASON, details }
  }
  return { pass: true, figure: details.refusal, details }
}

export const checks = Object.freeze([
  bombCheck('ratio', 'a few MB of gzip that inflate to gigabytes of spaces inside valid JSON (about 1000:1)'),
  bombCheck('members', 'the same, as a thousand gzip members back to back'),
  bombCheck('depth', 'a million nested arrays: 2 MB of JSON in a few KB of gzip'),
  {
    area: AREA,
    name: 'truncated body',
    meaning: 'gzip cut short, and whole gzip around JSON cut short inside a record',
    limit: '4xx with a JSON body for each, with and without Content-Length; a good body sent the same way answered',
    hint: 'zlib reports a body cut short as an error ("unexpected end of file") when the stream ends, and a JSON document cut short leaves you inside a record: answer 400 for both, and make sure the error reaches your answer (pipeline rejects; a bare .pipe() does not).',
    trips: true,
    run: function truncatedBodies (ctx) {
      return refuseAll(ctx, truncated(lookalikeStrings(ctx.seed), ctx.seed))
    }
  },
  {
    area: AREA,
    name: 'corrupt body',
    meaning: 'bytes flipped inside the deflate data, a wrong CRC-32 in the trailer, a body that is not gzip at all',
    limit: '4xx with a JSON body for each, with and without Content-Length; a good body sent the same way answered',
    hint: 'Answer zlib\'s errors (Z_DATA_ERROR: "incorrect header check", "invalid distance", "incorrect data check") with 400, not 500; they arrive as the pipeline\'s rejection.',
    trips: true,
    run: function corruptBodies (ctx) {
      return refuseAll(ctx, corrupt(lookalikeStrings(ctx.seed), ctx.seed))
    }
  }
])

/**
 * Send each body both ways; each must be refused with a 4xx JSON answer. A
 * refusal counts only if a good body sent the same way is answered (one
 * good body per framing, sent after the broken ones).
 */
async function refuseAll (ctx, bodies) {
  const answers = []
  for (const framing of BOMB_FRAMINGS) {
    for (const b of bodies) {
      const res = await ctx.post('student', framed(b.gzip, framing))
      const way = `${b.name}, ${FRAMING_LABELS[framing]}`
      if (res.error === 'timeout') return { pass: false, hung: true, figure: `no answer within ${Math.round(res.ms / 1000)} s (${way})`, details: { answers } }
      const verdict = ctx.contract.refusal(res)
      answers.push({ body: b.name, framing, status: res.status, ok: verdict.ok, why: verdict.why })
      if (!verdict.ok) {
        return { pass: false, figure: `${way}: ${verdict.why}`, reason: await ctx.explain(res), details: { answers } }
      }
    }
    const control = await goodBodyAnswered(function postToLab (body) { return ctx.post('student', body) }, framing, ctx.seed, ctx.contract)
    if (!control.ok) return { pass: false, figure: `refused, and ${control.figure}`, reason: FRAMING_REASON, details: { answers } }
  }
  const whys = [...new Set(answers.map(function describe (a) { return a.why }))]
  return { pass: true, figure: `${whys.join(', ')}, with and without Content-Length`, details: { answers } }
}
