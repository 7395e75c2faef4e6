/**
 * Resilience: clients that hang up mid-upload (after the headers, a few
 * bytes in, halfway) leave the handler nothing stuck: a normal request after
 * them is answered, and every handler call they started ends.
 *
 * A call may rightly go on after its client hung up: a handler that reads
 * in turn what it was sent parses the bytes already received before it
 * meets the hang-up. How long that takes follows from the handler's own
 * speed, measured first (one whole upload of the same document), and from
 * the bytes the aborted uploads delivered: "nothing left pending" waits that
 * long, with a margin and a floor, and fails only for calls still running
 * after it, which are waiting for something that will not come.
 */
import { generatedBuffer, generatedDocument } from '../bodies.js'
import { abortUpload } from '../client.js'
import { judgeAnswer } from '../reference.js'
import { timeoutFor } from '../settings.js'

const AREA = 'resilience'
/** Uploads cut off at once, so the handler meets several vanishing clients together. */
const BATCH = 5
const MB = 1e6
/**
 * The wait for calls still working on received bytes: MARGIN times what the
 * handler's measured speed needs for them (the aborted uploads run BATCH at
 * a time and share the machine with the lab's own work), never less than
 * FLOOR_MS, never more than CEILING_MS, so that a run ends.
 */
export const PENDING_WAIT = Object.freeze({ MARGIN: 3, FLOOR_MS: 5000, CEILING_MS: 120_000 })
const POLL_MS = 100

/** What the first check measured, for the second: per lab, so two runs in one process keep their own. */
const measured = new WeakMap()

export const checks = Object.freeze([
  {
    area: AREA,
    name: 'answers after aborted uploads',
    meaning: 'uploads cut off mid-body (from right after the headers to 90 % in), then a normal request: it must be answered, and right',
    limit: 'the normal request answered, and right',
    hint: 'A client that hangs up makes the request stream fail (ECONNRESET / aborted): with pipeline() that is a rejection you can ignore, with bare .pipe() and listeners it can leave streams, timers or a shared lock held, so that the next request waits.',
    trips: true,
    run: async function answersAfterAborts (ctx) {
      const upload = await generatedBuffer({ bytes: ctx.settings.concurrencyBytes, seed: ctx.seed, dir: ctx.inputDir })
      const normal = await generatedDocument({ size: 1000, seed: ctx.seed, dir: ctx.inputDir })
      ctx.note('one whole upload first: the handler\'s speed')
      const whole = await ctx.post('student', { buffer: upload.gzip, timeoutMs: timeoutFor(ctx.settings, upload.inflatedBytes) })
      const MBps = whole.status === 200 ? upload.inflatedBytes / MB / (whole.ms / 1000) : null
      const cuts = []
      for (let k = 0; k < ctx.settings.aborts; k++) cuts.push(Math.floor(upload.gzip.length * ((k * 37) % 91) / 100))
      // what the handler may still have to read: the inflated bytes behind the compressed bytes each upload delivered
      const receivedBytes = Math.round(cuts.reduce(function sum (total, cut) { return total + cut }, 0) / upload.gzip.length * upload.inflatedBytes)
      measured.set(ctx.lab, { MBps, receivedBytes })
      for (let k = 0; k < cuts.length; k += BATCH) {
        ctx.note(`aborted uploads ${k + 1} to ${Math.min(cuts.length, k + BATCH)} of ${cuts.length}`)
        await Promise.all(cuts.slice(k, k + BATCH).map(function cutOff (bytes) { return abortUpload(ctx.url('student'), upload.gzip, bytes) }))
      }
      const res = await ctx.post('student', { file: normal.file })
      const details = { aborted: cuts.length, cutAt: cuts, receivedBytes, MBps: MBps === null ? null : round(MBps) }
      if (res.error === 'timeout') return { pass: false, hung: true, figure: `no answer within ${Math.round(res.ms / 1000)} s after ${cuts.length} aborted uploads`, details }
      const verdict = judgeAnswer(res, normal.reference)
      return {
        pass: verdict.ok,
        figure: verdict.ok ? `answered after ${cuts.length} aborted uploads (${verdict.why})` : `after ${cuts.length} aborted uploads: ${verdict.why}`,
        reason: verdict.ok ? null : await ctx.explain(res),
        details
      }
    }
  },
  {
    area: AREA,
    name: 'nothing left pending',
    meaning: 'after the aborted uploads: handler calls still running (an async handler\'s promise unsettled) and requests to /student still open, once the handler has had the time its own speed needs for the bytes it received',
    limit: `none, after ${PENDING_WAIT.MARGIN}× the time the handler's measured speed needs for the bytes it received (at least ${PENDING_WAIT.FLOOR_MS / 1000} s, at most ${PENDING_WAIT.CEILING_MS / 1000} s)`,
    hint: 'These calls never end: each waits for something a client that hung up will never send. An async handler that awaits the body\'s "end" (or a promise only "end" settles) waits forever: await pipeline(req, …) instead, which rejects when the client goes, or listen for "error" and "close" as well as "end".',
    trips: true,
    run: async function nothingPending (ctx) {
      const wait = pendingWait(measured.get(ctx.lab))
      ctx.note(`waiting up to ${(wait.ms / 1000).toFixed(1)} s for calls still reading`)
      const started = Date.now()
      let stats = await ctx.lab.stats()
      const atStart = stats
      while (stats !== null && (stats.pending > 0 || stats.open > 0) && Date.now() - started < wait.ms) {
        await new Promise(function pause (resolve) { setTimeout(resolve, POLL_MS) })
        stats = await ctx.lab.stats()
      }
      const waitedMs = Date.now() - started
      if (stats === null) return { pass: false, hung: true, figure: 'the lab did not answer (its event loop is blocked)' }
      const router = ctx.lab.kind === 'router'
      const pass = stats.open === 0 && (router || stats.pending === 0)
      const calls = router ? 'calls not tracked (a Router)' : `${stats.pending} of ${stats.calls} handler calls pending`
      const details = { ...counts(stats), atStart: atStart === null ? null : counts(atStart), waitedMs, waitMs: wait.ms, basis: wait.basis }
      if (pass) {
        const settled = atStart !== null && (atStart.pending > 0 || atStart.open > 0)
          ? ` (${atStart.pending} still reading at first, all ended within ${(waitedMs / 1000).toFixed(1)} s)`
          : ''
        return { pass, figure: `${calls}, ${stats.open} requests still open${settled}`, details }
      }
      return {
        pass,
        figure: `${calls}, ${stats.open} requests still open after ${(waitedMs / 1000).toFixed(1)} s`,
        reason: `still running ${(waitedMs / 1000).toFixed(1)} s after the last client hung up, though ${wait.basis}: calls still running after that wait for something that will not come`,
        details
      }
    }
  }
])

