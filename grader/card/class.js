/**
 * A class in one table: every submission in a folder graded in turn, each
 * as `npm run grade -- FILE` grades one (a lab process of its own, started
 * and stopped by the grader), one row each in a CSV file and in an HTML
 * table beside it.
 *
 * A submission is a `.js` file in the folder, or a folder in it with an
 * `index.js`. Every submission meets the same bodies: the class run draws
 * one seed (or takes --seed) and generates its documents once, into a
 * folder of the run's own that it removes at the end. The table is written
 * again after each submission, so a run cut short keeps the rows it had.
 */
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { DEFAULTS } from '../lib/config/options.js'
import { AREAS, grade } from './index.js'
import { areaVerdicts } from './card.js'
import { newSeed, normalizeSeed } from './settings.js'
import { labVersion, submissionDigest } from './submission.js'

/**
 * The table's columns, in order. `*_slope` and `speed_*` are the key
 * figures of the memory and speed checks (empty when the check did not give
 * one); `failed_checks` names the checks that failed, `;` between them.
 */
export const COLUMNS = Object.freeze([
  'name', 'verdict', ...AREAS, 'checks_passed', 'checks_total',
  'memory_size_slope_MiB_per_100MB', 'memory_concurrency_slope_MiB_per_upload', 'speed_MBps', 'speed_ratio',
  'failed_checks', 'seed', 'duration_s', 'sha256', 'submission', 'report', 'error'
])

/**
 * The submissions in a folder, in name order.
 * @param {string} folder
 * @returns {Promise<Array<{ name: string, path: string, handler: string }>>} `path` the file or folder,
 *   `handler` the module graded (the folder's index.js)
 */
export async function findSubmissions (folder) {
  const entries = await fs.promises.readdir(folder, { withFileTypes: true })
  const found = []
  for (const entry of entries) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue
    const full = path.join(folder, entry.name)
    if (entry.isFile() && entry.name.endsWith('.js')) {
      found.push({ name: entry.name.slice(0, -'.js'.length), path: full, handler: full })
    } else if (entry.isDirectory() && fs.existsSync(path.join(full, 'index.js'))) {
      found.push({ name: entry.name, path: full, handler: path.join(full, 'index.js') })
    }
  }
  return found.sort(function byName (a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0 })
}

/**
 * Grade every submission in `folder`, one at a time, and write the table.
 * @param {string} folder
 * @param {{ csv: string, html?: string, preset?: string, settings?: object, areas?: string[], seed?: number,
 *   reportDir?: string, command?: string, onProgress?: (event: object) => void,
 *   writeReport?: (dir: string, card: object) => Promise<string[]> }} options
 *   `csv`: the table's file; `html`: beside it by default (class.csv -> class.html); `reportDir`: where each
 *   submission's report goes (a folder per submission, written by `writeReport`); `onProgress` gets
 *   { type: 'submission', index, total, name, etaMs } before each, { type: 'graded', index, total, row }
 *   after, and each grading's own events with `submission` added
 * @returns {Promise<{ seed: number, rows: object[], csv: string, html: string }>}
 */
export async function gradeClass (folder, options) {
  const submissions = await findSubmissions(folder)
  if (submissions.length === 0) throw new TypeError(`no submissions in ${folder}: a submission is a .js file, or a folder with an index.js`)
  const seed = options.seed === undefined || options.seed === null ? newSeed() : normalizeSeed(options.seed)
  const csv = options.csv
  const html = options.html ?? htmlBeside(csv)
  const onProgress = options.onProgress ?? function quiet () {}
  const table = {
    folder,
    seed,
    preset: options.preset ?? 'full',
    startedAt: new Date().toISOString(),
    labVersion: await labVersion(),
    command: options.command ?? null,
    rows: []
  }
  const inputDir = path.join(DEFAULTS.dataDir, 'grade', 'inputs', `class-${randomUUID()}`)
  const started = Date.now()
  try {
    for (const [index, submission] of submissions.entries()) {
      const graded = table.rows.length
      const etaMs = graded === 0 ? null : Math.round((Date.now() - started) / graded * (submissions.length - graded))
      onProgress({ type: 'submission', index, total: submissions.length, name: submission.name, etaMs })
      const row = await gradeOne(submission, { ...options, seed, inputDir, onProgress })
      table.rows.push(row)
      await writeTable(table, csv, html)
      onProgress({ type: 'graded', index, total: submissions.length, row })
    }
  } finally {
    await fs.promises.rm(inputDir, { recursive: true, force: true })
  }
  return { seed, rows: table.rows, csv, html }
}

