/** The tiny-writes experiment's lesson screenshot, from the run's own result (experiments/README.md#figures). */
import { formatMs } from '../../lib/util/units.js'
import { count, publishedFigures } from '../../lib/measure/figure-lines.js'

export const screenshot = Object.freeze({
  name: 'tiny-writes',
  flags: [],
  // the .NET demo's million bytes, all three ways, with the batch sweep
  params: { mode: 'all', bytes: 1_000_000, batch: 65536, sweep: 'steps', nagle: 'on' },
  // fourteen columns of figures per cell
  viewport: { width: 1840, height: 900 },
  timeoutMs: 10 * 60_000,
  figures: tinyWritesFigures
})

function tinyWritesFigures ({ result }) {
  const lines = [`${count(result.bytes)} bytes per cell, Nagle ${result.nagle}`]
  for (const c of result.cells) {
    const delivered = c.delivered === true ? 'every byte delivered' : `delivered: ${c.delivered}`
    lines.push(`${c.mode}, batch ${count(c.batch)}: ${formatMs(c.ms)}; ${count(c.writeCalls)} write() calls, ` +
      `${count(c.syscalls)} write syscalls (${c.bytesPerSyscall} B each); ${c.mbPerSecond} MB/s; ${delivered}`)
  }
  return [...lines, ...publishedFigures(result.published)]
}
