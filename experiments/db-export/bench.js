/** `npm run bench -- db-export`: batch sizes x highWaterMarks, each measurement on a fresh server (and embedded database). */
import {
  describeCell, exportCharts, exportTable, measureCell, measureRounds, planCells, procWindow, publishedBeside, startDbLab, warmUpDatabase
} from './measure.js'
import { publishedTable } from '../../lib/measure/published.js'
import { list, positiveInteger } from '../../lib/measure/args.js'
import { schemaChoices } from '../../lib/experiments/schema-options.js'
import * as experiment from './index.js'

const MODES = schemaChoices(experiment.params, 'mode')

export const name = 'db-export'
export const summary = 'export a desks x items join from PostgreSQL: LIMIT/OFFSET batches vs a cursor stream'
export const usage = `Options (db-export):
  --rows N                rows exported per measurement (default 200000)
  --batch-sizes LIST      rows per batch request (default 200000,50000,20000,10000: 1, 4, 10, 20 requests)
  --high-water-marks LIST rows per cursor read for the stream (default 500,200000)
  --modes LIST            ${MODES.join(',')} (default both)
  --sleep S               seconds of pg_sleep per request, a slow query (default 0)
  --repeat N              measurements per cell, fresh server each; medians reported (default 3)
  --database-url URL      a real PostgreSQL server (default: env DATABASE_URL, else the embedded
                          PGlite in test-data/pglite, seeded on first use with 200k desks, 1M items)`

export const options = Object.freeze({
  rows: { type: 'string', default: '200000' },
  'batch-sizes': { type: 'string', default: '200000,50000,20000,10000' },
  'high-water-marks': { type: 'string', default: '500,200000' },
  modes: { type: 'string', default: MODES.join(',') },
  sleep: { type: 'string', default: '0' },
  repeat: { type: 'string', default: '3' },
  'database-url': { type: 'string' }
})

export function normalize (values) {
  const sleep = Number(values.sleep)
  if (!/^\d+(\.\d+)?$/.test(values.sleep) || sleep > 10) throw new TypeError(`--sleep takes seconds from 0 to 10, got "${values.sleep}"`)
  const url = values['database-url'] ?? process.env.DATABASE_URL ?? null
  if (url !== null && !/^postgres(ql)?:\/\//.test(url)) throw new TypeError('--database-url (or DATABASE_URL) must be a postgres:// URL')
  return {
    rows: positiveInteger('rows')(values.rows),
    batchSizes: list(values['batch-sizes'], positiveInteger('batch-sizes')),
    highWaterMarks: list(values['high-water-marks'], positiveInteger('high-water-marks')),
    modes: list(values.modes, function mode (m) {
      if (!MODES.includes(m)) throw new TypeError(`--modes takes ${MODES.join(' and ')}, got "${m}"`)
      return m
    }),
    sleep,
    repeat: positiveInteger('repeat')(values.repeat),
    databaseUrl: url
  }
}

export async function run (opts, report) {
  const appOptions = { database: { url: opts.databaseUrl } }
  const where = opts.databaseUrl ? 'PostgreSQL at DATABASE_URL' : 'the embedded PGlite'
  report({ type: 'log', line: `starting ${where} (a first run seeds 200,000 desks and 1,000,000 items: under a minute)` })
  const first = await startDbLab(appOptions)
  let status
  try {
    status = await warmUpDatabase(first.url)
  } finally {
    await first.stop()
  }
  if (opts.rows > (status.seed?.items ?? 0)) {
    throw new TypeError(`--rows ${opts.rows} is more than the ${status.seed?.items ?? 0} items seeded: npm run db:seed -- --items N`)
  }
  report({ type: 'log', line: `database: ${status.target}, ${status.seed.desks} desks, ${status.seed.items} items` })
  const cells = planCells(opts)
  const total = cells.length * opts.repeat
  const summaries = await measureRounds(cells, opts.repeat, async function onFreshLab (cell, round, done) {
    report({ type: 'progress', done, total, label: `${describeCell(cell)} run ${round + 1}/${opts.repeat}` })
    const lab = await startDbLab(appOptions)
    try {
      const labStatus = await warmUpDatabase(lab.url)
      const measureServer = function measureLab () { return procWindow(lab.pid) }
      return await measureCell({ baseUrl: lab.url, cell, measureServer, dbPid: labStatus.embedded?.pid ?? null })
    } finally {
      await lab.stop()
    }
  })
  report({ type: 'progress', done: total, total, label: 'done' })
  const published = publishedBeside(summaries, status.seed)
  return {
    title: 'Database export: batch vs stream',
    markdown: `Database: ${status.kind === 'embedded' ? 'embedded PGlite (one connection)' : 'PostgreSQL'}, ` +
      `${status.seed.desks} desks, ${status.seed.items} items; sleep ${opts.sleep} s per request.\n\n` +
      `${exportTable(summaries)}\n${publishedTable(published)}`,
    charts: exportCharts(summaries),
    data: { database: { kind: status.kind, target: status.target, seed: status.seed }, cells: summaries, published }
  }
}
