/** The parts of a /metrics sample the page cannot know in advance, read defensively and bounded (README.md). */
import { MiB } from '../lib/util/units.js'

const MAX_SPACES = 24 // heap spaces read per sample: more than any Node has
const MAX_REQUESTS = 64 // requests kept per sample in the exports' note (the server sends fewer: it sums the rest in `requestsOmitted`)
const NAME = /^[a-z][a-z0-9_]{0,63}$/

/** A sample's heap spaces as [name, bytes used] pairs, in the order the server sent them. `heapSpaces`: the sample's `heapSpaces`. */
export function readHeapSpaces (heapSpaces) {
  if (heapSpaces === null || typeof heapSpaces !== 'object' || Array.isArray(heapSpaces)) return []
  const out = []
  for (const [name, bytes] of Object.entries(heapSpaces)) {
    if (out.length >= MAX_SPACES) break
    if (NAME.test(name) && Number.isFinite(bytes)) out.push([name, bytes])
  }
  return out
}

/** What the exports keep of a sample's requests: id, route and held bytes by stage; null when none. `requests`: the sample's `requests`. */
export function requestsNote (requests) {
  if (!Array.isArray(requests) || requests.length === 0) return null
  const out = []
  for (const r of requests.slice(0, MAX_REQUESTS)) {
    if (r === null || typeof r !== 'object' || typeof r.route !== 'string') continue
    const held = {}
    if (r.held !== null && typeof r.held === 'object') {
      for (const [stage, bytes] of Object.entries(r.held)) if (NAME.test(stage) && Number.isFinite(bytes)) held[stage] = bytes
    }
    out.push({ id: r.id, route: r.route.slice(0, 40), held })
  }
  return out.length === 0 ? null : out
}

/** The store's key for a heap space's series (also its CSV column). */
export function heapKey (space) { return `heap_${space}` }

/**
 * A sample into a store as the charts draw it (MiB, ms, a series per heap space as `spaces` names them, requests as
 * the note), its collections into `marks` if given; false when the store refused it. Live and recorded alike.
 */
export function storeSample (store, spaces, sample, marks = null) {
  marks?.gc.add(sample.gcEvents, sample.gcEventsOmitted)
  const values = {
    rss: sample.rss / MiB,
    heapTotal: sample.heapTotal / MiB,
    heapUsed: sample.heapUsed / MiB,
    external: sample.external / MiB,
    arrayBuffers: sample.arrayBuffers / MiB,
    otherExternal: (sample.external - sample.arrayBuffers) / MiB,
    peakRss: sample.peakRss / MiB,
    loopP99: sample.eventLoop?.p99,
    loopMax: sample.eventLoop?.max
  }
  for (const [space, bytes] of readHeapSpaces(sample.heapSpaces)) {
    const key = heapKey(space)
    if (!store.has(key) && store.addKey(key)) spaces.push(space)
    values[key] = bytes / MiB
  }
  return store.push(sample.time, values, requestsNote(sample.requests))
}
