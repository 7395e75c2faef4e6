/** A worker's crash and the latest result, which the live stream never repeats; the Reset peak tool. */
import { formatClock, formatMiB, formatMs } from './format.js'

/** A crash this long past when the page learns of it is history, not news: its chart mark is kept, but no banner. */
const RECENT_CRASH_MS = 10 * 60_000
/** Crash records told apart by worker pid and time: the snapshot, a fresh stream and a replay may each bring the same one. */
const CRASHES_REMEMBERED = 64

export function createOutcomes (el) {
  let clockOffset = 0 // the server's clock minus this browser's, from its latest sample: how old a crash is, by the server's time
  const crashesSeen = new Set()
  let outcomes = 'loading' // the /metrics snapshot read at load: 'loading', then 'loaded' or 'unavailable'

  /** A crash record: marked on the chart once, and shown in the banner while it is recent. */
  function showCrash (data) {
    if (Number.isFinite(data?.time)) {
      const key = `${data.pid}:${data.time}`
      if (crashesSeen.has(key)) return
      crashesSeen.add(key)
      if (crashesSeen.size > CRASHES_REMEMBERED) crashesSeen.delete(crashesSeen.values().next().value)
    }
    el.marks.onCrash(data)
    if (Number.isFinite(data?.time) && Date.now() + clockOffset - data.time > RECENT_CRASH_MS) return
    const route = data?.route ? ` during POST /${data.route}` : ''
    const budget = Number.isFinite(data?.budget) ? ` over its budget of ${formatMiB(data.budget)}` : ''
    const rss = Number.isFinite(data?.rss) ? ` at ${formatMiB(data.rss)} RSS` : ''
    const when = Number.isFinite(data?.time) ? ` (${formatClock(data.time)})` : ''
    el.text.textContent = `The server crashed${route}${rss}${budget}${when}: ${data?.reason ?? 'no reason given'}.${restartNote(data)}`
    el.banner.hidden = false
  }

  /** The /metrics JSON snapshot: the last crash (the worker this one replaced) and the latest result. */
  async function load () {
    let snapshot
    try {
      const res = await fetch('/metrics', { headers: { accept: 'application/json' } })
      if (!res.ok) throw new Error(`${res.status}`)
      snapshot = await res.json()
    } catch {
      // the stream's first event still tells of a crash; the results wait for the next run
      outcomes = 'unavailable'
      return
    }
    if (Number.isFinite(snapshot?.sample?.time)) clockOffset = snapshot.sample.time - Date.now()
    if (snapshot?.lastCrash) showCrash(snapshot.lastCrash)
    if (Array.isArray(snapshot?.lastResults)) el.panel.showEarlier(snapshot.lastResults[0])
    outcomes = 'loaded'
  }

  el.dismiss.addEventListener('click', function dismissCrash () {
    el.banner.hidden = true
  })

  return {
    showCrash,
    load,
    serverTime: function serverTime (time) {
      clockOffset = time - Date.now()
    },
    get outcomes () { return outcomes }
  }
}

/** How the supervisor brought the lab back, from the crash record's `restarts`, `backoffMs`, `requestCaused`, `restartMs`; or ''. */
function restartNote (data) {
  if (!Number.isFinite(data?.restarts)) return ''
  const how = data.backoffMs > 0
    ? `after a ${formatMs(data.backoffMs)} backoff (it had crashed with no request in flight)`
    : `at once${data.requestCaused ? ' (a request caused the crash: no backoff)' : ''}`
  const back = Number.isFinite(data.restartMs) ? `, back in ${formatMs(data.restartMs)}` : ''
  return ` The lab restarted ${how}${back}; restart ${data.restarts} since it started.`
}

/** The Tools box's Reset peak: POST /metrics/peak/reset, and what it did in `message`. */
export function resetPeakButton (button, message) {
  button.addEventListener('click', async function resetPeak () {
    try {
      const res = await fetch('/metrics/peak/reset', { method: 'POST', headers: { accept: 'application/json' } })
      const body = await res.json()
      if (!res.ok) throw new Error(body?.error ? `${res.status} ${body.error.type}: ${body.error.message}` : `${res.status}`)
      message.dataset.kind = 'info'
      const which = body.source === 'VmHWM' ? 'Kernel peak' : 'Sampled peak'
      message.textContent = body.reset
        ? `${which} reset to ${formatMiB(body.peakRss)} at ${formatClock(Date.now())}.`
        : `${which} could not be reset.`
    } catch (err) {
      message.dataset.kind = 'error'
      message.textContent = `Could not reset the peak: ${err.message}`
    }
  })
}
