// The lab's own load, recognised by a secret it holds: each run is issued a key that everything it starts
// sends in `X-Streamlab-Run-Key`, and the guard takes a live key in place of the access token. README.md.
import { AsyncLocalStorage } from 'node:async_hooks'
import { createHash, randomBytes } from 'node:crypto'

/** The header the lab's own load carries its run's key in. */
export const RUN_KEY_HEADER = 'x-streamlab-run-key'

const KEY_BYTES = 32
/** A key is 43 base64url characters; anything much longer is not one, and is not hashed. */
const MAX_KEY_LENGTH = 128

/**
 * @typedef {Readonly<{ issue: () => string, revoke: (key: string) => void,
 *   holds: (key: unknown) => boolean, readonly live: number }>} RunKeys
 */

/** An app's keyring: the engine issues and revokes, the guard asks. */
export function createRunKeys () {
  /** SHA-256 (hex) of every live key */
  const live = new Set()
  return Object.freeze({
    /** A fresh key, live until revoked. */
    issue: function issue () {
      const key = randomBytes(KEY_BYTES).toString('base64url')
      live.add(digest(key))
      return key
    },
    /** The key stops opening the lab; a key already revoked, or never issued, changes nothing. */
    revoke: function revoke (key) {
      if (typeof key === 'string') live.delete(digest(key))
    },
    /** Whether `key` is a live key of this keyring. */
    holds: function holds (key) {
      return typeof key === 'string' && key.length <= MAX_KEY_LENGTH && live.has(digest(key))
    },
    /** How many keys are live (one per run in flight). */
    get live () {
      return live.size
    }
  })
}

function digest (key) {
  return createHash('sha256').update(key).digest('hex')
}

/** The run key of the work in progress, if any: set by the engine, and by a forked job's process. */
const runScope = new AsyncLocalStorage()

/** Run `work` with `key` (null: outside any run) as the run key of everything it starts. */
export function withRunKey (key, work) {
  return runScope.run(typeof key === 'string' ? key : null, work)
}

/** The current run's key, or null outside a run. */
export function currentRunKey () {
  return runScope.getStore() ?? null
}

/** The headers that carry the current run's key to the lab, for every request the run makes; empty outside a run. */
export function runKeyHeaders () {
  const key = currentRunKey()
  return key === null ? {} : { [RUN_KEY_HEADER]: key }
}
