/** What a check works with (`ctx`): routes, posting, fresh processes, settings, seed, contract, notes and 5xx reasons. */
import { setTimeout as sleep } from 'node:timers/promises'
import { send } from '../checks/client.js'
import { HANDLER_CONTRACT } from '../checks/contract.js'
import { crashLine } from '../process/output.js'

/** Notes reach the dashboard at most this often. */
const NOTE_INTERVAL_MS = 200

/** The context a run's checks share; `lab` is the graded target beside the reference lab (GradeLab, ServiceLab). */
export function runContext (lab, fresh, settings, inputDir, seed, headers) {
  /** The graded endpoint gets the run's headers beside the body's own; the lab's routes get the lab's. */
  function withHeaders (route, body) {
    return route === 'student' ? { ...headers, ...body.headers } : body.headers
  }
  return {
    lab,
    fresh,
    settings,
    inputDir,
    seed,
    /** Sent with every body beside the body's own (a service's token or content type: --header). */
    headers,
    /** How answers are judged (grader/checks/contract.js): set once the lab has started. */
    contract: HANDLER_CONTRACT,
    /** The media type the encodings are probed and bombed in, when asked for (--content-type); else null. */
    contentType: null,
    /** What the target takes (grader/checks/encodings.js): set before the first safety check. */
    encodings: null,
    /** Where a route is served now: /student by the graded target, the others by the reference lab. */
    url: function routeUrl (route) { return lab.urlOf(route) },
    /** POST a body to a route as it is served now (a restart may have moved it). */
    post: function post (route, body) {
      return send(lab.urlOf(route), { timeoutMs: settings.requestMs, ...body, headers: withHeaders(route, body) })
    },
    /** POST a body to a route of another process (a fresh one). */
    postTo: function postTo (other, route, body) {
      return send(other.urlOf(route), { timeoutMs: settings.requestMs, ...body, headers: withHeaders(route, body) })
    },
    /** A process that served nothing yet, stopped when the check ends; `another`, `route`: as FreshLabs take(). */
    freshLab: function freshLab (another = true, route = 'student') {
      return fresh.take(another, route)
    },
    /** A process of the target with the lab's allocation sampler, stopped when the check ends; null for a service not started here. */
    sampledLab: function sampledLab () {
      return fresh.takeSampled()
    },
    /** The memory area's allocation sites, once taken (grader/checks/memory-sites.js): one sampled run a grading. */
    memorySites: { taken: null }
  }
}

/** The run's context plus `note(text)` (progress to the dashboard and `onProgress`) and `explain(res, where)`. */
export function checkContext (ctx, check, { runId, progress, onProgress }) {
  const lab = ctx.lab
  // where the target's output stood when the check began: a 5xx's reason is logged after it
  const mark = lab.output().length
  let lastNote = 0
  return Object.create(ctx, {
    note: {
      value: function note (text) {
        const now = Date.now()
        if (now - lastNote < NOTE_INTERVAL_MS) return
        lastNote = now
        lab.runStep({ phase: 'progress', id: runId, progress: { ...progress, cell: `${check.name} · ${text}` } })
        onProgress({ type: 'note', area: check.area, check: check.name, note: text })
      }
    },
    explain: {
      /** For a 5xx, the error the target logged (the handler's throw, file and line); `where`: the process that answered. */
      value: async function explain (res, where = lab) {
        if (res.status < 500) return null
        if (where.owned === false) return null // its output is its own: the grader never saw it
        const from = where === lab ? mark : 0
        // the log and the answer travel apart: give the log a moment to arrive
        for (let wait = 0; wait < 5 && !/Error|Exception/.test(where.output().slice(from)); wait++) {
          await sleep(20)
        }
        return `${where.label ?? 'the student\'s process'} logged: ${crashLine(where.output().slice(from))}`
      }
    }
  })
}
