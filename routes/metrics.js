/**
 * GET /metrics (an SSE stream, a JSON snapshot or Prometheus text, by
 * content negotiation) and POST /metrics/peak/reset. The stream lives in
 * lib/metrics/stream.js, the measuring in lib/metrics/sampler.js.
 */
import express from 'express'
import { badParameter, mediaNotAcceptable } from '../lib/errors/index.js'
import { integerParam } from '../lib/config/integers.js'
import { createMetricsHub } from '../lib/metrics/stream.js'
import { createPrometheusMetrics } from '../lib/metrics/prometheus.js'
import { readPeakRss, resetPeakRss } from '../lib/metrics/peak.js'
import { INTERVAL_MAX, INTERVAL_MIN } from '../lib/metrics/sampler.js'

const FORMATS = Object.freeze(['sse', 'json', 'prometheus'])

// the order breaks ties: no Accept header, or */*, means the stream (curl, EventSource)
const MEDIA_TYPES = Object.freeze({
  'text/event-stream': 'sse',
  'application/json': 'json',
  'text/plain; version=0.0.4': 'prometheus',
  'application/openmetrics-text; version=1.0.0': 'prometheus'
})

/**
 * The /metrics routes; `opts.metrics` tunes the hub (HUB_DEFAULTS; past `maxClients`, 503). `limits`: what the
 * JSON snapshot also shows (memory budget, disk quota, decoder budget, the newest site window); `allocationSites`
 * serves `?allocationSites=1`.
 */
export function metricsRoutes (opts, events, sampler, limits = {}) {
  const hub = createMetricsHub({ ...opts.metrics, events, sampler })
  const prometheus = createPrometheusMetrics({ events, sampler, hub })
  const router = express.Router({ caseSensitive: true, strict: true })

  router.get('/metrics', async function serveMetrics (req, res) {
    const format = chooseFormat(req)
    const interval = readInterval(req.query.interval, sampler.interval)
    if (format === 'json') {
      res.json({ ...hub.snapshot(), ...describeLimits(limits), allocationSites: limits.allocationSites?.latest ?? null })
    } else if (format === 'prometheus') {
      const text = await prometheus.render()
      res.type(prometheus.contentType).send(text)
    } else {
      const wantsSites = readSwitch('allocationSites', req.query.allocationSites)
      hub.attach(req, res, { interval, lastEventId: readLastEventId(req) })
      if (wantsSites && limits.allocationSites) req.once('close', limits.allocationSites.want())
    }
  })

  router.post('/metrics/peak/reset', function resetPeak (req, res) {
    const reset = resetPeakRss()
    const peak = readPeakRss()
    const supported = reset
    events.emit('peak', { time: Date.now(), reset: true, supported, peakRss: peak.bytes })
    res.json({ reset, supported, peakRss: peak.bytes, source: peak.source })
  })

  router.hub = hub
  /** Stop the stream and the bus listeners: the app's close() calls it. */
  router.close = function closeMetrics () {
    hub.close()
    prometheus.close()
  }
  return router
}

function chooseFormat (req) {
  const asked = req.query.format
  if (asked !== undefined) {
    if (!FORMATS.includes(asked)) throw badParameter('format', asked, FORMATS.join(', '))
    return asked
  }
  const type = req.accepts(Object.keys(MEDIA_TYPES))
  if (type === false) {
    throw mediaNotAcceptable(req.headers.accept, Object.keys(MEDIA_TYPES))
  }
  return MEDIA_TYPES[type]
}

function readInterval (value, fallback) {
  if (value === undefined) return fallback
  return integerParam('interval', value, INTERVAL_MIN, INTERVAL_MAX, `an integer number of ms from ${INTERVAL_MIN} to ${INTERVAL_MAX}`)
}

function readSwitch (name, value) {
  if (value === undefined || value === '0') return false
  if (value === '1') return true
  throw badParameter(name, value, '1 or 0')
}

/** The Last-Event-ID header (a bad one is ignored: the stream starts live) or `?lastEventId=` (a bad one is 400). */
function readLastEventId (req) {
  if (req.query.lastEventId !== undefined) {
    const value = req.query.lastEventId
    if (typeof value !== 'string' || !/^\d{1,15}$/.test(value)) {
      throw badParameter('lastEventId', value, 'a non-negative integer event id')
    }
    return Number(value)
  }
  const header = req.headers['last-event-id']
  return typeof header === 'string' && /^\d{1,15}$/.test(header.trim()) ? Number(header.trim()) : null
}

/** The budgets a JSON snapshot shows beside the sample: how close the lab is to refusing. */
function describeLimits ({ admission, diskQuota, decoders }) {
  const out = {}
  if (admission) out.memoryBudget = admission.state()
  if (decoders) out.decoderBudget = { capacity: decoders.capacity, used: decoders.used, waiting: decoders.waiting }
  if (diskQuota) {
    const disk = diskQuota.snapshot()
    out.disk = { used: disk.used, quota: disk.quota, files: disk.files }
  }
  return out
}
