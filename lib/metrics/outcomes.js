/**
 * What a page that opens late must still learn: the last crash this worker was told of (the supervisor's record of the worker it
 * replaced) and each experiment's latest result. A live stream only brings what happens after it opens, and a restart empties the
 * experiment engine, so these are kept apart from both. More: README.md, "outcomes.js".
 */

/** Experiments whose latest result is kept: more than the registry holds, so none is pushed out in practice. */
const RESULTS_KEPT = 16

/**
 * Each experiment's latest finished result: `{ id, name, params, time, result }`, one per name. Fed `experiment` events as the
 * engine emits them (or as the worker reports them over IPC, the same members): a `start` says the run's params, its `result` the
 * result; an `error` or a `cancelled` run leaves the result before it in place.
 */
export class LatestResults {
  /** name -> entry, the latest kept last */
  #byName = new Map()
  /** The latest run to start, `{ id, params }`: a result event does not repeat its run's params. */
  #started = null

  note (event) {
    if (event === null || typeof event !== 'object' || typeof event.id !== 'string' || typeof event.name !== 'string') return
    if (event.phase === 'start') {
      this.#started = { id: event.id, params: event.params ?? null }
      return
    }
    if (event.phase !== 'result' || event.result === null || typeof event.result !== 'object') return
    const params = this.#started?.id === event.id ? this.#started.params : null
    const time = Number.isFinite(event.time) ? event.time : Date.now()
    this.#keep({ id: event.id, name: event.name, params, time, result: event.result })
  }

  /**
   * Take entries kept elsewhere (the supervisor's, from the workers before this one); an experiment with a newer result here
   * keeps it, and anything not shaped like an entry (as `list()` gives them) is left out.
   */
  restore (entries) {
    if (!Array.isArray(entries)) return
    const valid = entries.filter(isEntry).sort(function oldestFirst (a, b) { return a.time - b.time })
    for (const entry of valid) {
      const known = this.#byName.get(entry.name)
      if (known === undefined || known.time < entry.time) {
        this.#keep({ id: entry.id, name: entry.name, params: entry.params ?? null, time: entry.time, result: entry.result })
      }
    }
  }

  /** The entries, newest first. */
  list () {
    return [...this.#byName.values()].sort(function newestFirst (a, b) { return b.time - a.time })
  }

  #keep (entry) {
    // deleted first, so that the Map's order is the order kept, and the oldest is the one to go
    this.#byName.delete(entry.name)
    this.#byName.set(entry.name, entry)
    if (this.#byName.size > RESULTS_KEPT) this.#byName.delete(this.#byName.keys().next().value)
  }
}

function isEntry (entry) {
  return entry !== null && typeof entry === 'object' && typeof entry.id === 'string' && typeof entry.name === 'string' &&
    Number.isFinite(entry.time) && entry.result !== null && typeof entry.result === 'object'
}

/** Start keeping the outcomes the lab's bus announces; `close()` leaves the bus. */
export function createOutcomes (events) {
  if (events === null || typeof events?.on !== 'function') throw new TypeError('events must be an EventEmitter')
  return new Outcomes(events)
}

class Outcomes {
  #events
  #listeners = []
  #crash = null
  #results = new LatestResults()

  constructor (events) {
    this.#events = events
    const outcomes = this
    this.#listen('crash', function keepCrash (crash) {
      if (crash !== null && typeof crash === 'object') outcomes.#crash = crash
    })
    this.#listen('experiment', function keepResult (event) { outcomes.#results.note(event) })
    this.#listen('restore', function restoreResults (kept) { outcomes.#results.restore(kept?.results) })
  }

  /** The supervisor's record of the worker this one replaced, or null (the first worker, or a lab run without a supervisor). */
  get crash () {
    return this.#crash
  }

  /** Each experiment's latest result, newest first (see `LatestResults`). */
  get results () {
    return this.#results.list()
  }

  close () {
    for (const [type, listener] of this.#listeners) this.#events.removeListener(type, listener)
    this.#listeners = []
  }

  #listen (type, listener) {
    this.#events.on(type, listener)
    this.#listeners.push([type, listener])
  }
}
