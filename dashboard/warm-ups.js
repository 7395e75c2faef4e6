/**
 * An experiment's warm-up uploads (`warmUp: true` on their request events, lib/util/lab-events.js)
 * are drawn nowhere and counted nowhere on the page: a run of one upload per route shows one
 * bar per route, as its form says. The run's progress names the warm-up step instead (run-steps.js).
 */

/** Warm-up ids remembered: a few per run; the oldest go first. */
const MAX_IDS = 32

export class WarmUps {
  #ids = new Set()

  /**
   * Whether a `request` event is a warm-up's (its id is remembered, to leave it out of samples).
   * @param {unknown} event
   */
  skip (event) {
    if (event === null || typeof event !== 'object' || event.warmUp !== true) return false
    this.#ids.add(event.id)
    if (this.#ids.size > MAX_IDS) this.#ids.delete(this.#ids.values().next().value)
    return true
  }

  /** A sample's requests in flight without the warm-ups. */
  without (requests) {
    if (!Array.isArray(requests) || this.#ids.size === 0) return requests
    const ids = this.#ids
    return requests.filter(function notWarmUp (entry) { return !ids.has(entry?.id) })
  }

  /** The server restarted: its ids start again. */
  clear () {
    this.#ids.clear()
  }
}
