/**
 * Fresh processes for memory figures: each measurement gets a process that
 * has served nothing but its warm-up, as the benches measure
 * (lib/measure/fresh-server.js). The next one starts while the current one
 * is measured, so a fresh process per point costs no wait. The grading's
 * own pair stays up beside them.
 */

/**
 * @typedef {{ start: () => Promise<void>, stop: () => Promise<void> }} Process
 *   a student's process or a reference lab, not started yet
 */

export class FreshLabs {
  #makers
  /** kind ('student' or 'reference') -> a process starting or started, not taken yet */
  #spares = new Map()
  #started = []

  /**
   * @param {{ student?: () => Process, reference: () => Process, sampled?: () => Process }} makers a new process of each kind:
   *   `student` serves /student, `reference` the lab's routes, `sampled` serves /student with the lab's
   *   allocation sampler in it
   */
  constructor (makers) {
    this.#makers = makers
  }

  /**
   * A process that has served nothing yet, for `route`.
   * @param {boolean|string} [next] start the next one now, for the next measurement: true for
   *   another of the same kind, a route's name for one that serves it, false for none
   * @param {string} [route] the route to be measured: 'student' (the default) or a reference route
   * @returns {Promise<Process>}
   */
  async take (next = true, route = 'student') {
    const kind = kindOf(route)
    const taken = this.#spares.get(kind) ?? this.#start(kind)
    this.#spares.delete(kind)
    const nextKind = next === true ? kind : next === false ? null : kindOf(next)
    if (nextKind !== null && !this.#spares.has(nextKind)) this.#spares.set(nextKind, this.#start(nextKind))
    return taken
  }

  /**
   * A process that serves /student with the lab's allocation sampler in it, started now (never a
   * spare: it is wanted once, for the allocation sites), or null where there is none.
   * @returns {Promise<Process>|null}
   */
  takeSampled () {
    return this.#makers.sampled === undefined ? null : this.#start('sampled')
  }

  /** Stop the processes taken so far; spares wait for the next take(). */
  async releaseTaken () {
    const spares = new Set(this.#spares.values())
    const taken = this.#started.filter(function notSpare (starting) { return !spares.has(starting) })
    this.#started = [...spares]
    await stopAll(taken)
  }

  /** Stop every process taken or started, spares nobody took included. */
  async close () {
    const all = this.#started
    this.#started = []
    this.#spares.clear()
    await stopAll(all)
  }

  #start (kind) {
    const fresh = this.#makers[kind]()
    const starting = fresh.start().then(function started () { return fresh })
    // a spare that failed to start is reported by take(), not as an unhandled rejection
    starting.catch(function reportedByTake () {})
    this.#started.push(starting)
    return starting
  }
}

function kindOf (route) {
  return route === 'student' ? 'student' : 'reference'
}

function stopAll (starting) {
  return Promise.all(starting.map(async function stopWhenStarted (one) {
    const started = await one.catch(function failedToStart () { return null })
    await started?.stop()
  }))
}
