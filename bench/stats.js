/** Figures the benches and experiments summarise measurements with. */

function percentile (sorted, p) {
  if (sorted.length === 0) return null
  return sorted[Math.min(sorted.length - 1, Math.floor(p / 100 * sorted.length))]
}

/**
 * Latency figures in ms.
 * @param {number[]} values
 * @returns {{ min: number|null, avg: number|null, p50: number|null, p99: number|null, max: number|null }}
 */
export function latencyStats (values) {
  const sorted = [...values].sort(function ascending (a, b) { return a - b })
  const sum = sorted.reduce(function add (a, b) { return a + b }, 0)
  return {
    min: sorted[0] ?? null,
    avg: sorted.length ? sum / sorted.length : null,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? null
  }
}

/**
 * The median of the numbers among `values` (others are skipped); null when there are none.
 * @param {Array<number|null|undefined>} values
 */
export function median (values) {
  const sorted = values.filter(function present (v) { return typeof v === 'number' }).sort(function ascending (a, b) { return a - b })
  if (sorted.length === 0) return null
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/**
 * The median server-memory figures of repeated measurements, each shaped
 * `{ server: { idleRss, peakRss, peakAboveIdle, peakSource } }`.
 */
export function medianServer (runs) {
  function pick (get) { return median(runs.map(get)) }
  return {
    idleRss: pick(function idle (r) { return r.server.idleRss }),
    peakRss: pick(function peak (r) { return r.server.peakRss }),
    peakAboveIdle: pick(function above (r) { return r.server.peakAboveIdle }),
    peakSource: runs[0].server.peakSource
  }
}
