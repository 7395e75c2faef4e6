/** The chunk-size experiment's lesson screenshot, from the run's own result (experiments/README.md#figures). */
import { formatBytes, formatMiB, formatMs } from '../../lib/util/units.js'
import { publishedFigures } from '../../lib/measure/figure-lines.js'

export const screenshot = Object.freeze({
  name: 'chunk-size',
  flags: [],
  // every read size in both modes; 200 downloads per setting keep the sweep near a minute
  params: { hwm: 'all', mode: 'both', concurrency: 50, requests: 200 },
  timeoutMs: 10 * 60_000,
  figures: chunkSizeFigures
})

function chunkSizeFigures ({ result }) {
  const lines = [`file: ${formatBytes(result.file.bytes)}`]
  for (const c of result.cells) {
    lines.push(`${formatBytes(c.hwm)} reads, ${c.mode}: ${c.mibPerSecond} MiB/s; ${c.ok}/${c.requests} ok; ` +
      `latency avg ${formatMs(c.latencyMs?.avg)}; server peak above idle ${formatMiB(c.server?.peakAboveIdle)}`)
  }
  return [...lines, ...publishedFigures(result.published)]
}
