/** The abort-upload result (lib/experiments/result-contract.js): cells, charts, the Node docs' claims beside the measures, verdicts. */
import { MiB, round } from '../../lib/util/units.js'
import { formatDecimalBytes, formatMiB } from '../../lib/util/units.js'
import { linesBy } from '../results.js'

const PIPE_SOURCE = 'Node.js docs, readable.pipe(): when the Readable errors, "the Writable destination is not closed automatically" ' +
  'and "it will be necessary to manually close each stream in order to prevent memory leaks"'
const PIPELINE_SOURCE = 'Node.js docs, stream.pipeline(): pipes "forwarding errors and properly cleaning up", ' +
  'destroying the streams when one fails'

/** What the docs say each way leaves per aborted upload, matched against each route's largest cell. */
const PUBLISHED = Object.freeze([
  Object.freeze({ label: 'pipe(): descriptors left open per aborted upload (the destination is not closed)', value: 1, unit: 'per upload',
    source: PIPE_SOURCE, route: 'pipe' }),
  Object.freeze({ label: 'pipeline(): descriptors left open per aborted upload (both streams destroyed)', value: 0, unit: 'per upload',
    source: PIPELINE_SOURCE, route: 'pipeline' })
])

/** How each route is named in tables, charts and verdicts. */
export const ROUTE_LABELS = Object.freeze({ pipe: 'req.pipe(file)', pipeline: 'pipeline(req, file)' })

/**
 * One cell's figures from GET /abort-upload's answers `before`, `right` (every upload settled), `later` (after a GC and
 * the wait) and `after` (the clean-up, whose DELETE answered `cleaned`); memory after a GC, before and after the wait.
 */
export function summariseCell ({ route, uploads, results, before, right, later, cleaned, after, memoryBefore, memoryLater, server }) {
  return {
    route,
    uploads,
    aborted: results.filter(function wasAborted (r) { return r.aborted }).length,
    fdsLeft: right.fds.open - before.fds.open,
    fdsLeftLater: later.fds.open - before.fds.open,
    // of those, descriptors whose stream the GC has collected: nothing in the process can close them any more
    fdsOrphaned: later.orphaned - before.orphaned,
    filesLeft: later.byRoute[route].files - before.byRoute[route].files,
    leftBytes: later.byRoute[route].bytes - before.byRoute[route].bytes,
    heapGrowthBytes: memoryLater.heapUsed - memoryBefore.heapUsed,
    rssGrowthBytes: memoryLater.rss - memoryBefore.rss,
    fdsClosedByCleanUp: cleaned.closed,
    cleanedUp: after.fds.open <= before.fds.open && after.byRoute[route].files <= before.byRoute[route].files,
    fdSource: right.fds.source,
    server
  }
}

/** Each route's cell with the most uploads. */
export function largestCells (cells) {
  const out = []
  for (const route of ['pipe', 'pipeline']) {
    const mine = cells.filter(function ofRoute (c) { return c.route === route })
    if (mine.length) out.push(mine.reduce(function larger (a, b) { return b.uploads > a.uploads ? b : a }))
  }
  return out
}

/** Descriptors, bytes on disk and heap growth against the number of aborted uploads. */
export function abortUploadCharts (cells) {
  function series (y) {
    return linesBy(cells, 'route', Object.entries(ROUTE_LABELS), function uploads (c) { return c.uploads }, y)
  }
  return [
    {
      title: 'File descriptors still open after a GC and a wait, vs aborted uploads',
      file: 'abort-upload-fds',
      x: 'aborted uploads',
      y: 'open descriptors',
      series: series(function fds (c) { return c.fdsLeftLater })
    },
    {
      title: 'Half-written bytes left on disk vs aborted uploads',
      file: 'abort-upload-bytes',
      x: 'aborted uploads',
      y: 'MB',
      series: series(function megabytes (c) { return round(c.leftBytes / 1e6, 100) })
    },
    {
      title: 'Heap growth after a GC vs aborted uploads',
      file: 'abort-upload-heap',
      x: 'aborted uploads',
      y: 'MiB',
      series: series(function heapMiB (c) { return round(c.heapGrowthBytes / MiB, 100) })
    }
  ]
}

/** The docs' figures, each with the measured one beside it (null when that route was not run). */
export function publishedBeside (cells) {
  const largest = largestCells(cells)
  return PUBLISHED.map(function withMeasured (pub) {
    const cell = largest.find(function same (c) { return c.route === pub.route })
    const measured = cell ? round(cell.fdsLeftLater / cell.uploads, 100) : null
    return { label: pub.label, value: pub.value, unit: pub.unit, source: pub.source, measured }
  })
}

/** Per route, its largest cell in a sentence: 'leaks' when descriptors or files outlived the wait (`ok`: nothing left). */
export function abortUploadVerdicts (cells) {
  return largestCells(cells).map(function judge (c) {
    const leaks = c.fdsLeftLater > 0 || c.filesLeft > 0
    const what = leaks
      ? `left ${c.fdsLeft} descriptors open (${c.fdsLeftLater} after a GC and the wait), ` +
        `${c.filesLeft} files and ${formatDecimalBytes(c.leftBytes)} on disk`
      : `left no descriptor and no file (${c.fdsLeft} descriptors right after, ${c.fdsLeftLater} after the wait)`
    return {
      route: c.route,
      uploads: c.uploads,
      verdict: leaks ? 'leaks' : 'clean',
      ok: !leaks,
      text: `${ROUTE_LABELS[c.route]}: ${c.aborted} of ${c.uploads} uploads aborted mid-body ${what}; ` +
        `heap ${signedMiB(c.heapGrowthBytes)} after a GC`
    }
  })
}

/** What each upload did, after "each upload announced". */
export function announcedThenAborted (input) {
  return `${formatDecimalBytes(input.bytes)} and was aborted after ${formatDecimalBytes(input.abortAtBytes)} (${input.abortAt} %)`
}

/** A growth in MiB with its sign: "+1.2 MiB", "-0.3 MiB". */
export function signedMiB (bytes) {
  if (!Number.isFinite(bytes)) return 'n/a'
  return `${bytes >= 0 ? '+' : '-'}${formatMiB(Math.abs(bytes))}`
}
