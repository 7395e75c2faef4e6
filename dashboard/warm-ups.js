/** An experiment's warm-up uploads are drawn and counted nowhere on the page (README.md). */

const MAX_IDS = 32 // warm-up ids remembered: a few per run; the oldest go first

export class WarmUps {
  #ids = new Set()

  /** Whether a `request` event is a warm-up's (its id is remembered, to leave it out of samples). */
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
