/**
 * The backpressure experiment's result (lib/experiments/result-contract.js),
 * from the run's samples, the client's result and the upload's final state:
 * one cell with the figures the judgements need (peak RSS above idle, the two
 * sides' rates, each stream's peak against its bound, how often it sat near
 * it, what stopped the upload), a table of the stages, three charts and the
 * verdicts (./verdicts.js).
 */
import { MB, MiB, formatBytes, round } from '../../lib/util/units.js'
import { STAGE_NAMES } from './stages.js'
import { judgeRun } from './verdicts.js'

/** A stage is "at its bound" in a sample when it holds at least this share of it. */
const NEAR_BOUND = 0.5
/** Rates are compared over the run's second half, once the buffers have filled. */
const STEADY_FROM = 0.5
const CHART_POINTS = 240

/** The cell's members as the results table heads them: one quantity each, with its unit. */
const CELL_LABELS = Object.freeze({
  mode: 'mode',
  delayMs: 'consumer delay per batch',
  rate: 'client rate (B/s, 0: as fast as it can)',
  highWaterMark: 'highWaterMark (bytes)',
  cap: 'cap on the consumer (bytes)',
  stoppedBy: 'stopped by',
  seconds: 'seconds',
  samples: 'samples',
  sentBytes: 'client sent (gzip)',
  consumedBytes: 'consumer took (inflated)',
  clientSentMBps: 'client sent, MB/s (gzip)',
  arrivedMBps: 'arrived at the server, MB/s (gzip)',
  arrivedInflatedMBps: 'arrived, MB/s (inflated)',
  consumerMBps: 'consumer took, MB/s',
  peakHeldBytes: 'server streams held, peak',
  heldBoundBytes: 'server streams, sum of bounds',
  kernelReceivePeakBytes: 'server kernel receive queue, peak',
  clientSendQueuePeakBytes: 'client kernel send queue, peak',
  clientWaitingPeakBytes: 'client waiting to write, peak',
  unreadPeakBytes: 'sent, not yet read (both kernels), peak',
  stagesAtBound: 'streams at half their bound or more'
})

/**
 * @param {{ params: object, input: { file: string, bytes: number, compressedBytes: number }, samples: object[],
 *   client: object, final: object|null, server: object, idleRss: number, relay: { changes: number, failures: number } }} run
 * @returns {object} the result
 */
export function summariseRun ({ params, input, samples, client, final, server, idleRss, relay }) {
  const ratio = input.bytes / Math.max(1, input.compressedBytes)
  // an upload stopped before the first sample is judged from its final state alone
  const modes = [...new Set([...samples.map(function modeOf (s) { return s.settings.mode }), ...(final ? [final.settings.mode] : [])])]
  // an upload refused before it began (the budget had no room for its buffers) is known by its answer only
  const refused = final === null && client.status >= 400 ? client.answer?.error ?? null : null
  const stop = final?.outcome?.error ?? refused
  const stoppedBy = final?.outcome?.stoppedBy === 'client' && client.stoppedBy === 'time'
    ? 'time'
    : final?.outcome?.stoppedBy ?? (refused ? stopKind(refused.type) : client.stoppedBy)
  const stages = stageFigures(samples, final)
  const rates = steadyRates(samples)
  const kernelRead = samples.some(function read (s) { return s.kernel.source !== null })
  const cell = {
    mode: modes.length === 1 ? modes[0] : modes.join(' then '),
    delayMs: params.delayMs,
    rate: params.rate,
    highWaterMark: params.highWaterMark,
    cap: params.cap,
    stoppedBy,
    seconds: round((final?.ms ?? client.ms) / 1000, 10),
    samples: samples.length,
    sentBytes: client.sentBytes,
    consumedBytes: final?.consumer.consumedBytes ?? null,
    clientSentMBps: mbps(rates.clientSent),
    arrivedMBps: mbps(rates.arrived),
    arrivedInflatedMBps: mbps(rates.arrived === null ? null : rates.arrived * ratio),
    consumerMBps: mbps(rates.consumed),
    peakHeldBytes: final?.peaks.held ?? null,
    heldBoundBytes: stages.reduce(function sum (t, s) { return t + s.bound }, 0),
    kernelReceivePeakBytes: kernelRead ? peakOf(samples, function rx (s) { return s.kernel.serverReceiveQueue }) : null,
    clientSendQueuePeakBytes: kernelRead ? peakOf(samples, function tx (s) { return s.kernel.clientSendQueue }) : null,
    clientWaitingPeakBytes: peakOf(samples, function waiting (s) { return s.client?.waitingBytes }),
    unreadPeakBytes: peakOf(samples, function unread (s) { return s.read.unreadBytes }),
    stagesAtBound: stages.filter(atBound).map(function named (s) { return s.name }).join(', '),
    server
  }
  return {
    input,
    kernel: kernelRead ? '/proc/net/tcp' : 'not readable here: the kernel\'s queues are null (Linux shows them in /proc/net/tcp)',
    stop: stop ?? (client.error ? { type: 'client', message: client.error } : null),
    answer: { status: client.status, body: client.answer },
    relay,
    caption: `${formatBytes(input.bytes)} of NDJSON (${formatBytes(input.compressedBytes)} gzipped), ${cell.mode}, ` +
      `${params.delayMs} ms a batch, client ${params.rate === 0 ? 'as fast as it can' : `at ${params.rate} B/s`}, ` +
      `highWaterMark ${params.highWaterMark}`,
    cells: [cell],
    cellLabels: CELL_LABELS,
    tables: [stagesTable(stages)],
    charts: charts(thin(samples), idleRss, ratio),
    // the live states, for a record's replay: a chart's worth at most
    samples: thin(samples),
    verdicts: judgeRun({ cell, stages, samples, modes, kernelRead, seenEnd: final !== null })
  }
}

