/** Figures the benches and experiments summarise measurements with. */

function percentile (sorted, p) {
  if (sorted.length === 0) return null
  return sorted[Math.min(sorted.length - 1, Math.floor(p / 100 * sorted.length))]
}

/** Latency figures in ms. */
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

/** The median of the numbers among `values` (others are skipped); null when there are none. */
export function median (values) {
  const sorted = values.filter(function present (v) { return typeof v === 'number' }).sort(function ascending (a, b) { return a - b })
  if (sorted.length === 0) return null
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** The median server-memory figures of repeated measurements, each shaped `{ server: { idleRss, peakRss, peakAboveIdle, peakSource } }`. */
function medianServer (runs) {
  function pick (get) { return median(runs.map(get)) }
  return {
    idleRss: pick(function idle (r) { return r.server.idleRss }),
    peakRss: pick(function peak (r) { return r.server.peakRss }),
    peakAboveIdle: pick(function above (r) { return r.server.peakAboveIdle }),
    peakSource: runs[0].server.peakSource
  }
}

/** Measure every cell `repeat` times in turn, with progress; each cell's runs become one through `combine`. */
export async function repeatCells ({ cells, repeat, report, label, measure, combine }) {
  const total = cells.length * repeat
  const out = []
  let done = 0
  for (const cell of cells) {
    const runs = []
    for (let r = 0; r < repeat; r++) {
      report({ type: 'progress', done, total, label: `${label(cell)} run ${r + 1}/${repeat}` })
      runs.push(await measure(cell))
      done++
    }
    out.push(combine(runs))
  }
  report({ type: 'progress', done, total, label: 'done' })
  return out
}

/**
 * One cell out of repeated runs: the first run's fields, `sums` added up, `medians` (paths: 'latencyMs.avg') the
 * median, errors per run, the server's memory by medianServer, the runs as `measurements` (unchanged).
 */
export function medianOfRuns (runs, { sums = [], medians = [] }) {
  const cell = {
    ...runs[0],
    runs: runs.length,
    errors: runs.map(function errs (r) { return r.errors }),
    server: medianServer(runs),
    measurements: runs
  }
  for (const key of sums) cell[key] = runs.reduce(function add (s, r) { return s + r[key] }, 0)
  for (const path of medians) {
    const keys = path.split('.')
    let target = cell
    for (const key of keys.slice(0, -1)) {
      // a fresh object per level: the first run's nested figures must stay its own
      target[key] = { ...target[key] }
      target = target[key]
    }
    target[keys[keys.length - 1]] = median(runs.map(function at (r) {
      return keys.reduce(function step (value, key) { return value?.[key] }, r)
    }))
  }
  return cell
}
