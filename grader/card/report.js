/** The grading's report as the benches write theirs (lib/measure/report.js), its charts beside the lab's routes. */
import os from 'node:os'
import { INGEST_ROUTES } from '../../lib/ingest/contenders.js'
import { writeReport } from '../../lib/measure/report.js'
import { encodingsLine } from '../checks/encodings.js'
import { REFERENCE_ROUTES } from '../checks/memory.js'
import { formatCard } from './card.js'
import { terminalText } from '../../lib/util/escape.js'

/** Write the report into `dir` (test-data/grade/<timestamp>/); resolves to the files written. */
export function writeGradeReport (dir, card, command) {
  return writeReport(dir, {
    title: `Grade card: ${terminalText(card.handler)}`,
    command,
    meta: {
      experiment: 'grade', started: card.startedAt, seed: card.seed, sha256: card.digest, labVersion: card.labVersion,
      node: process.version, cpus: os.availableParallelism(), options: card.settings
    },
    markdown: markdownCard(card),
    charts: gradeCharts(card),
    data: { card }
  })
}

/** The memory checks' charts: the handler's points and the reference routes' (when measured). */
export function gradeCharts (card) {
  const charts = []
  const bySize = card.checks.find(function sizeCheck (c) { return c.area === 'memory' && c.name === 'growth against body size' })
  const byConcurrency = card.checks.find(function concurrencyCheck (c) {
    return c.area === 'memory' && c.name === 'growth against concurrency'
  })
  if (bySize?.details) {
    charts.push({
      title: 'Peak memory above idle against body size',
      x: 'body size (MB, inflated)',
      y: 'peak above idle (MiB)',
      series: series(bySize.details, gradedLabel(card))
    })
  }
  if (byConcurrency?.details) {
    charts.push({
      title: 'Peak memory above idle against uploads in flight',
      x: 'uploads in flight',
      y: 'peak above idle (MiB)',
      series: series(byConcurrency.details, gradedLabel(card))
    })
  }
  return charts
}

/** What the graded curve is called: the handler at /student, or the service at its URL. */
function gradedLabel (card) {
  return card.service ? `POST ${card.service.url} (the service)` : 'POST /student (your handler)'
}

function series (details, label) {
  const out = [{ label, points: details.points.map(point) }]
  for (const route of REFERENCE_ROUTES) {
    const points = details.reference?.[route] ?? []
    if (points.length > 0) out.push({ label: `POST /${route} (${INGEST_ROUTES[route].label})`, points: points.map(point) })
  }
  return out
}

function point (p) {
  return { x: p.x, y: p.growthMiB }
}

function markdownCard (card) {
  const rows = card.checks.map(function row (c) {
    const why = c.pass ? '' : [c.reason, c.hint].filter(Boolean).join(' — ')
    const cells = [c.pass ? 'pass' : '**FAIL**', c.area, c.name, c.figure, c.limit, why]
    return `| ${cells.map(escapeCell).join(' | ')} |`
  })
  // what the target took, before the safety checks bombed it (grader/checks/encodings.js)
  const encodings = card.encodings ? [`Encodings: ${escapeCell(encodingsLine(card.encodings))}`, ''] : []
  return [
    ...encodings,
    '| | area | check | figure | limit | why, and a hint |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    '```',
    formatCard(card).trimEnd(),
    '```',
    ''
  ].join('\n')
}

/** A table cell of results.md: a pipe escaped, control characters shown (a reason may quote the submission). */
function escapeCell (text) {
  return terminalText(String(text ?? '').replace(/\n/g, ' ')).replace(/\|/g, '\\|')
}
