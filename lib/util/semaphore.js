/** A counting semaphore whose waiters can give up (an aborted request must not keep its place in the queue). */
export class Semaphore {
  constructor (limit) {
    this.limit = limit
    this.held = 0
    this.waiting = []
    /** When a place was last given back (Date.now()), 0 before: how a queue tells moving from stuck. */
    this.releasedAt = 0
  }

  /** Wait for a place (until `signal` aborts: rejects with its reason); resolves to the function that gives it back. */
  acquire (signal) {
    const semaphore = this
    if (signal?.aborted) return Promise.reject(signal.reason)
    if (this.held < this.limit) {
      this.held++
      return Promise.resolve(this.releaser())
    }
    return new Promise(function waitForPlace (resolve, reject) {
      waitInQueue(semaphore.waiting, { resolve }, signal, reject)
    })
  }

  releaser () {
    const semaphore = this
    let released = false
    return function release () {
      if (released) return
      released = true
      semaphore.releasedAt = Date.now()
      semaphore.held--
      semaphore.next()
    }
  }

  next () {
    while (this.held < this.limit && this.waiting.length > 0) {
      const waiter = this.waiting.shift()
      leaveQueue(waiter)
      this.held++
      waiter.resolve(this.releaser())
    }
  }
}

/**
 * Queue a waiter until it is served; if `signal` aborts first, it leaves the queue and `reject` gets the signal's reason. Whoever
 * serves it calls `leaveQueue(waiter)` to stop listening to the signal (the waiter gains `signal` and `onAbort`).
 */
export function waitInQueue (queue, waiter, signal, reject) {
  waiter.signal = signal ?? null
  waiter.onAbort = null
  if (signal) {
    waiter.onAbort = function giveUp () {
      const at = queue.indexOf(waiter)
      if (at !== -1) queue.splice(at, 1)
      reject(signal.reason)
    }
    signal.addEventListener('abort', waiter.onAbort, { once: true })
  }
  queue.push(waiter)
}

/** A waiter is served: it no longer listens to its signal. */
export function leaveQueue (waiter) {
  if (waiter.onAbort) waiter.signal.removeEventListener('abort', waiter.onAbort)
  waiter.onAbort = null
}
