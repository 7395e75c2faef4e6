/**
 * Resilience: clients that hang up mid-upload (after the headers, a few
 * bytes in, halfway) leave the handler nothing stuck: a normal request after
 * them is answered, and no handler call or connection is left pending.
 */
import { generatedBuffer, generatedDocument } from '../bodies.js'
import { abortUpload } from '../client.js'
import { judgeAnswer } from '../reference.js'

const AREA = 'resilience'
/** Uploads cut off at once, so the handler meets several vanishing clients together. */
const BATCH = 5
const SETTLE_MS = 5000

export const checks = Object.freeze([
  {
    area: AREA,
    name: 'answers after aborted uploads',
    meaning: 'uploads cut off mid-body (from right after the headers to 90 % in), then a normal request: it must be answered, and right',
    limit: 'the normal request answered, and right',
    hint: 'A client that hangs up makes the request stream fail (ECONNRESET / aborted): with pipeline() that is a rejection you can ignore, with bare .pipe() and listeners it can leave streams, timers or a shared lock held, so that the next request waits.',
    trips: true,
    run: async function answersAfterAborts (ctx) {
      const upload = await generatedBuffer({ bytes: ctx.settings.concurrencyBytes, dir: ctx.inputDir })
      const normal = await generatedDocument({ size: 1000, dir: ctx.inputDir })
      const cuts = []
      for (let k = 0; k < ctx.settings.aborts; k++) cuts.push(Math.floor(upload.gzip.length * ((k * 37) % 91) / 100))
      for (let k = 0; k < cuts.length; k += BATCH) {
        ctx.note(`aborted uploads ${k + 1} to ${Math.min(cuts.length, k + BATCH)} of ${cuts.length}`)
        await Promise.all(cuts.slice(k, k + BATCH).map(function cutOff (bytes) { return abortUpload(ctx.url('student'), upload.gzip, bytes) }))
      }
      const res = await ctx.post('student', { file: normal.file })
      if (res.error === 'timeout') return { pass: false, hung: true, figure: `no answer within ${Math.round(res.ms / 1000)} s after ${cuts.length} aborted uploads` }
      const verdict = judgeAnswer(res, normal.reference)
      return {
        pass: verdict.ok,
        figure: verdict.ok ? `answered after ${cuts.length} aborted uploads (${verdict.why})` : `after ${cuts.length} aborted uploads: ${verdict.why}`,
        reason: verdict.ok ? null : await ctx.explain(res),
        details: { aborted: cuts.length, cutAt: cuts }
      }
    }
  },
  {
    area: AREA,
    name: 'nothing left pending',
    meaning: 'after the aborted uploads: handler calls still running (an async handler\'s promise unsettled) and requests to /student still open',
    limit: `none, ${SETTLE_MS / 1000} s after the last request`,
    hint: 'An async handler that awaits the body\'s "end" waits forever for a client that hung up: await pipeline() (it rejects on a hang-up) or listen for "error" and "close" as well.',
    trips: true,
    run: async function nothingPending (ctx) {
      const until = Date.now() + SETTLE_MS
      let stats = await ctx.lab.stats()
      while (stats !== null && (stats.pending > 0 || stats.open > 0) && Date.now() < until) {
        await new Promise(function pause (resolve) { setTimeout(resolve, 100) })
        stats = await ctx.lab.stats()
      }
      if (stats === null) return { pass: false, hung: true, figure: 'the lab did not answer (its event loop is blocked)' }
      const router = ctx.lab.kind === 'router'
      const pass = stats.open === 0 && (router || stats.pending === 0)
      const calls = router ? 'calls not tracked (a Router)' : `${stats.pending} of ${stats.calls} handler calls pending`
      return {
        pass,
        figure: `${calls}, ${stats.open} requests still open`,
        details: stats
      }
    }
  }
])
