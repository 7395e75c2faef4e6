/**
 * Speed: the handler's throughput (inflated MB answered per second, upload
 * included) against /good's on the same body, in the same lab, taking turns;
 * the best of a few runs each, so one slow turn of a busy machine is not the figure.
 */
import { generatedDocument } from '../bodies.js'
import { judgeAnswer } from '../reference.js'
import { LIMITS, timeoutFor } from '../settings.js'

const MB = 1e6

export const checks = Object.freeze([
  {
    area: 'speed',
    name: 'throughput against /good',
    meaning: 'MB of JSON answered per second, against the lab\'s streaming route on the same body in the same run',
    limit: `at least ${LIMITS.speedRatio}× /good`,
    hint: 'Your route is slow: look for work per byte in JavaScript that could be per chunk (indexOf on a Buffer, slicing once per record), strings built byte by byte, or JSON.parse on ever-growing text.',
    trips: true,
    run: async function throughput (ctx) {
      const { settings } = ctx
      const doc = await generatedDocument({ bytes: settings.speedBytes, dir: ctx.inputDir })
      const timeoutMs = timeoutFor(settings, doc.inflatedBytes)
      const best = { student: Infinity, good: Infinity }
      const runs = []
      for (let k = 0; k < settings.speedRepeat; k++) {
        for (const route of ['student', 'good']) {
          ctx.note(`/${route}, run ${k + 1} of ${settings.speedRepeat}`)
          const res = await ctx.post(route, { file: doc.file, timeoutMs })
          runs.push({ route, ms: res.ms, status: res.status })
          if (route === 'student') {
            if (res.error === 'timeout') return { pass: false, hung: true, figure: `no answer within ${Math.round(res.ms / 1000)} s` }
            if (res.status !== 200) return { pass: false, figure: judgeAnswer(res, doc.reference).why, reason: await ctx.explain(res), details: { runs } }
          }
          if (res.status === 200) best[route] = Math.min(best[route], res.ms)
        }
      }
      const mbps = function rate (ms) { return doc.inflatedBytes / MB / (ms / 1000) }
      const student = mbps(best.student)
      const good = Number.isFinite(best.good) ? mbps(best.good) : null
      if (good === null) return { pass: false, figure: `${student.toFixed(1)} MB/s; /good did not answer, nothing to compare with`, details: { runs } }
      const ratio = student / good
      return {
        pass: ratio >= LIMITS.speedRatio,
        figure: `${student.toFixed(1)} MB/s, ${ratio.toFixed(2)}× /good (${good.toFixed(1)} MB/s) on ${Math.round(doc.inflatedBytes / MB)} MB`,
        details: { runs, studentMBps: round(student), goodMBps: round(good), ratio: Math.round(ratio * 100) / 100, bytes: doc.inflatedBytes }
      }
    }
  }
])

function round (value) {
  return Math.round(value * 10) / 10
}
