/** The class table as CSV and HTML, rewritten after each submission, every field escaped, mode 0600 (the grader's alone). */
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { AREAS } from '../checks/index.js'
import { COLUMNS, countVerdicts, VERDICTS } from './class-rows.js'
import { csvField, htmlText } from '../../lib/util/escape.js'

/** The mode of what a class run writes: the grader's user reads it, no other. */
export const PRIVATE_FILE_MODE = 0o600
export const PRIVATE_FOLDER_MODE = 0o700

/** The HTML file beside a CSV file: class.csv -> class.html. */
export function htmlBeside (csv) {
  const ext = path.extname(csv)
  return (ext === '' ? csv : csv.slice(0, -ext.length)) + '.html'
}

export async function writeTable (table, csv, html) {
  await writePrivate(csv, classCsv(table.rows))
  await writePrivate(html, classHtml(table))
}

/** Write `file` for the grader's user only: a new 0600 file renamed over it (a link replaced, never followed). */
export async function writePrivate (file, text) {
  await fs.promises.mkdir(path.dirname(path.resolve(file)), { recursive: true, mode: PRIVATE_FOLDER_MODE })
  const temporary = `${file}.${randomUUID().slice(0, 8)}.tmp`
  try {
    // 'wx': a name someone else made in between is an error, never written through
    await fs.promises.writeFile(temporary, text, { mode: PRIVATE_FILE_MODE, flag: 'wx' })
    await fs.promises.rename(temporary, file)
  } catch (err) {
    await fs.promises.rm(temporary, { force: true })
    throw err
  }
}

/** The rows as CSV (RFC 4180, CRLF), each field through csvField: no raw line break, bidi mark or formula. */
function classCsv (rows) {
  const lines = [COLUMNS.join(',')]
  for (const row of rows) lines.push(COLUMNS.map(function cell (column) { return csvField(row[column]) }).join(','))
  return lines.join('\r\n') + '\r\n'
}

/** The table as a page of its own (no script or outside style): a caption, then a row per submission. */
function classHtml (table) {
  const head = COLUMNS.map(function th (column) { return `<th scope="col">${htmlText(column)}</th>` }).join('')
  const body = table.rows.map(function tr (row) {
    const cells = COLUMNS.map(function td (column) {
      const value = row[column]
      const mark = [...VERDICTS, 'not run'].includes(value) && (column === 'verdict' || AREAS.includes(column))
        ? ` class="${value.replace(' ', '-')}"`
        : ''
      return column === 'name' ? `<th scope="row">${htmlText(value)}</th>` : `<td${mark}>${htmlText(value)}</td>`
    })
    return `<tr>${cells.join('')}</tr>`
  }).join('\n')
  // a skipped entry is no submission: counted in the summary's words, not in the number before it
  const submissions = table.rows.filter(function submitted (row) { return row.verdict !== 'skipped' }).length
  const about = [
    `${submissions} submission${submissions === 1 ? '' : 's'}: ${verdictSummary(table.rows)}`,
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
<title>Grades: ${htmlText(table.folder)}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; }
table { border-collapse: collapse; }
th, td { border: 1px solid #999; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
thead th { background: #eee; }
td.pass { background: #d9f2d9; }
td.fail, td.error { background: #f9d6d5; font-weight: bold; }
td.refused { background: #fbe5c8; font-weight: bold; }
td.not-run, td.skipped { color: #666; }
caption { text-align: left; margin-bottom: 0.5rem; }
</style>
</head>
<body>
<table>
<caption>${htmlText(about)}${table.command ? `<br><code>${htmlText(table.command)}</code>` : ''}</caption>
<thead><tr>${head}</tr></thead>
<tbody>
${body}
</tbody>
</table>
</body>
</html>
`
}

/** "2 passed, 1 failed, 1 refused, 1 the grader failed on, 1 skipped (not a submission)": absent verdicts left out but "0 passed". */
export function verdictSummary (rows) {
  const counts = countVerdicts(rows)
  const words = { pass: 'passed', fail: 'failed', refused: 'refused', error: 'the grader failed on', skipped: 'skipped (not a submission)' }
  return VERDICTS.filter(function shown (verdict) { return verdict === 'pass' || counts[verdict] > 0 })
    .map(function said (verdict) { return `${counts[verdict]} ${words[verdict]}` }).join(', ')
}
