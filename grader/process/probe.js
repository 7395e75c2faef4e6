/** Whether a server answers HTTP, asked from outside: any status to a path no route serves means it serves. */
import http from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'

/** How long a probe waits for an answer unless told otherwise. */
export const PROBE_TIMEOUT_MS = 2000
/** A path no route answers: any HTTP answer to it (a 404 is usual) means the server serves. */
const PROBE_PATH = '/.grader/alive'

/** Whether anything answers over HTTP at `url` (an origin) within `timeoutMs`. */
export function probe (url, timeoutMs) {
  return new Promise(function ask (resolve) {
    const req = http.get(`${url}${PROBE_PATH}`, { agent: false, timeout: Math.max(1, timeoutMs) }, function answered (res) {
      res.resume()
      resolve(true)
      req.destroy()
    })
    req.on('timeout', function noAnswer () {
      req.destroy()
      resolve(false)
    })
    req.on('error', function failed () { resolve(false) })
  })
}

/** After a check: 'alive', 'dead' (its exit counted by the time this resolves) or 'blocked'. */
export async function settle (target, url, timeoutMs = PROBE_TIMEOUT_MS) {
  if (!target.alive) return 'dead'
  if (await probe(url, timeoutMs)) return 'alive'
  if (!target.alive) return 'dead'
  // no answer and no exit yet: an exit may be on its way, or the event loop is stuck
  await sleep(200)
  return target.alive ? 'blocked' : 'dead'
}
