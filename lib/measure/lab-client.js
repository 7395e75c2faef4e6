// The demo's side of the lab's HTTP API (start an experiment, follow it, read the RSS), apart from
// scripts/demo.js so the walkthrough reads as a lesson.
import { setTimeout as sleep } from 'node:timers/promises'

/** How often a run's state is read: the dashboard reads it every 500 ms. */
const POLL_MS = 250
/** One request to the lab: a worker being restarted answers within a second. */
const REQUEST_TIMEOUT_MS = 5000
/** How long the lab may go without answering before a run is given up as lost. */
const LOST_AFTER_MS = 20_000

/** A refusal or a failed run, worded as the server worded it. */
export class StepError extends Error {
  constructor (message, details = {}) {
    super(message)
    this.name = 'StepError'
    Object.assign(this, details)
  }
}

/**
 * "409 experiment.busy: experiment … is still running", as the dashboard shows refusals.
 * @param {{ type?: string, message?: string }|null} error the `error` member of the lab's JSON
 */
export function describeServerError (status, error) {
  const type = error?.type ?? 'error'
  const message = error?.message ?? 'no message'
  return `${status ?? error?.status ?? '?'} ${type}: ${message}`
}

async function requestJson (url, init, signal) {
  const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS)
  const res = await fetch(url, { ...init, signal: AbortSignal.any([signal, timeout]) })
  const text = await res.text()
  let body = null
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON: the status says enough
  }
  return { status: res.status, body }
}

/** A client for one running lab; `signal` aborts every wait (Ctrl-C). */
export function createLabClient (lab, signal) {
  /**
   * POST /experiments; the run as the lab accepted it.
   * @throws {StepError} when the lab refuses (400 parameter.invalid, 409 experiment.busy ...)
   */
  async function start (name, params) {
    let answer
    try {
      answer = await requestJson(`${lab.url}/experiments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name, params })
      }, signal)
    } catch (err) {
      if (signal.aborted) throw err
      throw new StepError(`the lab did not take the ${name} experiment: ${err.cause?.code ?? err.message}`)
    }
    if (answer.status !== 202) {
      throw new StepError(`the lab refused the ${name} experiment: ${describeServerError(answer.status, answer.body?.error)}`)
    }
    return answer.body
  }

  /** The server's RSS now, from the /metrics JSON snapshot; null when it does not answer. */
  async function rss () {
    try {
      const answer = await requestJson(`${lab.url}/metrics?format=json`, { headers: { accept: 'application/json' } }, signal)
      return answer.body?.sample?.rss ?? null
    } catch {
      return null
    }
  }

  /**
   * Poll GET /experiments/:id until the run ended, `onProgress(state, rss)` on every reading. A worker killed
   * mid-run resets its connections, so failed readings are retried until the lab answers or has gone (StepError).
   */
  async function follow (run, onProgress) {
    let silentSince = null
    for (;;) {
      await sleep(POLL_MS, undefined, { signal })
      let answer
      try {
        const [state, now] = await Promise.all([
          requestJson(`${lab.url}/experiments/${run.id}`, {}, signal),
          rss()
        ])
        answer = state
        silentSince = null
        if (answer.status !== 200) {
          throw new StepError(`the lab lost track of run ${run.id}: ${describeServerError(answer.status, answer.body?.error)}`)
        }
        if (answer.body.status !== 'running') return answer.body
        onProgress(answer.body, now)
      } catch (err) {
        if (signal.aborted || err instanceof StepError) throw err
        if (lab.hasExited()) throw new StepError(`the lab's process has exited during the ${run.name} run`, { labGone: true })
        silentSince ??= Date.now()
        if (Date.now() - silentSince > LOST_AFTER_MS) {
          throw new StepError(`the lab has not answered for ${LOST_AFTER_MS / 1000} s (${err.cause?.code ?? err.message})`)
        }
      }
    }
  }

  /**
   * Start an experiment and follow it to its end.
   * @returns {Promise<object>} the final state (GET /experiments/:id)
   */
  async function run (name, params, onProgress) {
    const started = await start(name, params)
    return follow(started, onProgress)
  }

  return Object.freeze({ start, follow, run, rss })
}
