/** Fresh processes for memory figures (lib/measure/fresh-server.js): the next starts while this one is measured. */

/** @typedef {{ start: () => Promise<void>, stop: () => Promise<void> }} Process a student's process or a reference lab */

export class FreshLabs {
  #makers
  /** kind ('student' or 'reference') -> a process starting or started, not taken yet */
  #spares = new Map()
  #started = []

  /** `makers` make a new process of each kind: `student` and `sampled` (with the lab's sampler) serve /student. */
  constructor (makers) {
    this.#makers = makers
  }

  /** A process that served nothing yet, for `route`; `next` starts the next one now (true: same kind, a route's name, false). */
  async take (next = true, route = 'student') {
    const kind = kindOf(route)
    const taken = this.#spares.get(kind) ?? this.#start(kind)
    this.#spares.delete(kind)
    const nextKind = next === true ? kind : next === false ? null : kindOf(next)
    if (nextKind !== null && !this.#spares.has(nextKind)) this.#spares.set(nextKind, this.#start(nextKind))
    return taken
  }

  /** A process serving /student with the lab's allocation sampler, started now (never a spare), or null where there is none. */
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
