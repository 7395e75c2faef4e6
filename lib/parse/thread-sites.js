/**
 * The parse threads' allocation sampling, as the metrics drive it (lib/metrics/alloc-sites.js):
 * the main thread's half of the protocol parse-thread.js answers, spoken through the pool's
 * setting and questions. Sampling is a setting (`{ sites: 'start', intervalBytes }` or
 * `{ sites: 'stop' }`), so a thread started later samples as its peers do; a window is a
 * question (`{ sites: 'window', epoch }`). Off, no message is sent.
 */

/** `pool`: lib/parse/pool.js, whose `configure` and `askEach` carry the protocol. */
export function createThreadSites (pool) {
  if (typeof pool?.configure !== 'function' || typeof pool?.askEach !== 'function') {
    throw new TypeError('option pool must be a parse pool (lib/parse/pool.js)')
  }
  /** Mean bytes between samples while the threads sample, else null. */
  let sampling = null
  return Object.freeze({
    /** @param {number} intervalBytes mean bytes between samples (lib/allocation/sampler.js) */
    start: function startThreadSites (intervalBytes) {
      if (sampling === intervalBytes) return
      sampling = intervalBytes
      pool.configure({ sites: 'start', intervalBytes })
    },
    stop: function stopThreadSites () {
      if (sampling === null) return
      sampling = null
      pool.configure({ sites: 'stop' })
    },
    /**
     * Each sampling thread's window since its last, once it is between jobs (one not sampling, or that
     * dies first, is left out). `epoch`: a new route's start (sampler.js window).
     */
    windows: async function threadWindows ({ epoch = false } = {}) {
      if (sampling === null) return []
      const answers = await pool.askEach({ sites: 'window', epoch })
      return answers.filter(function sampled (a) { return a !== null && a.answer !== null && typeof a.answer === 'object' })
        .map(function named (a) { return { thread: `parse thread ${a.number}`, window: a.answer } })
    }
  })
}
