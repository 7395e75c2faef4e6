/**
 * `GET /metrics` for Prometheus: the lab's figures in the text exposition format (0.0.4), from a private prom-client registry,
 * never the global one (two labs in one test process must not share counters). More: README.md, "prometheus.js".
 */
import client from 'prom-client'

const { Registry, Gauge, Counter, collectDefaultMetrics } = client

const PROMETHEUS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE

let processRegistry = null

function getProcessRegistry () {
  if (processRegistry === null) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}

export function createPrometheusMetrics ({ events, sampler, hub }) {
  const registry = new Registry()
  const registers = [registry]
  // one sample per scrape, read by every gauge's collect()
  let sample = null
  // a metric registers itself in `registers` when made; collect() feeds it at each scrape

  function bytesGauge (name, help, key) {
    return new Gauge({
      name,
      help,
      registers,
      collect: function collectBytes () { this.set(sample[key]) }
    })
  }
  bytesGauge('streamlab_rss_bytes', 'Resident set size (process.memoryUsage().rss).', 'rss')
  bytesGauge('streamlab_heap_total_bytes', 'V8 heap reserved (process.memoryUsage().heapTotal).', 'heapTotal')
  bytesGauge('streamlab_heap_used_bytes', 'V8 heap in use (process.memoryUsage().heapUsed).', 'heapUsed')
  bytesGauge('streamlab_external_bytes', 'Memory of C++ objects bound to JS objects, Buffers included (process.memoryUsage().external).',
    'external')
  bytesGauge('streamlab_array_buffers_bytes', 'Memory of ArrayBuffers and Buffers (process.memoryUsage().arrayBuffers).', 'arrayBuffers')
  new Gauge({
    name: 'streamlab_heap_space_used_bytes',
    help: 'Bytes used in each of V8\'s heap spaces, by V8\'s name for the space (v8.getHeapSpaceStatistics()).',
    labelNames: ['space'],
    registers,
    collect: function collectHeapSpaces () {
      this.reset()
      for (const [space, bytes] of Object.entries(sample.heapSpaces)) this.set({ space }, bytes)
    }
  })
  new Gauge({
    name: 'streamlab_ingest_held_bytes',
    help: 'Bytes the ingest requests in flight hold (the 16 that hold most), summed by route and stage (docs/metrics.md, "Where the ' +
      'bytes are").',
    labelNames: ['route', 'stage'],
    registers,
    collect: function collectHeld () {
      this.reset()
      const sums = new Map()
      for (const request of sample.requests) {
        for (const [stage, bytes] of Object.entries(request.held)) {
          const key = `${request.route}\u0000${stage}`
          sums.set(key, (sums.get(key) ?? 0) + bytes)
        }
      }
      for (const [key, bytes] of sums) {
        const [route, stage] = key.split('\u0000')
        this.set({ route, stage }, bytes)
      }
    }
  })
  new Gauge({
    name: 'streamlab_peak_rss_bytes',
    help: 'The kernel\'s peak RSS (VmHWM; a sampled peak where /proc is absent or in portable mode), reset by POST /metrics/peak/reset.',
    labelNames: ['source'],
    registers,
    collect: function collectPeak () {
      this.reset()
      this.set({ source: sample.peakSource }, sample.peakRss)
    }
  })
  new Gauge({
    name: 'streamlab_event_loop_delay_seconds',
    help: 'Event-loop delay over the latest /metrics stream sample; NaN while no stream is sampling (see nodejs_eventloop_lag_* for ' +
      'always-on figures).',
    labelNames: ['stat'],
    registers,
    collect: function collectDelay () {
      for (const stat of ['p50', 'p99', 'max']) {
        const ms = sample.eventLoop[stat]
        this.set({ stat }, ms === null ? NaN : ms / 1000)
      }
    }
  })
  new Gauge({
    name: 'streamlab_event_loop_utilization_ratio',
    help: 'Event-loop utilisation (0..1) over the latest /metrics stream sample; NaN while no stream is sampling.',
    registers,
    collect: function collectUtilization () {
      const value = sample.eventLoop.utilization
      this.set(value === null ? NaN : value)
    }
  })
  new Gauge({
    name: 'streamlab_ingest_requests_in_flight',
    help: 'Ingest and upload requests (POST /bad, /good, /upload-buffer, /upload-stream) started and not yet answered.',
    registers,
    collect: function collectInFlight () { this.set(hub.requestsInFlight) }
  })
  new Gauge({
    name: 'streamlab_metrics_stream_clients',
    help: 'Clients connected to the /metrics event stream.',
    registers,
    collect: function collectClients () { this.set(hub.clientCount) }
  })
  new Counter({
    name: 'streamlab_metrics_stream_dropped_samples_total',
    help: 'Samples not sent to /metrics stream clients whose sockets were full.',
    registers,
    collect: function collectDropped () {
      // the hub keeps the running total; a counter only needs to show it
      this.reset()
      this.inc(hub.dropped)
    }
  })
  const requests = new Counter({
    name: 'streamlab_ingest_requests_total',
    help: 'Ingest and upload requests (POST /bad, /good, /upload-buffer, /upload-stream) answered, by route and HTTP status.',
    labelNames: ['route', 'status'],
    registers
  })

  function countRequest (event) {
    if (event?.phase === 'end') requests.inc({ route: String(event.route), status: String(event.status) })
  }
  events.on('request', countRequest)

  return {
    contentType: PROMETHEUS_CONTENT_TYPE,
    render: async function renderPrometheus () {
      const merged = Registry.merge([getProcessRegistry(), registry])
      // the gauges' collect() calls run synchronously at the start of metrics()
      sample = sampler.snapshot()
      return merged.metrics()
    },
    close: function closePrometheus () {
      events.removeListener('request', countRequest)
    }
  }
}
