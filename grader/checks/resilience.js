/** Resilience: after clients hang up mid-upload the next request is answered and the work ends, read from outside. */
import { generatedBuffer, generatedDocument } from './bodies.js'
import { abortUpload } from './client.js'
import { MB, round } from '../../lib/util/units.js'
import { PENDING_WAIT, pendingWait, timeoutFor } from './settings.js'

const AREA = 'resilience'
/** Uploads cut off at once, so the handler meets several vanishing clients together. */
const BATCH = 5
const POLL_MS = 100
/** Idle: at most IDLE_CPU_MS of CPU in the last IDLE_WINDOW_MS (two 10 ms ticks: timers, a collection). */
const IDLE_WINDOW_MS = 500
const IDLE_CPU_MS = 20

/** What the first check measured, for the second: per lab, so two runs in one process keep their own. */
const measured = new WeakMap()

export const checks = Object.freeze([
  {
    area: AREA,
    name: 'answers after aborted uploads',
    meaning: 'uploads cut off mid-body (from right after the headers to 90 % in), then a normal request: it must be answered, and right',
    limit: 'the normal request answered, and right',
    hint: 'A client that hangs up makes the request stream fail (ECONNRESET / aborted): with pipeline() that is a rejection you can ' +
      'ignore, with bare .pipe() and listeners it can leave streams, timers or a shared lock held, so that the next request waits.',
    trips: true,
    run: async function answersAfterAborts (ctx) {
      const upload = await generatedBuffer({ bytes: ctx.settings.concurrencyBytes, seed: ctx.seed, dir: ctx.inputDir })
      const normal = await generatedDocument({ size: 1000, seed: ctx.seed, dir: ctx.inputDir })
      ctx.note('one whole upload first: the handler\'s speed')
      const whole = await ctx.post('student', { buffer: upload.gzip, timeoutMs: timeoutFor(ctx.settings, upload.inflatedBytes) })
      if (whole.error === 'timeout') return { pass: false, hung: true, figure: `no answer within ${Math.round(whole.ms / 1000)} s to a ` +
        `whole upload, before any was cut off` }
      const MBps = ctx.contract.answered(whole) ? upload.inflatedBytes / MB / (whole.ms / 1000) : null
      const cuts = []
      for (let k = 0; k < ctx.settings.aborts; k++) cuts.push(Math.floor(upload.gzip.length * ((k * 37) % 91) / 100))
      // what the handler may still have to read: the inflated bytes behind the compressed bytes each upload delivered
      const delivered = cuts.reduce(function sum (total, cut) { return total + cut }, 0)
      const receivedBytes = Math.round(delivered / upload.gzip.length * upload.inflatedBytes)
      measured.set(ctx.lab, { MBps, receivedBytes })
      for (let k = 0; k < cuts.length; k += BATCH) {
        ctx.note(`aborted uploads ${k + 1} to ${Math.min(cuts.length, k + BATCH)} of ${cuts.length}`)
        await Promise.all(cuts.slice(k, k + BATCH).map(function cutOff (bytes) {
          return abortUpload(ctx.url('student'), upload.gzip, bytes, ctx.headers)
        }))
      }
      const res = await ctx.post('student', { file: normal.file })
      const details = { aborted: cuts.length, cutAt: cuts, receivedBytes, MBps: MBps === null ? null : round(MBps, 10) }
      if (res.error === 'timeout') return { pass: false, hung: true, figure: `no answer within ${Math.round(res.ms / 1000)} s after ` +
        `${cuts.length} aborted uploads`, details }
      const verdict = ctx.contract.answer(res, normal.reference)
      return {
        pass: verdict.ok,
        figure: verdict.ok ? `answered after ${cuts.length} aborted uploads ` +
          `(${verdict.why})` : `after ${cuts.length} aborted uploads: ${verdict.why}`,
        reason: verdict.ok ? null : await ctx.explain(res),
        details
      }
    }
  },
  {
    area: AREA,
    name: 'nothing left pending',
    meaning: 'after the aborted uploads, read from outside the handler\'s process: still working (its CPU time rising), connections to ' +
      '/student still held, requests unanswered, once it has had the time its own speed needs for the bytes it received',
    limit: `idle, no connection held, nothing unanswered, within ${PENDING_WAIT.MARGIN}× the time the handler's measured speed needs ` +
      `for the bytes it received (at least ${PENDING_WAIT.FLOOR_MS / 1000} s, at most ${PENDING_WAIT.CEILING_MS / 1000} s)`,
    hint: 'Work on a body must stop when its client goes. pipeline(req, …) destroys every stream of the chain on a hang-up and ' +
      'rejects: let the call end there. A loop that polls for the body\'s end (setImmediate, setTimeout), or goes on with what ' +
      'arrived as if more were coming, works forever for a client that is gone: listen for "close" on the request, stop the work, ' +
      'release what the call holds.',
    trips: true,
    run: async function nothingPending (ctx) {
      const wait = pendingWait(measured.get(ctx.lab))
      ctx.note(`waiting up to ${(wait.ms / 1000).toFixed(1)} s for work still under way`)
      const started = Date.now()
      const samples = [{ at: started, cpu: ctx.lab.cpuMs() }]
      let stats = await ctx.lab.stats()
      let state = leftOver(stats, samples)
      while (stats !== null && !state.settled && Date.now() - started < wait.ms) {
        await new Promise(function pause (resolve) { setTimeout(resolve, POLL_MS) })
        samples.push({ at: Date.now(), cpu: ctx.lab.cpuMs() })
        stats = await ctx.lab.stats()
        state = leftOver(stats, samples)
      }
      const waitedMs = Date.now() - started
      if (stats === null) return { pass: false, hung: true, figure: 'the handler\'s process is gone' }
      const first = samples[0].cpu
      const last = samples[samples.length - 1].cpu
      const workedMs = first === null || last === null ? null : last - first
      const details = { ...counts(stats), cpuMsAfterHangUps: workedMs, busy: state.busy, waitedMs, waitMs: wait.ms, basis: wait.basis }
      const seen = [
        stats.open === null ? `connections not read (${stats.unread ?? 'no /proc'})` : `${stats.open} connections held`,
        `${stats.unanswered} requests unanswered`
      ].join(', ')
      if (state.settled) {
        const worked = workedMs === null ? `CPU not read (${stats.unread ?? 'no /proc'})` : `${(workedMs / 1000).toFixed(1)} s of CPU ` +
          `on what the aborted uploads delivered`
        return { pass: true, figure: `idle within ${(waitedMs / 1000).toFixed(1)} s (${worked}), ${seen}`, details }
      }
      const what = state.busy ? `still working ${(waitedMs / 1000).toFixed(1)} s after the last hang-up, ` +
        `${(workedMs / 1000).toFixed(1)} s of CPU and rising` : `not settled after ${(waitedMs / 1000).toFixed(1)} s`
      return {
        pass: false,
        figure: `${what}, ${seen}`,
        reason: `though ${wait.basis}: work still going on after that does not end`,
        details
      }
    }
  }
])

/** Busy while CPU rose past IDLE_CPU_MS in the last window; settled when idle, with no connection held and nothing unanswered. */
function leftOver (stats, samples) {
  if (stats === null) return { settled: false, busy: false }
  const last = samples[samples.length - 1]
  const windowStart = samples.findLast(function beforeWindow (s) { return last.at - s.at >= IDLE_WINDOW_MS })
  const measuredCpu = last.cpu !== null
  const busy = measuredCpu && (windowStart === undefined || windowStart.cpu === null || last.cpu - windowStart.cpu > IDLE_CPU_MS)
  const idle = !busy && (!measuredCpu || windowStart !== undefined)
  return { settled: idle && (stats.open ?? 0) === 0 && stats.unanswered === 0, busy }
}

/** What the grader reads of the student's process and its own requests (ctx.lab.stats()). */
function counts ({ calls, answered, unanswered, open }) {
  return { calls, answered, unanswered, open }
}
