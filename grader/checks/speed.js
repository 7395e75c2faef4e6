/** Speed: MB/s against /streamparser-json (/good the ceiling), routes taking turns, students paused, medians kept. */
import { median } from '../../lib/measure/stats.js'
import { generatedDocument } from './bodies.js'
import { MB, round } from '../../lib/util/units.js'
import { LIMITS, timeoutFor } from './settings.js'

/** The route the handler is judged against, and the ceiling shown beside it. */
const TEXTBOOK_ROUTE = 'streamparser-json'
const CEILING_ROUTE = 'good'

export const checks = Object.freeze([
  {
    area: 'speed',
    name: `throughput against /${TEXTBOOK_ROUTE}`,
    meaning: `MB of JSON answered per second, against the lab's textbook streaming route (/${TEXTBOOK_ROUTE}, @streamparser/json) on ` +
      `the same body in the same run, taking turns, each in a process of its own; /${CEILING_ROUTE} shown as the ceiling`,
    limit: `at least ${LIMITS.speedRatio}× /${TEXTBOOK_ROUTE}`,
    hint: `Your route is slower than a streaming JSON library piped as its README shows (lib/ingest/streamparser.js; ` +
      `exercises/01-stream/solution-library.js): look for work per byte in JavaScript that could be per chunk (indexOf on a Buffer, ` +
      `slicing once per record), strings built byte by byte, JSON.parse on ever-growing text, or a stream that ` +
      `hands on a byte or a record at a time.`,
    trips: true,
    run: async function throughput (ctx) {
      const { settings } = ctx
      const doc = await generatedDocument({ bytes: settings.speedBytes, dir: ctx.inputDir })
      const timeoutMs = timeoutFor(settings, doc.inflatedBytes)
      const rates = { student: [], [TEXTBOOK_ROUTE]: [], [CEILING_ROUTE]: [] }
      const runs = []
      for (let k = 0; k < settings.speedRepeat; k++) {
        for (const route of turnOrder(k)) {
          ctx.note(`/${route}, round ${k + 1} of ${settings.speedRepeat}`)
          const res = route === 'student'
            ? await ctx.post(route, { file: doc.file, timeoutMs })
            : await ctx.lab.whileStudentsPaused(function timeReference () { return ctx.post(route, { file: doc.file, timeoutMs }) })
          runs.push({ round: k + 1, route, ms: res.ms, status: res.status })
          if (route === 'student') {
            if (res.error === 'timeout') return { pass: false, hung: true, figure: `no answer within ${Math.round(res.ms / 1000)} s` }
            if (!ctx.contract.answered(res)) {
              return { pass: false, figure: ctx.contract.answer(res, doc.reference).why, reason: await ctx.explain(res), details: { runs } }
            }
          }
          const took = route === 'student' ? ctx.contract.answered(res) : res.status === 200
          if (took) rates[route].push(doc.inflatedBytes / MB / (res.ms / 1000))
        }
      }
      const student = median(rates.student)
      const textbook = median(rates[TEXTBOOK_ROUTE])
      const ceiling = median(rates[CEILING_ROUTE])
      const ceilingText = ceiling === null ? `/${CEILING_ROUTE} did not answer` : `/${CEILING_ROUTE} ${ceiling.toFixed(1)} MB/s`
      const on = `on ${Math.round(doc.inflatedBytes / MB)} MB, median of ${settings.speedRepeat}`
      const details = {
        runs,
        bytes: doc.inflatedBytes,
        studentMBps: round(student, 10),
        textbookMBps: textbook === null ? null : round(textbook, 10),
        goodMBps: ceiling === null ? null : round(ceiling, 10)
      }
      if (textbook === null) {
        return {
          pass: false,
          figure: `${student.toFixed(1)} MB/s; /${TEXTBOOK_ROUTE} did not answer, nothing to compare with; ${ceilingText} (${on})`,
          details
        }
      }
      const ratio = student / textbook
      return {
        pass: ratio >= LIMITS.speedRatio,
        figure: `${student.toFixed(1)} MB/s, ${ratio.toFixed(2)}× /${TEXTBOOK_ROUTE} (${textbook.toFixed(1)} ` +
          `MB/s); ${ceilingText} (${on})`,
        details: { ...details, ratio: Math.round(ratio * 100) / 100 }
      }
    }
  }
])

/** Round k's order: the handler, the textbook route, the ceiling; reversed every other round. */
function turnOrder (k) {
  const order = ['student', TEXTBOOK_ROUTE, CEILING_ROUTE]
  return k % 2 === 0 ? order : order.reverse()
}
