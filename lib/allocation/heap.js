/**
 * V8 heap bytes by site, from V8's sampling heap profiler, through an inspector session connected to the thread that runs this (a
 * worker thread gets its own). The profiler keeps a sample while its object lives (README.md, "heap.js", says what a window reads).
 */
import { Session } from 'node:inspector'
import { frameKind, inFolders, siteFile } from './frames.js'
import { siteKey } from './site.js'

/**
 * The recorder that has this thread's sampling heap profiler: V8 has one per thread, and a second session's start would share it
 * unknowingly (and its stop end the first one's).
 */
let owner = null

/** A session on this thread's sampling heap profiler; `error` says why it could not start. */
export class HeapRecorder {
  #interval
  #session = null
  /** The newest sample's ordinal at the last window: newer ones were allocated since. */
  #lastOrdinal = -1
  /** Since the last window: the most the samples held at a `notePeak`, by site, and the new samples seen there. */
  #peak = emptyPeak()
  /** Samples up to this ordinal are no longer held by anyone's count (`newEpoch`). */
  #epochOrdinal = -1
  error = null

  #collected
  #prefer

  /** @param {string[]|null} [prefer] folders whose frames make the site (frames.js preferredFolders) */
  constructor (intervalBytes, collected, prefer = null) {
    this.#interval = intervalBytes
    this.#collected = collected
    this.#prefer = prefer
  }

