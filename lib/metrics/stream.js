/**
 * The SSE hub behind `GET /metrics`: samples from the sampler and events from the lab's bus, framed once, kept in a bounded
 * history and sent to every client from there. More: README.md, "stream.js".
 */
import { checkInterval } from './sampler.js'
import { tooManyStreams } from '../errors/index.js'
import { FORWARDED_EVENTS, normalizeHubOptions } from './hub-options.js'
import { History, toJson, frame, HEARTBEAT } from './sse-history.js'
import { createOutcomes } from './outcomes.js'

/** Seconds a stream refused at `maxClients` is asked to wait: streams last long. */
const STREAM_RETRY_AFTER = 5

/**
 * Create the hub. It listens to the bus at once (so a client that reconnects after a gap still gets the events of the gap) and
 * samples only while clients are connected.
 */
export function createMetricsHub (options) {
  const { events, sampler, ...rest } = options ?? {}
  if (events === null || typeof events?.on !== 'function') throw new TypeError('option events must be an EventEmitter')
  if (sampler === null || typeof sampler?.subscribe !== 'function') throw new TypeError('option sampler must be a sampler')
  return new MetricsHub(events, sampler, normalizeHubOptions(rest))
}

export class MetricsHub {
  #events
  #sampler
  #options
  #history
  #clients = new Set()
  /** interval -> { unsubscribe, clients } */
  #groups = new Map()
  #busListeners = []
  #heartbeat = null
  #nextClientId = 1
  #inFlight = new Set()
  #dropped = 0
  #ended = 0
  #lastPeak = null
  #closed = false
  /** The last crash and the latest results, for clients that come late (lib/metrics/outcomes.js). */
  #outcomes

  constructor (events, sampler, options) {
    this.#events = events
    this.#sampler = sampler
    this.#options = options
    this.#history = new History(options.historySize, options.historyMs)
    this.#outcomes = createOutcomes(events)
    const hub = this
    for (const type of FORWARDED_EVENTS) {
      const listener = function forwardBusEvent (data) { hub.#onBusEvent(type, data) }
      events.on(type, listener)
      this.#busListeners.push([type, listener])
    }
  }

  /** Samples dropped for congested clients since the hub started. */
  get dropped () {
    return this.#dropped
  }

  get clientCount () {
    return this.#clients.size
  }

  /** Ingest and upload requests (every `request` event) started and not yet ended. */
  get requestsInFlight () {
    return this.#inFlight.size
  }

  /**
   * Turn a request into an SSE stream: headers, `retry`, the replay after `lastEventId`, then live events until the client goes.
   * Returns the client's id; 503 `server.busy` when `maxClients` streams are open.
   */
  attach (req, res, params = {}) {
    if (this.#closed) throw new Error('metrics hub is closed')
    if (this.#clients.size >= this.#options.maxClients) throw tooManyStreams(this.#options.maxClients, STREAM_RETRY_AFTER)
    const interval = checkInterval(params.interval ?? this.#sampler.interval)
    const history = this.#history
    history.prune(Date.now())
    const lastEventId = params.lastEventId
    // ids restart with the process: an id beyond any this process issued comes from one that died (the supervisor restarted the
    // worker), so everything held is news to this client, the 'crash' event that says what happened first of all
    let cursor = history.newestId
    const fresh = !(Number.isSafeInteger(lastEventId) && lastEventId >= 0)
    if (!fresh) {
      cursor = lastEventId <= history.newestId ? lastEventId : history.firstId - 1
    }
    const client = {
      id: this.#nextClientId++,
      res,
      interval,
      since: Date.now(),
      cursor,
      // samples up to this id were dropped for this client (and counted)
      skipSamplesThrough: 0,
      congested: false,
      congestedSince: 0,
      sent: 0,
      dropped: 0,
      pendingDrops: 0,
      closed: false,
      cleanup: null
    }
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
      // nginx buffers proxied responses unless told not to
      'X-Accel-Buffering': 'no'
    })
    res.flushHeaders()

    const hub = this
    function onDrain () { hub.#onDrain(client) }
    function onClose () { client.cleanup() }
    let leaveGroup = null
    client.cleanup = function cleanupClient () {
      if (client.closed) return
      client.closed = true
      res.removeListener('drain', onDrain)
      req.removeListener('close', onClose)
      hub.#clients.delete(client)
      leaveGroup()
      if (hub.#clients.size === 0) hub.#stopHeartbeat()
    }
    res.on('drain', onDrain)
    req.on('close', onClose)
    this.#clients.add(client)
    leaveGroup = this.#joinGroup(interval, client)
    this.#startHeartbeat()

    this.#write(client, `retry: ${this.#options.retryMs}\n\n`)
    // a fresh client is replayed nothing, so it is told first that this worker replaced one that died, and why (a reconnecting
    // one gets the crash event from the history, if at all)
    const crash = this.#outcomes.crash
    if (fresh && crash !== null) {
      client.sent++
      this.#write(client, `event: crash\ndata: ${toJson(crash)}\n\n`)
    }
    this.#pump(client)
    return client.id
  }

  /**
   * The JSON snapshot: a sample now, requests in flight, the clients and what they lost, the history's extent, and what a client
   * that comes late missed: `lastCrash` (null: none) and `lastResults` (newest first).
   */
  snapshot () {
    const history = this.#history
    history.prune(Date.now())
    const clients = []
    for (const client of this.#clients) {
      clients.push({
        id: client.id,
        interval: client.interval,
        since: client.since,
        bufferedBytes: client.res.writableLength,
        congested: client.congested,
        sent: client.sent,
        dropped: client.dropped
      })
    }
    return {
      sample: this.#sampler.snapshot(),
      requestsInFlight: this.#inFlight.size,
      clients,
      dropped: this.#dropped,
      ended: this.#ended,
      history: {
        size: history.size,
        oldestId: history.size === 0 ? null : history.firstId,
        newestId: history.newestId === 0 ? null : history.newestId
      },
      lastCrash: this.#outcomes.crash,
      lastResults: this.#outcomes.results
    }
  }

  /** Stop listening to the bus, end every client, stop sampling. */
  close () {
    if (this.#closed) return
    this.#closed = true
    for (const [type, listener] of this.#busListeners) this.#events.removeListener(type, listener)
    this.#busListeners = []
    this.#outcomes.close()
    for (const client of [...this.#clients]) {
      client.res.end()
      client.cleanup()
    }
  }

  #onBusEvent (type, data) {
    if (type === 'request' && data !== null && typeof data === 'object') {
      if (data.phase === 'start') this.#inFlight.add(data.id)
      else if (data.phase === 'end') this.#inFlight.delete(data.id)
    }
    if (type === 'peak' && data?.reset === true && Number.isFinite(data.peakRss)) this.#lastPeak = data.peakRss
    this.#publish(type, toJson(data), null)
  }

  #onSample (interval, sample) {
    this.#watchPeak(sample)
    this.#publish('sample', JSON.stringify(sample), interval)
  }

  #watchPeak (sample) {
    const peak = sample.peakRss
    // lower than before: somebody reset the kernel's peak (a request may, without a bus event)
    if (this.#lastPeak === null || peak < this.#lastPeak) {
      this.#lastPeak = peak
      return
    }
    if (peak - this.#lastPeak > this.#options.peakStep) {
      const previousPeakRss = this.#lastPeak
      this.#lastPeak = peak
      // comes back through #onBusEvent, so other bus listeners see it too
      this.#events.emit('peak', {
        time: sample.time,
        reset: false,
        supported: sample.peakSource === 'VmHWM',
        peakRss: peak,
        previousPeakRss
      })
    }
  }

  #publish (type, json, interval) {
    const now = Date.now()
    const history = this.#history
    history.prune(now)
    const entry = history.push({ id: 0, type, interval, time: now, frame: '' })
    entry.frame = frame(entry.id, type, json)
    for (const client of this.#clients) {
      if (!client.congested) {
        this.#pump(client)
        continue
      }
      if (type === 'sample' && interval === client.interval) this.#drop(client, entry.id)
      // nothing it must still get waits before this sample: keep its cursor current, so that only real events it has not had (not
      // dropped samples) can later fall out of the history
      if (type === 'sample' && client.cursor === entry.id - 1) client.cursor = entry.id
    }
  }

  #drop (client, id) {
    client.dropped++
    client.pendingDrops++
    client.skipSamplesThrough = id
    this.#dropped++
  }

