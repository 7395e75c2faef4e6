/** The abort-upload experiment's lesson screenshot and classroom demo step, from the run's own result (experiments/README.md#figures). */
import { formatDecimalBytes, formatMiB } from '../../lib/util/units.js'
import { ROUTE_LABELS, announcedThenAborted, largestCells, signedMiB } from './result.js'

/** The lines that caption the picture (and end the demo's step), from a run as GET /experiments/:id gives it. */
function abortUploadFigures ({ result }) {
  const { input } = result
  const lines = [`each upload announced ${announcedThenAborted(input)}; ` +
    `descriptors from ${result.cells[0]?.fdSource ?? 'n/a'}; memory after ${result.gc ? 'a forced GC' : 'a wait (no GC)'}`]
  for (const c of result.cells) {
    lines.push(`${ROUTE_LABELS[c.route]}, ${c.uploads} aborted: ${c.fdsLeft} descriptors open, ${c.fdsLeftLater} after the wait ` +
      `(${c.fdsOrphaned} of them with their stream collected); ${c.filesLeft} files, ${formatDecimalBytes(c.leftBytes)} left; ` +
      `heap ${signedMiB(c.heapGrowthBytes)}, RSS ${signedMiB(c.rssGrowthBytes)}; ` +
      `server peak above idle ${formatMiB(c.server?.peakAboveIdle)}; clean-up closed ${c.fdsClosedByCleanUp}, clean after: ${c.cleanedUp}`)
  }
  for (const v of result.verdicts ?? []) lines.push(`verdict: ${v.verdict}: ${v.text}`)
  return lines
}

/** The lesson picture: the sweep on each route, run from the dashboard's panel; thirteen columns a cell want a wide page. */
export const screenshot = Object.freeze({
  name: 'abort-upload',
  flags: Object.freeze([]),
  params: Object.freeze({ route: 'both', uploads: 100, sweep: 'steps', bytes: '1MB', abortAt: 50, waitSeconds: 3 }),
  viewport: Object.freeze({ width: 2000, height: 900 }),
  timeoutMs: 5 * 60_000,
  figures: abortUploadFigures
})

/** The demo's step: what it sends, says, shows while it runs and after. */
export const demo = Object.freeze({
  title: 'pipe() vs pipeline() when the client hangs up',
  plans: Object.freeze({
    full: Object.freeze({ route: 'both', uploads: 100, sweep: 'steps', bytes: '1MB', abortAt: 50, waitSeconds: 3 }),
    quick: Object.freeze({ route: 'both', uploads: 10, sweep: 'single', bytes: '100KB', abortAt: 50, waitSeconds: 0 })
  }),
  intro: function demoIntro (params) {
    return [
      `${params.uploads} uploads to each route, every client hanging up halfway through its body.`,
      'POST /abort-upload/pipe saves with req.pipe(fs.createWriteStream(file)), as most tutorials do;',
      'POST /abort-upload/pipeline with await pipeline(req, fs.createWriteStream(file)).',
      'Then the server counts its open file descriptors, the files left and its memory, waits, and counts again.'
    ]
  },
  question: 'when a client hangs up mid-upload, what does each route leave behind, and does a garbage collection give it back?',
  progress: function demoProgress (state) {
    const p = state.progress ?? {}
    if (p.stage === 'warm-up') return `warming up ${p.route ? `/${p.route}` : ''}`
    if (!p.route) return 'getting ready (the folder is cleaned first)'
    return `/${p.route}: ${p.cell ?? p.stage}`
  },
  rows: function demoRows (result) {
    return result.cells.map(function row (c) {
      const fds = `${c.fdsLeft} (${c.fdsLeftLater})`
      return [ROUTE_LABELS[c.route], c.uploads, fds, c.filesLeft, formatDecimalBytes(c.leftBytes), signedMiB(c.heapGrowthBytes)]
    })
  },
  header: Object.freeze(['route', 'aborted', 'fds open (after GC + wait)', 'files left', 'bytes left', 'heap after GC']),
  /** One line for the demo's closing list of what was measured. */
  summary: function demoSummary (result) {
    return largestCells(result.cells).map(function line (c) {
      const left = `${c.fdsLeftLater} descriptors open and ${formatDecimalBytes(c.leftBytes)} on disk`
      return `${ROUTE_LABELS[c.route]}: ${c.uploads} aborted uploads left ${left}`
    }).join('; ')
  }
})
