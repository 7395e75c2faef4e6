/**
 * Safety: zip bombs (generators/bombs.js: a run of spaces at ~1000:1, the
 * same over many gzip members, a million nested arrays) refused with a 4xx
 * before memory grows, and truncated or corrupt bodies refused with a 4xx,
 * not a crash or a hang.
 */
import { createBomb } from '../../generators/bombs.js'
import { lookalikeStrings, corrupt, truncated } from '../bodies.js'
import { judgeRefusal } from '../reference.js'
import { LIMITS } from '../settings.js'

const AREA = 'safety'
const MiB = 1024 * 1024

const BOMB_HINT = 'Count what you inflate and stop at once: refuse (413) when the inflated bytes pass a limit (say 256 MiB), or when inflated/compressed passes a ratio (say 100) once a MiB has come out, and when records nest deeper than you need (say 64). Check on every chunk, then destroy the pipeline.'

function bombCheck (variant, meaning) {
  return {
    area: AREA,
    name: `zip bomb: ${variant}`,
    meaning,
    limit: `4xx with a JSON body, peak growth at most ${LIMITS.bombGrowthMiB} MiB`,
    hint: BOMB_HINT,
    // a slow refusal is this check's failure, not a sign that the handler hangs on everything
    trips: false,
    run: async function zipBomb (ctx) {
      const bomb = createBomb(variant === 'depth' ? { variant } : { variant, bytes: ctx.settings.bombBytes })
      // a lab of its own, as the memory checks measure: what an earlier check left in the
      // allocator's free lists would be reused without a byte of growth
      const lab = await ctx.freshLab(variant !== 'depth')
      const m = await lab.measure(function sendBomb () {
        return ctx.postTo(lab, 'student', { streams: bomb.streams, timeoutMs: ctx.settings.bombMs })
      })
      if ((await lab.settle()) === 'dead' || lab.deaths > 0) {
        const killed = lab.lastDeath.reason === 'memory'
        return { pass: false, died: true, figure: killed && m.growth !== null ? `killed: +${(m.growth / MiB).toFixed(0)} MiB and rising` : 'the lab died', reason: lab.lastDeath.message }
      }
      const res = m.outcome
      const growth = m.growth === null ? null : m.growth / MiB
      const grew = growth === null ? '' : `, +${growth.toFixed(1)} MiB`
      const details = { variant, inflatedBytes: bomb.inflatedBytes, compressedBytes: bomb.compressedBytes, sentBytes: res.sentBytes, status: res.status, ms: res.ms, growthMiB: growth === null ? null : Math.round(growth * 10) / 10 }
      if (res.error === 'timeout') {
        return { pass: false, hung: true, elsewhere: true, figure: `no answer within ${Math.round(res.ms / 1000)} s${grew}: still inflating`, details }
      }
      const verdict = judgeRefusal(res)
      const small = growth !== null && growth <= LIMITS.bombGrowthMiB
      const when = `after ${(res.ms / 1000).toFixed(1)} s`
      return {
        pass: verdict.ok && small,
        figure: `${verdict.why} ${when}${grew}`,
        reason: verdict.ok && !small ? (growth === null ? 'memory not measured (Linux only)' : `refused, but only after memory grew by ${growth.toFixed(0)} MiB`) : await ctx.explain(res, lab),
        details
      }
    }
  }
}

export const checks = Object.freeze([
  bombCheck('ratio', 'a few MB of gzip that inflate to gigabytes of spaces inside valid JSON (about 1000:1)'),
  bombCheck('members', 'the same, as a thousand gzip members back to back'),
  bombCheck('depth', 'a million nested arrays: 2 MB of JSON in a few KB of gzip'),
  {
    area: AREA,
    name: 'truncated body',
    meaning: 'gzip cut short, and whole gzip around JSON cut short inside a record',
    limit: '4xx with a JSON body for each',
    hint: 'zlib reports a body cut short as an error ("unexpected end of file") when the stream ends, and a JSON document cut short leaves you inside a record: answer 400 for both, and make sure the error reaches your answer (pipeline rejects; a bare .pipe() does not).',
    trips: true,
    run: function truncatedBodies (ctx) {
      return refuseAll(ctx, truncated(lookalikeStrings()))
    }
  },
  {
    area: AREA,
    name: 'corrupt body',
    meaning: 'bytes flipped inside the deflate data, a wrong CRC-32 in the trailer, a body that is not gzip at all',
    limit: '4xx with a JSON body for each',
    hint: 'Answer zlib\'s errors (Z_DATA_ERROR: "incorrect header check", "invalid distance", "incorrect data check") with 400, not 500; they arrive as the pipeline\'s rejection.',
    trips: true,
    run: function corruptBodies (ctx) {
      return refuseAll(ctx, corrupt(lookalikeStrings()))
    }
  }
])

async function refuseAll (ctx, bodies) {
  const answers = []
  for (const b of bodies) {
    const res = await ctx.post('student', { buffer: b.gzip })
    if (res.error === 'timeout') return { pass: false, hung: true, figure: `no answer within ${Math.round(res.ms / 1000)} s (${b.name})`, details: { answers } }
    const verdict = judgeRefusal(res)
    answers.push({ body: b.name, status: res.status, ok: verdict.ok, why: verdict.why })
    if (!verdict.ok) {
      return { pass: false, figure: `${b.name}: ${verdict.why}`, reason: await ctx.explain(res), details: { answers } }
    }
  }
  return { pass: true, figure: answers.map(function describe (a) { return a.why }).join(', '), details: { answers } }
}