  /** Send what the client has not had, until its socket pushes back. */
  #pump (client) {
    const history = this.#history
    while (!client.closed && !client.congested && client.cursor < history.newestId) {
      if (client.cursor + 1 < history.firstId) {
        // the history let go of events this client never got
        const lost = { from: client.cursor + 1, to: history.firstId - 1 }
        client.cursor = lost.to
        this.#write(client, `event: gap\ndata: ${JSON.stringify(lost)}\n\n`)
        continue
      }
      const entry = history.get(client.cursor + 1)
      client.cursor = entry.id
      if (entry.type === 'sample' && (entry.interval !== client.interval || entry.id <= client.skipSamplesThrough)) continue
      client.sent++
      this.#write(client, entry.frame)
    }
  }

  #write (client, chunk) {
    if (!client.res.write(chunk)) {
      client.congested = true
      client.congestedSince = Date.now()
    }
  }

  #onDrain (client) {
    if (client.closed) return
    client.congested = false
    if (client.pendingDrops > 0) {
      const notice = { count: client.pendingDrops, total: client.dropped }
      client.pendingDrops = 0
      this.#write(client, `event: dropped\ndata: ${JSON.stringify(notice)}\n\n`)
    }
    this.#pump(client)
  }

  /** One sampler subscription per distinct interval, shared by its clients. */
  #joinGroup (interval, client) {
    let group = this.#groups.get(interval)
    if (group === undefined) {
      const hub = this
      group = { clients: new Set(), unsubscribe: null }
      this.#groups.set(interval, group)
      group.unsubscribe = this.#sampler.subscribe(interval, function onGroupSample (sample) {
        hub.#onSample(interval, sample)
      })
    }
    group.clients.add(client)
    const groups = this.#groups
    return function leaveGroup () {
      group.clients.delete(client)
      if (group.clients.size === 0 && groups.get(interval) === group) {
        groups.delete(interval)
        group.unsubscribe()
      }
    }
  }

  #startHeartbeat () {
    if (this.#heartbeat !== null) return
    const hub = this
    this.#heartbeat = setInterval(function heartbeat () { hub.#beat() }, this.#options.heartbeatMs)
    this.#heartbeat.unref()
  }

  #stopHeartbeat () {
    if (this.#heartbeat === null) return
    clearInterval(this.#heartbeat)
    this.#heartbeat = null
  }

  #beat () {
    const now = Date.now()
    this.#history.prune(now)
    for (const client of [...this.#clients]) {
      if (!client.congested) {
        this.#write(client, HEARTBEAT)
      } else if (now - client.congestedSince > this.#options.stallMs) {
        // its socket has taken nothing for a long time: stop holding a buffer for it
        this.#ended++
        client.res.destroy()
        client.cleanup()
      }
    }
  }
}
