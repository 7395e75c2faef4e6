/** The metrics hub's history (lib/metrics/stream.js): a ring of framed SSE events with contiguous ids, and the framing itself. */

/**
 * A ring of framed events with contiguous ids: the entry with id N is at a known place, so a cursor can be followed without
 * searching.
 */
export class History {
  constructor (capacity, maxAgeMs) {
    this.capacity = capacity
    this.maxAgeMs = maxAgeMs
    this.entries = new Array(capacity)
    this.start = 0
    this.size = 0
    this.nextId = 1
  }

  /** The id of the oldest entry held (`nextId` when none is). */
  get firstId () {
    return this.nextId - this.size
  }

  get newestId () {
    return this.nextId - 1
  }

  push (entry) {
    entry.id = this.nextId++
    if (this.size === this.capacity) {
      this.entries[this.start] = entry
      this.start = (this.start + 1) % this.capacity
    } else {
      this.entries[(this.start + this.size) % this.capacity] = entry
      this.size++
    }
    return entry
  }

  get (id) {
    const offset = id - this.firstId
    if (offset < 0 || offset >= this.size) return undefined
    return this.entries[(this.start + offset) % this.capacity]
  }

  prune (now) {
    while (this.size > 0 && this.entries[this.start].time < now - this.maxAgeMs) {
      this.entries[this.start] = undefined
      this.start = (this.start + 1) % this.capacity
      this.size--
    }
  }
}

/** Serialise a bus payload; a bad one must not throw into whoever emitted it. */
export function toJson (data) {
  try {
    return JSON.stringify(data) ?? 'null'
  } catch (err) {
    return JSON.stringify({ error: `event not serialisable: ${err.message}` })
  }
}

export function frame (id, type, json) {
  return `id: ${id}\nevent: ${type}\ndata: ${json}\n\n`
}

export const HEARTBEAT = ': heartbeat\n\n'
