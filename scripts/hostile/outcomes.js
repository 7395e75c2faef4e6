/**
 * What the attacks' own requests got, told and counted one way (scripts/hostile/attacks.js and
 * window-attacks.js), and the two ways an attack paces itself: a pause its abort ends, and a
 * bounded pool of requests in flight.
 */
import { setTimeout as sleep } from 'node:timers/promises'

/** Sleep that ends early (without throwing) when the attack is aborted. */
export async function pause (ms, signal) {
  try {
    await sleep(ms, undefined, { signal })
  } catch (err) {
    if (err.name !== 'AbortError') throw err
  }
}

/** What a request got, in one word or two: `200`, `413 entity.too.large`, `timeout`, `ECONNRESET`. */
export function outcomeLabel (outcome) {
  if (outcome.status === 0) return outcome.error ?? 'no answer'
  const type = outcome.body?.error?.type
  return type ? `${outcome.status} ${type}` : String(outcome.status)
}

/** The outcomes counted by label: `{ "413 entity.too.large": 3, "abandoned": 17 }`. */
export function countLabels (outcomes) {
  const counts = {}
  for (const outcome of outcomes) {
    const label = outcomeLabel(outcome)
    counts[label] = (counts[label] ?? 0) + 1
  }
  return counts
}

export function countsText (counts) {
  return Object.entries(counts).map(function entry ([label, n]) { return `${n} x ${label}` }).join(', ')
}

export function brief (outcome) {
  return {
    label: outcomeLabel(outcome),
    status: outcome.status,
    ms: Math.round(outcome.ms),
    sentBytes: outcome.sentBytes,
    receivedBytes: outcome.receivedBytes ?? 0
  }
}

/** Run `task(k)` for k < count with at most `concurrency` at once; stops starting new ones on abort. */
export async function boundedPool (count, concurrency, signal, task) {
  const results = []
  let next = 0
  async function lane () {
    while (next < count && !signal.aborted) {
      const k = next++
      results[k] = await task(k)
    }
  }
  const lanes = []
  for (let k = 0; k < Math.min(count, concurrency); k++) lanes.push(lane())
  await Promise.all(lanes)
  return results.filter(Boolean)
}