/** The HTML file beside a CSV file: class.csv -> class.html. */
export function htmlBeside (csv) {
  const ext = path.extname(csv)
  return (ext === '' ? csv : csv.slice(0, -ext.length)) + '.html'
}

/**
 * One submission graded, as a row. A grading that throws (the grader's own
 * failure, not the handler's) is a row too, with verdict `error` and the message.
 */
async function gradeOne (submission, options) {
  const started = Date.now()
  const digest = await submissionDigest(submission.path).catch(function unreadable () { return null })
  try {
    const card = await grade(submission.handler, {
      preset: options.preset,
      settings: options.settings,
      areas: options.areas,
      seed: options.seed,
      inputDir: options.inputDir,
      onProgress: function forward (event) { options.onProgress({ ...event, submission: submission.name }) }
    })
    const row = rowOf(submission, card, digest)
    if (options.reportDir && options.writeReport) {
      row.report = path.join(options.reportDir, safeName(submission.name))
      await options.writeReport(row.report, card)
    }
    return row
  } catch (err) {
    return {
      ...emptyRow(submission, digest, options.seed),
      verdict: 'error',
      duration_s: seconds(Date.now() - started),
      error: `the grader failed: ${err.message}`
    }
  }
}

/**
 * A card as a row of the table.
 * @param {{ name: string, path: string }} submission
 * @param {import('./index.js').Card} card
 * @param {string|null} digest the submission's (submissionDigest)
 */
export function rowOf (submission, card, digest) {
  const row = emptyRow(submission, digest, card.seed)
  const verdicts = areaVerdicts(card)
  row.verdict = card.passed ? 'pass' : 'fail'
  for (const area of AREAS) row[area] = area in verdicts ? (verdicts[area] ? 'pass' : 'fail') : 'not run'
  row.checks_passed = card.checks.filter(function passed (c) { return c.pass }).length
  row.checks_total = card.checks.length
  const bySize = findCheck(card, 'memory', 'growth against body size')
  const byConcurrency = findCheck(card, 'memory', 'growth against concurrency')
  const speed = card.checks.find(function speedCheck (c) { return c.area === 'speed' })
  row.memory_size_slope_MiB_per_100MB = figureOf(bySize?.details?.slope)
  row.memory_concurrency_slope_MiB_per_upload = figureOf(byConcurrency?.details?.slope)
  row.speed_MBps = figureOf(speed?.details?.studentMBps)
  row.speed_ratio = figureOf(speed?.details?.ratio)
  row.failed_checks = card.checks.filter(function failed (c) { return !c.pass }).map(function named (c) { return `${c.area}: ${c.name}` }).join('; ')
  row.duration_s = seconds(card.ms)
  row.error = card.loadError ?? ''
  return row
}

function emptyRow (submission, digest, seed) {
  const row = Object.fromEntries(COLUMNS.map(function blank (column) { return [column, ''] }))
  row.name = submission.name
  row.submission = submission.path
  row.sha256 = digest ?? ''
  row.seed = seed
  for (const area of AREAS) row[area] = 'not run'
  return row
}

function findCheck (card, area, name) {
  return card.checks.find(function named (c) { return c.area === area && c.name === name })
}

function figureOf (value) {
  return typeof value === 'number' && Number.isFinite(value) ? value : ''
}

function seconds (ms) {
  return Math.round(ms / 100) / 10
}

/** A submission's name as a folder name for its report. */
function safeName (name) {
  return name.replace(/[^\w.-]+/g, '_')
}

