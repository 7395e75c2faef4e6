/**
 * The backpressure run's pipeline sample, made and read in one place: the run composes one per look at the
 * upload (docs/backpressure.md, "The live state"), its progress and its record carry them, the page draws them.
 */

/**
 * One sample as the run's progress carries it (docs/backpressure.md, "The live state").
 * @param {object} server GET /backpressure/:token
 * @param {object|null} client the client's last report
 * @param {object} params the run's params now (the client's rate as asked)
 * @param {object|null} previous the sample before, for the rates
 */
export function composeSample (server, client, params, previous) {
  const sentBytes = client?.done ?? 0
  // what reached the server's end of the connection, read in one look: on loopback, what left the client's
  const readBytes = server.compressedBytes + server.stages[0].bytes + server.stages[1].bytes
  const arrivedBytes = readBytes + (server.kernel.serverReceiveQueue ?? 0)
  // left the client, not yet read by the server: in the two kernels' queues, seen on every platform
  // (the client's report is older than the server's look, so this errs low)
  const unreadBytes = client === null ? null : Math.max(0, sentBytes - readBytes)
  // the server's clock for both sides: the client's report is at most one of its intervals old
  const seconds = previous === null ? 0 : (server.ms - previous.ms) / 1000
  function perSecond (now, before) {
    return seconds > 0 ? Math.max(0, Math.round((now - before) / seconds)) : null
  }
  return {
    ms: server.ms,
    settings: { ...server.settings, rate: client?.rate ?? params.rate },
    stages: server.stages,
    held: server.held,
    // the server's peaks, looked at after every batch: what a view keeps and the record's table shows
    peaks: server.peaks,
    consumer: server.consumer,
    read: { arrivedBytes, unreadBytes, compressedBytes: server.compressedBytes, inflatedBytes: server.inflatedBytes },
    kernel: server.kernel,
    client: client === null
      ? null
      : { writtenBytes: client.writtenBytes, sentBytes, waitingBytes: client.waitingBytes, bound: client.bound },
    rss: server.rss,
    rates: {
      clientSent: previous === null ? null : perSecond(sentBytes, previous.client?.sentBytes ?? 0),
      arrived: previous === null ? null : perSecond(arrivedBytes, previous.read.arrivedBytes),
      consumed: previous === null ? null : perSecond(server.consumer.consumedBytes, previous.consumer.consumedBytes)
    }
  }
}

/** Whether `sample` has the shape the view draws: stages as `{ name, bytes, bound }`. */
export function isPipelineSample (sample) {
  return sample !== null && typeof sample === 'object' && Array.isArray(sample.stages) &&
    sample.stages.every(function stageShape (s) { return s !== null && typeof s === 'object' && typeof s.name === 'string' })
}

/** A record's pipeline samples (its results' `samples`), or null when it has none. */
export function recordedPipeline (results) {
  const samples = results?.samples
  if (!Array.isArray(samples) || samples.length === 0 || !samples.every(isPipelineSample)) return null
  return samples
}
