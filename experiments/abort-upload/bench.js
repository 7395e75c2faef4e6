/** `npm run bench -- abort-upload --uploads 100 --bytes 1MB --abort-at 50`: the experiment on a fresh lab (experiments/README.md#bench). */
import { experimentBench } from '../../lib/measure/experiment-bench.js'
import { markdownTable } from '../../lib/measure/table.js'
import { formatDecimalBytes } from '../../lib/util/units.js'
import * as experiment from './index.js'
import { ROUTE_LABELS, announcedThenAborted, signedMiB } from './result.js'

export const { name, summary, usage, options, normalize, run } = experimentBench(experiment, {
  summary: 'pipe() vs pipeline() on aborted uploads: descriptors, files and memory left',
  table: abortUploadTable
})

/** The table: a row per cell, what the descriptors were counted from, then the verdicts. */
function abortUploadTable (result) {
  const rows = result.cells.map(function row (c) {
    const left = c.leftBytes === 0 ? '0' : formatDecimalBytes(c.leftBytes)
    return [ROUTE_LABELS[c.route], c.uploads, c.aborted, c.fdsLeft, c.fdsLeftLater, c.fdsOrphaned, c.filesLeft, left,
      signedMiB(c.heapGrowthBytes), signedMiB(c.rssGrowthBytes), c.fdsClosedByCleanUp, c.cleanedUp ? 'yes' : 'NO']
  })
  const table = markdownTable(['route', 'uploads', 'aborted', 'fds left', 'after GC + wait', 'stream collected', 'files left',
    'bytes left', 'heap', 'RSS', 'closed by clean-up', 'clean after'], rows)
  const { input } = result
  const notes = [
    `Each upload announced ${announcedThenAborted(input)}. ` +
      `Descriptors counted from ${result.cells[0]?.fdSource ?? 'n/a'}; ` +
      `heap and RSS after a ${result.gc ? 'forced GC' : 'wait (no GC to force)'}, against the cell's start.`,
    '',
    ...result.verdicts.map(function line (v) { return `- ${v.verdict === 'leaks' ? 'LEAKS' : 'clean'}: ${v.text}` })
  ]
  return `${table}\n\n${notes.join('\n')}\n`
}
