/**
 * The db-export experiment: the desks x items join from this server as LIMIT/OFFSET batches (GET /db/batch) and as a
 * cursor stream (GET /db/stream), one export after another in the watched server: compare "peak above idle", as a
 * big batch leaves heap behind for the next export.
 */
import { badParameter } from '../../lib/errors/index.js'
import {
  describeCell, exportCharts, measureCell, measureRounds, planCells, publishedBeside, requestsOf, warmUpDatabase
} from './measure.js'
import { choiceEntry, deepFreeze, integerEntry, listEntry, normalizeBySchema } from '../../lib/experiments/params.js'

export const name = 'db-export'
export const title = 'Database export: batch vs stream'
export const description = 'Exports the same rows of a desks x items join from PostgreSQL (the embedded PGlite, ' +
  'or the server in database.url) as LIMIT/OFFSET batches, each answer a whole JSON array, and as one ' +
  'cursor stream read highWaterMark rows at a time, timed by a separate client process that fetches and ' +
  'parses like a page. Reports total time, time to first row, requests and peak memory. The article found ' +
  'batch faster with a few big batches and the stream faster from 10 batches on.'

const MODES = Object.freeze(['both', 'batch', 'stream'])
const MAX_ROWS = 10_000_000
const MAX_REQUESTS = 20_000
const MAX_LIST = 12

export const params = deepFreeze([
  choiceEntry('mode', {
    values: MODES,
    valueLabels: { both: 'Both: batches, then streams', batch: 'Batches (LIMIT/OFFSET)', stream: 'Stream (cursor)' },
    label: 'Mode',
    help: 'Batch: one request per batch, each answer built whole in memory. Stream: one request, rows sent as the cursor reads them.'
  }),
  integerEntry('rows', {
    default: 100_000,
    max: MAX_ROWS,
    label: 'Rows to export',
    help: 'Items exported, each joined to its desk. At most the seeded items (GET /db/status; npm run db:seed -- --items N for more).'
  }),
  listEntry('batchSizes', {
    // 1, 4, 10 and 20 requests: around the article's crossover, and quick (each LIMIT/OFFSET query rescans)
    default: '100000,25000,10000,5000',
    label: 'Batch sizes (rows per request)',
    help: 'Comma-separated. Each size is one export of all the rows in rows / size requests, one after another.'
  }),
  listEntry('highWaterMarks', {
    default: '500,100000',
    label: 'Stream highWaterMark, one or more (rows per cursor read)',
    help: 'Comma-separated. The article used 500, then 5,000,000: a larger one needs fewer round trips to the database.'
  }),
  integerEntry('sleepMs', {
    default: 0,
    min: 0,
    max: 10_000,
    label: 'Slow query (ms of pg_sleep per request)',
    help: 'A fixed cost every request pays, as a slow query would: many small batches pay it many times, the stream once.'
  }),
  integerEntry('repeat', { default: 1, max: 5, label: 'Repeats', help: 'Measurements of each export; medians reported.' })
])

/** @throws {LabError} 400 parameter.invalid naming the field */
export function normalizeParams (raw) {
  const p = normalizeBySchema(params, raw)
  const out = {
    mode: p.mode,
    rows: p.rows,
    batchSizes: integerList('batchSizes', p.batchSizes, p.rows),
    highWaterMarks: integerList('highWaterMarks', p.highWaterMarks, MAX_ROWS),
    sleepMs: p.sleepMs,
    repeat: p.repeat
  }
  const requests = planCells(plan(out)).reduce(function add (sum, cell) { return sum + requestsOf(cell) }, 0) * out.repeat
  if (requests > MAX_REQUESTS) {
    throw badParameter('params.batchSizes', raw?.batchSizes ?? p.batchSizes,
      `batch sizes that make at most ${MAX_REQUESTS} requests in all (these make ${requests})`)
  }
  return deepFreeze(out)
}

/** "100000, 1000" or [100000, 1000] -> [100000, 1000]: integers from 1 to max, at most MAX_LIST of them. */
function integerList (key, value, max) {
  const allowed = `a comma-separated list of 1 to ${MAX_LIST} integers from 1 to ${max}`
  const parts = Array.isArray(value) ? value.map(String) : typeof value === 'string' ? value.split(',') : [String(value)]
  const trimmed = parts.map(function trim (p) { return p.trim() }).filter(Boolean)
  if (trimmed.length === 0 || trimmed.length > MAX_LIST) throw badParameter(`params.${key}`, value, allowed)
  return trimmed.map(function parse (text) {
    if (!/^\d{1,9}$/.test(text) || Number(text) < 1 || Number(text) > max) throw badParameter(`params.${key}`, value, allowed)
    return Number(text)
  })
}

function plan (p) {
  return {
    modes: p.mode === 'both' ? ['batch', 'stream'] : [p.mode],
    rows: p.rows,
    batchSizes: p.batchSizes,
    highWaterMarks: p.highWaterMarks,
    sleep: p.sleepMs / 1000
  }
}

/** Start (and if need be seed) the database with a warm-up, then each export in turn in its own measurement window. */
export async function run (ctx) {
  const { params: p, signal, baseUrl } = ctx
  const cells = planCells(plan(p))
  const total = cells.length * p.repeat
  ctx.progress({ done: 0, total, stage: 'database' })
  const status = await warmUpDatabase(baseUrl, signal)
  const seeded = status.seed?.items ?? 0
  if (p.rows > seeded) {
    throw badParameter('params.rows', p.rows, `at most ${seeded}, the items seeded (npm run db:seed -- --items N seeds more)`)
  }
  const dbPid = status.embedded?.pid ?? null
  const summaries = await measureRounds(cells, p.repeat, function exportOnce (cell, round, done) {
    signal.throwIfAborted()
    ctx.progress({ done, total, stage: 'export', cell: describeCell(cell) })
    return measureCell({ baseUrl, cell, measureServer: ctx.measure, dbPid, signal, onSpawn: ctx.trackProcess })
  })
  ctx.progress({ done: total, total, stage: 'done' })
  return {
    database: { kind: status.kind, target: status.target, seed: status.seed },
    cells: summaries,
    charts: exportCharts(summaries),
    published: publishedBeside(summaries, status.seed)
  }
}
