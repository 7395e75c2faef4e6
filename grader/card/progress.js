/** What `npm run grade` prints as it works, and a class's rows: each line through terminalText. */
import { terminalText } from '../../lib/util/escape.js'

export function progressPrinter (stream) {
  return function report (event) {
    const line = progressLine(event)
    if (line !== null) stream.write(terminalText(line) + '\n')
  }
}

function progressLine (event) {
  const indent = event.submission === undefined ? '' : '  '
  if (event.type === 'lab' && event.kind === 'service') return `lab at ${event.url}/ (the dashboard); the service ` +
    `answers, its first check under way`
  if (event.type === 'lab') return `${indent}lab at ${event.url}/ (the dashboard), the handler at POST /student (${event.kind})`
  if (event.type === 'check') return `${indent}[${event.done + 1}/${event.total}] ${event.area}: ${event.check}`
  if (event.type === 'keep-open') return `the lab stays up ${event.ms / 1000} s: ${event.url}/`
  if (event.type === 'submission') return `[submission ${event.index + 1}/${event.total}] ${event.name}: ` +
    `grading${event.etaMs === null ? ' (the time left is estimated after the first)' : `, about ${formatMinutes(event.etaMs)} left`}`
  if (event.type === 'graded') return `  ${event.row.name}: ${rowSummary(event.row)} in ${event.row.duration_s} s`
  return null
}

/** "PASS 18/18", or "REFUSED: not graded: index.js is a symbolic link, …" (the first line of the reason). */
function rowSummary (row) {
  const verdict = row.verdict.toUpperCase()
  if (row.verdict === 'refused' || row.verdict === 'error' || row.verdict === 'skipped') return `${verdict}: ${row.error.split('\n')[0]}`
  return `${verdict} ${row.checks_passed}/${row.checks_total}`
}

/** 200000 -> "3 min 20 s" */
function formatMinutes (ms) {
  const s = Math.round(ms / 1000)
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`
}

/** A class's rows as terminal lines after `head`: verdict, name, checks passed, a reason's first line. */
export function classLines (head, rows) {
  const lines = [head]
  for (const row of rows) {
    const graded = row.verdict === 'pass' || row.verdict === 'fail' ? `  ${row.checks_passed}/${row.checks_total}` : ''
    lines.push(`${row.verdict.toUpperCase().padEnd(7)}  ${row.name}${graded}${row.error ? `  ${row.error.split('\n')[0]}` : ''}`)
  }
  return lines.map(terminalText).join('\n')
}
