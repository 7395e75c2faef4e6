/** The db-export experiment's lesson screenshot, from the run's own result (experiments/README.md#figures). */
import { formatMiB, formatMs } from '../../lib/util/units.js'
import { count, publishedFigures } from '../../lib/measure/figure-lines.js'
import { warmUpDatabase } from './measure.js'

export const screenshot = Object.freeze({
  name: 'db-export',
  flags: [],
  // one big batch builds its whole JSON array in the server; the stream holds one cursor read
  params: { mode: 'both', rows: 100_000, batchSizes: '100000,25000,10000,5000', highWaterMarks: '500,100000', sleepMs: 0, repeat: 1 },
  // fourteen columns, memory in bytes
  viewport: { width: 2000, height: 900 },
  timeoutMs: 10 * 60_000,
  prepare: prepareDatabase,
  figures: dbExportFigures
})

function dbExportFigures ({ result }) {
  const seed = result.database?.seed
  const lines = [`database: ${result.database?.kind}${seed ? `, ${count(seed.desks)} desks, ${count(seed.items)} items seeded` : ''}`]
  for (const c of result.cells) {
    const what = c.mode === 'batch' ? `batch of ${count(c.batch)}` : `stream, highWaterMark ${count(c.highWaterMark)}`
    lines.push(`${what}: ${count(c.rows)} rows in ${count(c.requests)} request(s); ` +
      `total ${formatMs(c.totalMs)}, first row ${formatMs(c.firstRowMs)}; ` +
      `server peak above idle ${formatMiB(c.serverPeakAboveIdle)}, database process ${formatMiB(c.databasePeakAboveIdle)}`)
  }
  return [...lines, ...publishedFigures(result.published)]
}

/** A started (and seeded) database before the page opens: the picture is the export, not the database starting. */
async function prepareDatabase (url, params, note) {
  note('starting the embedded database (its first use seeds it, which takes a while)')
  const status = await warmUpDatabase(url)
  const items = status.seed?.items ?? 0
  if (items < params.rows) {
    throw new Error(`the database holds ${items} items, fewer than the ${params.rows} rows to export: run npm run db:seed`)
  }
  note(`database ${status.kind} ready: ${count(status.seed.desks)} desks, ${count(items)} items`)
}
