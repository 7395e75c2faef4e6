/**
 * A counting semaphore whose waiters can give up (an aborted request must
 * not keep its place in the queue).
 */
export class Semaphore {
  /** @param {number} limit how many may hold it at once */
  constructor (limit) {
    this.limit = limit
    this.held = 0
    this.waiting = []
  }

  /**
   * Wait for a place.
   * @param {AbortSignal} [signal] gives up the wait (rejects with its reason)
   * @returns {Promise<() => void>} the function that gives the place back
   */
  acquire (signal) {
    const semaphore = this
    if (signal?.aborted) return Promise.reject(signal.reason)
    if (this.held < this.limit) {
      this.held++
      return Promise.resolve(this.releaser())
    }
    return new Promise(function waitForPlace (resolve, reject) {
      const waiter = { resolve, reject, signal, onAbort: null }
      if (signal) {
        waiter.onAbort = function giveUp () {
          const at = semaphore.waiting.indexOf(waiter)
          if (at !== -1) semaphore.waiting.splice(at, 1)
          reject(signal.reason)
        }
        signal.addEventListener('abort', waiter.onAbort, { once: true })
      }
      semaphore.waiting.push(waiter)
    })
  }

  releaser () {
    const semaphore = this
    let released = false
    return function release () {
      if (released) return
      released = true
      semaphore.held--
      semaphore.next()
    }
  }

  next () {
    while (this.held < this.limit && this.waiting.length > 0) {
      const waiter = this.waiting.shift()
      if (waiter.signal) waiter.signal.removeEventListener('abort', waiter.onAbort)
      this.held++
      waiter.resolve(this.releaser())
    }
  }
}