/**
 * How long "nothing left pending" waits, and why: from what the first check
 * measured (the handler's MB/s, the inflated bytes the aborted uploads
 * delivered); the ceiling when the speed was not measured.
 * @param {{ MBps: number|null, receivedBytes: number }|undefined} m
 * @returns {{ ms: number, basis: string }}
 */
export function pendingWait (m) {
  const { MARGIN, FLOOR_MS, CEILING_MS } = PENDING_WAIT
  if (m === undefined || m.MBps === null || !(m.MBps > 0)) {
    return { ms: CEILING_MS, basis: `the handler's speed was not measured, so the grader waits the ceiling, ${CEILING_MS / 1000} s` }
  }
  const needMs = m.receivedBytes / MB / m.MBps * 1000
  const ms = Math.round(Math.min(CEILING_MS, Math.max(FLOOR_MS, MARGIN * needMs)))
  return {
    ms,
    basis: `the aborted uploads delivered ${(m.receivedBytes / MB).toFixed(1)} MB of JSON, ${(needMs / 1000).toFixed(1)} s of work at the handler's measured ${m.MBps.toFixed(1)} MB/s, so the grader waits up to ${(ms / 1000).toFixed(1)} s (${MARGIN}× that, ${FLOOR_MS / 1000} s to ${CEILING_MS / 1000} s)`
  }
}

/** The lab's figures of the handler's calls, without the reply's envelope. */
function counts ({ calls, pending, answered, open }) {
  return { calls, pending, answered, open }
}

function round (value) {
  return Math.round(value * 10) / 10
}
