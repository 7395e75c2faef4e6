/** A pipeline sample as bars and lines of text, client to consumer; no page, so Node specs read it. */
import { formatBytes } from './format.js'
import { MiB } from '../lib/util/units.js'

/** The bars of one sample, left to right: `{ key, label, bytes, bound, unreadable, note }` (null where unknown or none). */
export function pipelineBars (sample, { kernelSeen = false } = {}) {
  const client = sample.client ?? null
  const kernel = sample.kernel ?? {}
  const bars = [
    bar('client', 'client: waiting to be written', client?.waitingBytes, client?.bound,
      client === null ? 'not reported yet' : 'its request\'s writableLength')
  ]
  const unread = kernel.source === null || kernel.source === undefined
  if (unread && kernelSeen) {
    // read before in this run (an ended upload's queues are not read): the same bars, unknown for now
    bars.push(
      bar('clientSendQueue', 'client kernel: send queue', null, null, 'not read at this sample'),
      bar('serverReceiveQueue', 'server kernel: receive queue', null, null, 'not read at this sample'))
  } else if (unread) {
    // each kernel's queue is unreadable here, but what the client sent and the server has not read is known
    const note = 'each kernel\'s queue cannot be read here'
    bars.push(bar('kernels', 'both kernels: sent, not read', sample.read?.unreadBytes, null, note, true))
  } else {
    bars.push(
      bar('clientSendQueue', 'client kernel: send queue', kernel.clientSendQueue, null, `from ${kernel.source}`),
      bar('serverReceiveQueue', 'server kernel: receive queue', kernel.serverReceiveQueue, null, `from ${kernel.source}`))
  }
  for (const stage of sample.stages) {
    const note = stage.name === 'consumer' && sample.consumer
      ? `${sample.consumer.queuedBatches} batches queued, ${sample.consumer.batches} taken`
      : ''
    const peak = sample.peaks?.stages?.[stage.name]
    bars.push(bar(`stage:${stage.name}`, stage.name, stage.bytes, stage.bound, note, false, peak))
  }
  return bars
}

/** `peak`: the server's own, looked at after every batch (the samples see less often). */
function bar (key, label, bytes, bound, note, unreadable = false, peak = null) {
  return {
    key,
    label,
    bytes: Number.isFinite(bytes) ? bytes : null,
    bound: Number.isFinite(bound) && bound > 0 ? bound : null,
    peak: Number.isFinite(peak) ? peak : null,
    note,
    unreadable
  }
}

/** The sample's settings, RSS and rates, as lines of text. */
export function pipelineFigures (sample) {
  const s = sample.settings ?? {}
  const r = sample.rates ?? {}
  // one unit a line: a rate of a few KiB/s beside one of MiB/s must not read as the larger
  const rate = function perSecond (bytes) { return Number.isFinite(bytes) ? (bytes / MiB).toFixed(2) : '–' }
  const pace = s.rate === 0 ? 'as fast as it can' : `${rate(s.rate)} MiB/s`
  const seconds = Number.isFinite(sample.ms) ? (sample.ms / 1000).toFixed(1) : '–'
  return [
    `mode ${s.mode ?? '–'} · delayMs ${s.delayMs ?? '–'} · rate ${pace} · highWaterMark ${formatBytes(s.highWaterMark)}`,
    `RSS ${formatBytes(sample.rss)} · held ${formatBytes(sample.held)} · at ${seconds} s`,
    `rates (MiB/s): client sent ${rate(r.clientSent)} · arrived ${rate(r.arrived)} (gzip) · consumed ${rate(r.consumed)} (inflated)`
  ]
}