  #startSampling (session) {
    post(session, 'HeapProfiler.startSampling', {
      samplingInterval: this.#interval,
      includeObjectsCollectedByMajorGC: this.#collected,
      includeObjectsCollectedByMinorGC: this.#collected
    })
  }

  start () {
    if (this.#session !== null) return
    this.error = null
    this.#lastOrdinal = -1
    this.#epochOrdinal = -1
    this.#peak = emptyPeak()
    if (owner !== null) {
      this.error = 'V8\'s sampling heap profiler of this thread is taken by another allocation sampler'
      return
    }
    const session = new Session()
    try {
      session.connect()
      this.#startSampling(session)
      this.#session = session
      owner = this
    } catch (err) {
      // another profiler of this thread's heap (DevTools, a second sampler) has it
      this.error = `V8's sampling heap profiler: ${err.message}`
      session.disconnect()
    }
  }

  stop () {
    if (this.#session === null) return
    const session = this.#session
    this.#session = null
    owner = null
    try {
      post(session, 'HeapProfiler.stopSampling')
    } finally {
      session.disconnect()
    }
  }

  /**
   * What the samples hold now, kept when it is the most since the last window (held mode only; a read forces a mark-compact: see
   * the module comment).
   */
  notePeak () {
    if (this.#session === null || this.#collected) return
    const samples = this.#samplesNow(post.bind(null, this.#session, 'HeapProfiler.getSamplingProfile'))
    if (samples === null) return
    const peak = this.#peak
    const held = new Map()
    let total = 0
    for (const sample of samples) {
      if (sample.ordinal <= this.#epochOrdinal) continue
      total += sample.size
      const site = held.get(sample.key)
      if (site === undefined) held.set(sample.key, { site: sample.site, bytes: sample.size })
      else site.bytes += sample.size
      if (sample.ordinal > this.#lastOrdinal) peak.fresh.set(sample.ordinal, sample)
    }
    if (total > peak.total) {
      peak.total = total
      peak.held = held
    }
  }

  /**
   * The sites now: what each holds, and what it allocated since the last window and still holds (or held at a `notePeak`, when
   * that was more).
   *   null when the profiler is not running
   */
  window () {
    if (this.#session === null) return null
    const collected = this.#collected
    const session = this.#session
    const recorder = this
    const samples = this.#samplesNow(function read () {
      if (!collected) return post(session, 'HeapProfiler.getSamplingProfile')
      // the samples of one window only: kept after collection, they would pile up
      const answer = post(session, 'HeapProfiler.stopSampling')
      recorder.#startSampling(session)
      return answer
    })
    if (samples === null) return null
    const peak = this.#peak
    this.#peak = emptyPeak()
    const bySite = new Map()
    const held = collected ? null : 0
    const totals = { allocatedBytes: 0, heldBytes: held, samples: 0 }
    function entryOf (key, site) {
      let entry = bySite.get(key)
      if (entry === undefined) {
        entry = { ...site, kind: 'heap', allocatedBytes: 0, heldBytes: held, samples: 0 }
        bySite.set(key, entry)
      }
      return entry
    }
    function allocated (entry, size) {
      entry.allocatedBytes += size
      entry.samples++
      totals.allocatedBytes += size
      totals.samples++
    }
    let newest = this.#lastOrdinal
    for (const sample of samples) {
      // a sample from before the epoch: allocated in an earlier window, and no longer held by a count
      if (!collected && sample.ordinal <= this.#epochOrdinal) continue
      const entry = entryOf(sample.key, sample.site)
      if (held !== null) {
        entry.heldBytes += sample.size
        totals.heldBytes += sample.size
      }
      if (collected || sample.ordinal > this.#lastOrdinal) allocated(entry, sample.size)
      peak.fresh.delete(sample.ordinal)
      if (sample.ordinal > newest) newest = sample.ordinal
    }
    // what a peak saw allocated and the window's end did not: collected in between
    for (const [ordinal, sample] of peak.fresh) {
      allocated(entryOf(sample.key, sample.site), sample.size)
      if (ordinal > newest) newest = ordinal
    }
    for (const [key, { site, bytes }] of peak.held) {
      const entry = entryOf(key, site)
      entry.heldBytes = Math.max(entry.heldBytes, bytes)
    }
    if (held !== null) totals.heldBytes = Math.max(totals.heldBytes, peak.total)
    this.#lastOrdinal = newest
    return { sites: [...bySite.values()], totals }
  }

  /**
   * From now on a site holds only the samples taken from the last window on (held mode): what a route holds is what it allocated,
   * never what the one before left. Call it after `window()`.
   */
  newEpoch () {
    this.#epochOrdinal = this.#lastOrdinal
  }

  /** The profile's samples, each with its site and key (`read` posts for the profile), or null: `error` says why. */
  #samplesNow (read) {
    let profile
    try {
      profile = read().profile
    } catch (err) {
      this.error = `V8's sampling heap profiler: ${err.message}`
      return null
    }
    const siteOfNode = attributeNodes(profile.head, this.#prefer)
    const samples = []
    for (const sample of profile.samples) {
      const site = siteOfNode.get(sample.nodeId)
      if (site !== undefined) samples.push({ ordinal: sample.ordinal, size: sample.size, site, key: siteKey(site, 'heap') })
    }
    return samples
  }
}

function emptyPeak () {
  return { total: 0, held: new Map(), fresh: new Map() }
}

/** Inspector calls on the session's own thread answer at once. */
function post (session, method, params) {
  let answer
  let failure = null
  session.post(method, params, function onAnswer (err, result) {
    failure = err
    answer = result
  })
  if (failure) throw failure
  return answer
}

/**
 * Each node of the profile's call tree gets the site its samples are charged to: the deepest frame inside `prefer` on its path
 * from the root, else the deepest user frame, else the deepest `node:` frame, else its own frame (V8's own: `(V8 API)`,
 * `(program)`). Walked without recursion: a deep stack makes a deep tree.
 */
function attributeNodes (head, prefer) {
  const siteOfNode = new Map()
  const stack = [{ node: head, preferred: null, user: null, internal: null }]
  while (stack.length > 0) {
    const { node, preferred, user, internal } = stack.pop()
    const kind = frameKind(node.callFrame.url)
    let deepestPreferred = preferred
    let deepestUser = user
    let deepestInternal = internal
    if (kind === 'user') deepestUser = node
    else if (kind === 'node') deepestInternal = node
    if (prefer !== null && kind === 'user' && inFolders(node.callFrame.url, prefer)) deepestPreferred = node
    const chosen = deepestPreferred ?? deepestUser ?? deepestInternal ?? node
    siteOfNode.set(node.id, siteOfFrame(chosen.callFrame))
    const deepest = { preferred: deepestPreferred, user: deepestUser, internal: deepestInternal }
    for (const child of node.children) stack.push({ node: child, ...deepest })
  }
  return siteOfNode
}

function siteOfFrame (frame) {
  const file = siteFile(frame.url)
  return {
    functionName: frame.functionName || '(anonymous)',
    file,
    // the profile counts lines and columns from 0, stack traces from 1
    line: file === null ? null : frame.lineNumber + 1,
    column: file === null ? null : frame.columnNumber + 1
  }
}
