/**
 * The grading run's report, as the benches write theirs (lib/measure/report.js):
 * results.json (the whole card, figures included), results.md and
 * report.html with the charts: peak growth against body size and against
 * uploads in flight, the handler beside the lab's routes: /good (engineered
 * streaming), /streamparser-json (the textbook streaming route) and /bad
 * (buffered).
 */
import os from 'node:os'
import { INGEST_ROUTES } from '../../lib/ingest/contenders.js'
import { writeReport } from '../../lib/measure/report.js'
import { encodingsLine } from '../checks/encodings.js'
import { REFERENCE_ROUTES } from '../checks/memory.js'
import { formatCard } from './card.js'
import { terminalText } from '../../lib/util/escape.js'

/**
 * @param {string} dir test-data/grade/<timestamp>/
 * @param {import('../run/run-checks.js').Card} card
 * @param {string} command as typed
 * @returns {Promise<string[]>} the files written
 */
export function writeGradeReport (dir, card, command) {
  return writeReport(dir, {
    title: `Grade card: ${terminalText(card.handler)}`,
    command,
    meta: { experiment: 'grade', started: card.startedAt, seed: card.seed, sha256: card.digest, labVersion: card.labVersion, node: process.version, cpus: os.availableParallelism(), options: card.settings },
    markdown: markdownCard(card),
    charts: gradeCharts(card),
    data: { card }
  })
}

/**
 * The charts of a card: the memory checks' points, the handler's and the
 * reference routes' (when they were measured).
 * @returns {import('../../lib/experiments/result-contract.js').ChartSpec[]}
 */
export function gradeCharts (card) {
  const charts = []
  const bySize = card.checks.find(function sizeCheck (c) { return c.area === 'memory' && c.name === 'growth against body size' })
  const byConcurrency = card.checks.find(function concurrencyCheck (c) { return c.area === 'memory' && c.name === 'growth against concurrency' })
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
    const cells = [c.pass ? 'pass' : '**FAIL**', c.area, c.name, c.figure, c.limit, c.pass ? '' : [c.reason, c.hint].filter(Boolean).join(' — ')]
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
