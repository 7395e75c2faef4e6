/**
 * What a check gets to work with (`ctx`): where each route is served, how to
 * post a body to it, a fresh process for a memory figure, the settings, the
 * seed and the contract answers are judged by; and, per check, a progress
 * note for the dashboard and the reason a 5xx came with.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { send } from '../checks/client.js'
import { HANDLER_CONTRACT } from '../checks/contract.js'
import { crashLine } from '../process/output.js'

/** Notes reach the dashboard at most this often. */
const NOTE_INTERVAL_MS = 200

/**
 * The context every check of a run shares.
 * @param {object} lab the graded target beside the reference lab (GradeLab, ServiceLab)
 * @param {object} fresh its fresh processes (lab.freshProcesses())
 * @param {object} settings the run's (grader/checks/settings.js)
 * @param {string} inputDir where generated documents are kept
 * @param {number} seed the run's
 * @param {Record<string, string>} headers sent to the graded endpoint with every body
 */
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
    /**
     * A process that has served nothing yet, for a memory figure; stopped when the check ends.
     * @param {boolean|string} [another] start the next one now: true for another like it, a route's name for one that serves that route
     * @param {string} [route] what it must serve: 'student' (the graded target) or a reference route (a reference lab)
     */
    freshLab: function freshLab (another = true, route = 'student') {
      return fresh.take(another, route)
    },
    /**
     * A process of the graded target that has served nothing yet, with the lab's allocation
     * sampler in it (its `sites`), stopped when the check ends; null where the grader cannot
     * sample inside the target (a service it did not start).
     */
    sampledLab: function sampledLab () {
      return fresh.takeSampled()
    },
    /** The memory area's allocation sites, once taken (grader/checks/memory-sites.js): one sampled run a grading. */
    memorySites: { taken: null }
  }
}

/**
 * The run's context with what one check adds: `note(text)`, its progress on
 * the dashboard and to `onProgress`, and `explain(res, where)`, the error
 * the target logged for a 5xx.
 * @param {object} ctx from runContext
 * @param {object} check the check under way
 * @param {{ runId: string, progress: object, onProgress: (event: object) => void }} run
 */
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
      /**
       * For a 5xx, the error the target logged (the handler's throw, with its file and line), as the reason.
       * @param {object} res the answer
       * @param {object} [where] the process that answered: the main one unless a fresh one did
       */
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