async function writeTable (table, csv, html) {
  for (const file of [csv, html]) await fs.promises.mkdir(path.dirname(path.resolve(file)), { recursive: true })
  await fs.promises.writeFile(csv, classCsv(table.rows))
  await fs.promises.writeFile(html, classHtml(table))
}

/**
 * The rows as CSV (RFC 4180: a header line, fields with a comma, a quote or
 * a line break quoted, quotes doubled, CRLF between records). A text field
 * that begins with =, +, - or @ gets a leading ' so that a spreadsheet
 * shows it rather than running it as a formula: a file name is the
 * student's choice.
 * @param {object[]} rows
 * @returns {string}
 */
export function classCsv (rows) {
  const lines = [COLUMNS.join(',')]
  for (const row of rows) lines.push(COLUMNS.map(function cell (column) { return csvField(row[column]) }).join(','))
  return lines.join('\r\n') + '\r\n'
}

function csvField (value) {
  if (typeof value === 'number') return String(value)
  let text = String(value ?? '')
  if (/^[=+\-@]/.test(text)) text = `'${text}`
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}

/**
 * Split CSV text into rows of fields (the inverse of classCsv, for the
 * spec and for scripts that read the table back).
 * @param {string} text
 * @returns {string[][]}
 */
export function parseCsv (text) {
  const rows = []
  let row = []
  let field = ''
  let quoted = false
  for (let k = 0; k < text.length; k++) {
    const c = text[k]
    if (quoted) {
      if (c === '"' && text[k + 1] === '"') {
        field += '"'
        k++
      } else if (c === '"') {
        quoted = false
      } else {
        field += c
      }
    } else if (c === '"') {
      quoted = true
    } else if (c === ',') {
      row.push(field)
      field = ''
    } else if (c === '\r' && text[k + 1] === '\n') {
      row.push(field)
      rows.push(row)
      row = []
      field = ''
      k++
    } else {
      field += c
    }
  }
  if (field !== '' || row.length > 0) {
    row.push(field)
    rows.push(row)
  }
  return rows
}

/**
 * The table as a page of its own (no script, no outside style): a caption
 * with the folder, seed, preset, date and lab version, then a row per
 * submission, pass and fail marked in words and colour.
 */
export function classHtml (table) {
  const head = COLUMNS.map(function th (column) { return `<th scope="col">${escapeHtml(column)}</th>` }).join('')
  const body = table.rows.map(function tr (row) {
    const cells = COLUMNS.map(function td (column) {
      const value = row[column]
      const mark = ['pass', 'fail', 'error', 'not run'].includes(value) && (column === 'verdict' || AREAS.includes(column))
        ? ` class="${value.replace(' ', '-')}"`
        : ''
      return column === 'name' ? `<th scope="row">${escapeHtml(value)}</th>` : `<td${mark}>${escapeHtml(value)}</td>`
    })
    return `<tr>${cells.join('')}</tr>`
  }).join('\n')
  const passed = table.rows.filter(function passed (r) { return r.verdict === 'pass' }).length
  const about = [
    `${table.rows.length} submission${table.rows.length === 1 ? '' : 's'} graded, ${passed} passed`,
    `folder ${table.folder}`,
    `seed ${table.seed}`,
    `preset ${table.preset}`,
    `started ${table.startedAt}`,
    `lab ${table.labVersion}`
  ].join(' · ')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Grades: ${escapeHtml(table.folder)}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; }
table { border-collapse: collapse; }
th, td { border: 1px solid #999; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
thead th { background: #eee; }
td.pass { background: #d9f2d9; }
td.fail, td.error { background: #f9d6d5; font-weight: bold; }
td.not-run { color: #666; }
caption { text-align: left; margin-bottom: 0.5rem; }
</style>
</head>
<body>
<table>
<caption>${escapeHtml(about)}${table.command ? `<br><code>${escapeHtml(table.command)}</code>` : ''}</caption>
<thead><tr>${head}</tr></thead>
<tbody>
${body}
</tbody>
</table>
</body>
</html>
`
}

function escapeHtml (value) {
  return String(value ?? '').replace(/[&<>"']/g, function entity (c) {
    return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]
  })
}
