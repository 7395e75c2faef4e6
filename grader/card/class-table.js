/**
 * The class table as files: CSV (RFC 4180, a text field that a spreadsheet
 * would run as a formula kept as text) and an HTML page of its own beside
 * it, written again after each submission.
 */
import fs from 'node:fs'
import path from 'node:path'
import { AREAS } from '../checks/index.js'
import { COLUMNS } from './class-rows.js'

/** The HTML file beside a CSV file: class.csv -> class.html. */
export function htmlBeside (csv) {
  const ext = path.extname(csv)
  return (ext === '' ? csv : csv.slice(0, -ext.length)) + '.html'
}

/**
 * Write the table's CSV and HTML files.
 * @param {{ folder: string, seed: number, preset: string, startedAt: string, labVersion: string,
 *   command: string|null, rows: object[] }} table
 * @param {string} csv
 * @param {string} html
 */
export async function writeTable (table, csv, html) {
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
function classCsv (rows) {
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
 * The table as a page of its own (no script, no outside style): a caption
 * with the folder, seed, preset, date and lab version, then a row per
 * submission, pass and fail marked in words and colour.
 */
function classHtml (table) {
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
