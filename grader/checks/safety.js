/** Safety: zip bombs, truncated and corrupt bodies refused with a 4xx, no crash or hang, both framings (framing.js). */
import path from 'node:path'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createBomb, prepareBomb } from '../../lib/generate/bombs.js'
import { bombParams, corrupt, FRAMING_LABELS, framed, lookalikeStrings, truncated } from './bodies.js'
import { codingsTaken, encodedHeaders } from './encodings.js'
import { FRAMING_REASON, goodBodyAnswered } from './framing.js'
import { LIMITS } from './settings.js'
import { MiB } from '../../lib/util/units.js'

const AREA = 'safety'
/** The bombs go chunked first (a stream of unknown length, the usual attack), then with their Content-Length. */
const BOMB_FRAMINGS = Object.freeze(['chunked', 'length'])

const BOMB_HINT = 'Count what you inflate and stop at once: refuse (413) when the inflated bytes pass a limit (say 256 MiB), or when ' +
  'inflated/compressed passes a ratio (say 100) once a MiB has come out, and when records nest deeper than you need (say 64). Check on ' +
  'every chunk, then destroy the pipeline. Judge the bytes, not the framing: a bomb may come with or without a Content-Length.'

function bombCheck (variant, meaning) {
  return {
    area: AREA,
    name: `zip bomb: ${variant}`,
    meaning,
    limit: `4xx with a JSON body, chunked and with a Content-Length, peak growth at most ${LIMITS.bombGrowthMiB} ` +
      `MiB; a good body sent the same way answered`,
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

/** The variants each coding the endpoint takes is bombed with: one run of spaces, and the coding inside itself. */
const CODING_VARIANTS = Object.freeze(['ratio', 'chained'])

/** A ratio and a chained bomb in each coding taken (ctx.encodings), both framings; a failing coding does not stop the rest. */
const codingBombs = {
  area: AREA,
  name: 'zip bomb: each encoding it takes',
  meaning: 'a ratio bomb and a chained one (the coding inside itself, three layers) in each Content-Encoding the small document got in ' +
    'with (gzip, deflate, br, zstd); a coding it refuses is no failure',
  limit: `for each: 4xx with a JSON body, chunked and with a Content-Length, peak growth at most ${LIMITS.bombGrowthMiB} MiB; a good ` +
    `body sent the same way answered`,
  hint: 'One counter for every coding: count the bytes each decoder gives out, whichever it is, and refuse at the same limits (inflated ' +
    'bytes, ratio, layers). A framework that inflates gzip with a limit may inflate br whole: decode them all as streams, or refuse the ' +
    'ones you do not bound (415).',
  trips: false,
  run: async function bombEachCoding (ctx) {
    const encodings = ctx.encodings
    const takes = codingsTaken(encodings)
    if (takes.length === 0) {
      const line = encodings === null ? 'not probed' : `it took no compressed coding as ${encodings.mediaType}`
      return { pass: true, figure: `nothing to bomb: ${line}`, details: { codings: {} } }
    }
    const codings = {}
    const sends = takes.length * CODING_VARIANTS.length * BOMB_FRAMINGS.length
    let sent = 0
    let firstFailure = null
    for (const coding of takes) {
      const mine = { pass: true, sends: [] }
      codings[coding] = mine
      for (const variant of CODING_VARIANTS) {
        for (const framing of BOMB_FRAMINGS) {
          sent++
          if (!mine.pass) continue
          const outcome = await sendBomb(ctx, { variant, coding, mediaType: encodings.mediaType }, framing, sent < sends)
          mine.sends.push({ variant, ...outcome.details })
          if (!outcome.pass) {
            Object.assign(mine, { pass: false, figure: `${coding} ${variant}: ${outcome.figure} ` +
              `(${FRAMING_LABELS[framing]})`, reason: outcome.reason ?? null })
            firstFailure ??= outcome
          }
        }
      }
      mine.figure ??= `${coding}: ${CODING_VARIANTS.map(function refusals (variant) {
        const sends = mine.sends.filter(function ofVariant (d) { return d.variant === variant })
        return `${variant} ${sends.map(function refused (d) { return d.refusal }).join(' · ')}`
      }).join(', ')}`
    }
    const figure = Object.values(codings).map(function described (c) { return c.figure }).join('; ')
    if (firstFailure === null) return { pass: true, figure, details: { mediaType: encodings.mediaType, codings } }
    const failed = Object.entries(codings).filter(function didFail ([, c]) { return !c.pass })
    return {
      pass: false,
      figure,
      reason: failed.map(function why ([coding, c]) { return `${coding}: ${c.reason ?? 'the bomb was not refused'}` }).join('; '),
      // a hang or a death was on a fresh process of the check's own: the runner decides what follows
      hung: firstFailure.hung,
      died: firstFailure.died,
      elsewhere: firstFailure.elsewhere,
      details: { mediaType: encodings.mediaType, codings }
    }
  }
}

/** The bytes of a bomb whose size is known once made (a chained one), for a send with its Content-Length. */
async function wholeBomb (streams) {
  const parts = []
  await pipeline(...streams, new Writable({
    write: function keep (chunk, encoding, callback) {
      parts.push(chunk)
      callback()
    }
  }))
  return Buffer.concat(parts)
}

/** One bomb's body: gzip (`kind` a variant's name), or `{ variant, coding, mediaType }` with its Content-Encoding. */
async function bombBody (ctx, kind, framing) {
  if (typeof kind === 'string') {
    const bomb = createBomb(bombParams(kind, ctx.settings.bombBytes, ctx.seed))
    const headers = framing === 'length' ? { 'content-length': String(bomb.compressedBytes) } : {}
    return { bomb, body: { streams: bomb.streams, headers } }
  }
  const params = { ...bombParams(kind.variant, ctx.settings.bombBytes, ctx.seed), codec: kind.coding }
  const bomb = await prepareBomb(params, { cacheDir: path.join(ctx.inputDir, 'bombs') })
  const headers = encodedHeaders(bomb.codings, kind.mediaType)
  if (framing === 'chunked') return { bomb, body: { streams: bomb.streams, headers } }
  const sized = { ...headers, 'content-length': String(bomb.compressedBytes) }
  if (bomb.compressedBytes !== null) return { bomb, body: { streams: bomb.streams, headers: sized } }
  const buffer = await wholeBomb(bomb.streams)
  return { bomb: { ...bomb, compressedBytes: buffer.length }, body: { buffer, headers } }
}

/** One bomb on a lab of its own (free lists left by an earlier check would hide growth), then a good body the same way. */
async function sendBomb (ctx, kind, framing, another) {
  const { bomb, body } = await bombBody(ctx, kind, framing)
  const lab = await ctx.freshLab(another)
  const m = await lab.measure(function sendBombOnce () {
    return ctx.postTo(lab, 'student', { ...body, timeoutMs: ctx.settings.bombMs })
  })
  const details = { framing, inflatedBytes: bomb.inflatedBytes, compressedBytes: bomb.compressedBytes }
  if ((await lab.settle()) === 'dead' || lab.deaths > 0) {
    const killed = lab.lastDeath.reason === 'memory'
    return { pass: false, died: true, figure: killed && m.growth !== null ? `killed: +${(m.growth / MiB).toFixed(0)} MiB and ` +
      `rising` : `${lab.label ?? 'the lab'} died`, reason: lab.lastDeath.message, details }
  }
  const res = m.outcome
  const growth = m.growth === null ? null : m.growth / MiB
  const grew = growth === null ? '' : `, +${growth.toFixed(1)} MiB`
  const growthMiB = growth === null ? null : Math.round(growth * 10) / 10
  Object.assign(details, { sentBytes: res.sentBytes, status: res.status, ms: res.ms, growthMiB })
  if (res.error === 'timeout') {
    return { pass: false, hung: true, elsewhere: true, figure: `no answer within ${Math.round(res.ms / 1000)} ` +
      `s${grew}: still inflating`, details }
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
      reason: !verdict.ok ? await ctx.explain(res, lab)
        : growth === null ? 'memory not measured (Linux only)' : `refused, but only after memory grew by ${growth.toFixed(0)} MiB`,
      details
    }
  }
  const encoded = typeof kind === 'string' ? null : { coding: kind.coding, mediaType: kind.mediaType }
  function postToFreshLab (good) { return ctx.postTo(lab, 'student', good) }
  const control = await goodBodyAnswered(postToFreshLab, framing, ctx.seed, ctx.contract, encoded)
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
    hint: 'zlib reports a body cut short as an error ("unexpected end of file") when the stream ends, and a JSON document cut short ' +
      'leaves you inside a record: answer 400 for both, and make sure the error reaches your answer (pipeline ' +
      'rejects; a bare .pipe() does not).',
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
    hint: 'Answer zlib\'s errors (Z_DATA_ERROR: "incorrect header check", "invalid distance", "incorrect data check") with 400, not ' +
      '500; they arrive as the pipeline\'s rejection.',
    trips: true,
    run: function corruptBodies (ctx) {
      return refuseAll(ctx, corrupt(lookalikeStrings(ctx.seed), ctx.seed))
    }
  },
  // last: a coding it inflates whole may take the process down, and the rest of the area with it
  codingBombs
])

/** Each body both ways must be refused with a 4xx JSON answer, and one good body per framing answered after. */
async function refuseAll (ctx, bodies) {
  const answers = []
  for (const framing of BOMB_FRAMINGS) {
    for (const b of bodies) {
      const res = await ctx.post('student', framed(b.gzip, framing))
      const way = `${b.name}, ${FRAMING_LABELS[framing]}`
      if (res.error === 'timeout') return { pass: false, hung: true, figure: `no answer within ${Math.round(res.ms / 1000)} s ` +
        `(${way})`, details: { answers } }
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