/** Each stage's bound, its peak (the server's, looked at after every batch) and how often it sat near its bound. */
function stageFigures (samples, final) {
  const last = final?.stages ?? samples.at(-1)?.stages ?? []
  const steady = steadySamples(samples)
  return STAGE_NAMES.map(function figures (name, k) {
    const bound = last[k]?.bound ?? null
    const near = steady.filter(function isNear (s) { return bound !== null && s.stages[k].bytes >= bound * NEAR_BOUND }).length
    const peak = final?.peaks.stages[name] ?? peakOf(samples, function bytes (s) { return s.stages[k].bytes })
    return { name, bound, peak, nearShare: steady.length ? near / steady.length : null }
  })
}

/** A stage that sat at half its bound or more in most of the run's second half. */
function atBound (stage) {
  return stage.nearShare !== null && stage.nearShare >= NEAR_BOUND
}

function steadySamples (samples) {
  const lastMs = samples.at(-1)?.ms ?? 0
  return samples.filter(function late (s) { return s.ms >= lastMs * STEADY_FROM })
}

/**
 * Bytes a second each side moved over the run's second half: the client's into its socket and
 * arriving at the server's (gzip), the consumer's (inflated).
 */
function steadyRates (samples) {
  const steady = steadySamples(samples)
  const from = steady[0]
  const to = steady.at(-1)
  if (!from || !to || to.ms - from.ms < 1000) return { clientSent: null, arrived: null, consumed: null }
  const seconds = (to.ms - from.ms) / 1000
  // `arrived` counts the receive queue, which rises and falls by a megabyte: over a short half, noise below zero
  return {
    clientSent: from.client === null || to.client === null ? null : (to.client.sentBytes - from.client.sentBytes) / seconds,
    arrived: Math.max(0, to.read.arrivedBytes - from.read.arrivedBytes) / seconds,
    consumed: (to.consumer.consumedBytes - from.consumer.consumedBytes) / seconds
  }
}

function stagesTable (stages) {
  const columns = stages.map(function column (s) { return { key: s.name, label: s.name } })
  function row (field, label, unit, value) {
    return { field, label, unit, values: Object.fromEntries(stages.map(function cell (s) { return [s.name, value(s)] })) }
  }
  return {
    name: 'stages',
    caption: 'Each stream\'s buffer: its bound (highWaterMark), its peak, and how often it sat at half its bound or more ' +
      'in the run\'s second half',
    columns,
    rows: [
      row('bound', 'bound (bytes)', 'count', function bound (s) { return s.bound }),
      row('peak', 'peak (bytes)', 'count', function peak (s) { return s.peak }),
      row('nearShare', 'samples near the bound (%)', 'count', function near (s) {
        return s.nearShare === null ? null : Math.round(s.nearShare * 100)
      })
    ]
  }
}

/** At most CHART_POINTS samples, evenly picked, the last kept. */
function thin (samples) {
  const step = Math.max(1, Math.ceil(samples.length / CHART_POINTS))
  return samples.filter(function everyStep (s, k) { return k % step === 0 || k === samples.length - 1 })
}

function charts (kept, idleRss, ratio) {
  function series (label, y) {
    return { label, points: kept.map(function point (s) { return { x: round(s.ms / 1000, 100), y: y(s) } }) }
  }
  function mib (bytes) { return bytes === null || bytes === undefined ? null : round(bytes / MiB, 1000) }
  return [
    {
      title: 'Bytes held, from the client to the consumer',
      x: 'seconds',
      y: 'MiB',
      series: [
        series('client, waiting to be written', function waiting (s) { return mib(s.client?.waitingBytes) }),
        series('kernel: client send queue', function tx (s) { return mib(s.kernel.clientSendQueue) }),
        series('kernel: server receive queue', function rx (s) { return mib(s.kernel.serverReceiveQueue) }),
        series('server streams but the consumer', function streams (s) { return mib(s.held - s.stages.at(-1).bytes) }),
        series('consumer', function consumer (s) { return mib(s.stages.at(-1).bytes) })
      ]
    },
    {
      title: 'Each side\'s rate (inflated MB/s)',
      x: 'seconds',
      y: 'MB/s',
      series: [
        series('client, arriving at the server', function arrived (s) { return mbps(s.rates.arrived && s.rates.arrived * ratio) }),
        series('consumer took', function took (s) { return mbps(s.rates.consumed) })
      ]
    },
    {
      title: 'Server RSS above idle',
      x: 'seconds',
      y: 'MiB',
      series: [series('RSS above idle', function rss (s) { return mib(s.rss - idleRss) })]
    }
  ]
}

/** What stopped an upload, in a word: the route's outcome and the result use it. */
export function stopKind (type) {
  if (type === 'buffer.cap.exceeded') return 'cap'
  if (type === 'memory.budget.exceeded' || type === 'memory.busy') return 'budget'
  return 'error'
}

function peakOf (samples, get) {
  let peak = null
  for (const s of samples) {
    const v = get(s)
    if (typeof v === 'number' && (peak === null || v > peak)) peak = v
  }
  return peak
}

function mbps (bytesPerSecond) {
  return bytesPerSecond === null ? null : round(bytesPerSecond / MB, 100)
}
