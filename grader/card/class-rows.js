/** A graded submission as a row of the class table: the columns and the figures each takes from the card. */
import { AREAS } from '../checks/index.js'
import { areaVerdicts } from './card.js'

// `*_slope`, `speed_*`: key figures; `notes`: beside the grade, never part of it; `duplicates`: see markDuplicates
export const COLUMNS = Object.freeze([
  'name', 'verdict', ...AREAS, 'checks_passed', 'checks_total',
  'memory_size_slope_MiB_per_100MB', 'memory_concurrency_slope_MiB_per_upload', 'speed_MBps', 'speed_ratio',
  'failed_checks', 'seed', 'duration_s', 'sha256', 'submission', 'report', 'error', 'duplicates', 'notes'
])

/** `pass`/`fail` are the grade; `refused` (not run), `error` (the grader's failure), `skipped` (no submission): the reason in `error`. */
export const VERDICTS = Object.freeze(['pass', 'fail', 'refused', 'error', 'skipped'])

export function countVerdicts (rows) {
  const counts = Object.fromEntries(VERDICTS.map(function zero (verdict) { return [verdict, 0] }))
  for (const row of rows) counts[row.verdict]++
  return counts
}

/** Give each row sharing a key ('sha256 …', 'card …') with others their names in `duplicates`, so both are flagged. */
export function markDuplicates (entries) {
  const byKey = new Map()
  for (const { row, keys } of entries) {
    for (const key of keys) byKey.set(key, [...(byKey.get(key) ?? []), row])
  }
  for (const { row, keys } of entries) {
    const others = new Set()
    for (const key of keys) for (const other of byKey.get(key)) if (other !== row) others.add(other.name)
    row.duplicates = [...others].sort().join('; ')
  }
}

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
  row.failed_checks = failedChecks(card.checks)
  row.duration_s = seconds(card.ms)
  row.error = card.loadError ?? ''
  return row
}

/** A --json card graded elsewhere (`--collect`) as a row: the same columns, the key figures from its `measures`. */
export function rowOfCardJson (submission, doc, digest) {
  const row = emptyRow(submission, digest, doc.seed)
  row.verdict = doc.verdict
  for (const area of AREAS) row[area] = doc.areas[area] ?? 'not run'
  row.checks_passed = doc.checks.filter(function passed (c) { return c.pass }).length
  row.checks_total = doc.checks.length
  const measure = function measure (area, check, name) {
    const found = doc.measures.find(function named (m) {
      return m.area === area && (check === null || m.check === check) && m.name === name
    })
    return figureOf(found?.value)
  }
  row.memory_size_slope_MiB_per_100MB = measure('memory', 'growth against body size', 'slope')
  row.memory_concurrency_slope_MiB_per_upload = measure('memory', 'growth against concurrency', 'slope')
  row.speed_MBps = measure('speed', null, 'MB/s')
  row.speed_ratio = measure('speed', null, 'ratio')
  row.failed_checks = failedChecks(doc.checks)
  row.duration_s = seconds(doc.durationMs)
  return row
}

/** The row of a submission the grader would not run: `refused`, and the reason (`digest` null when unread). */
export function refusedRow (submission, digest, seed, ms, reason) {
  return { ...emptyRow(submission, digest, seed), verdict: 'refused', duration_s: seconds(ms), error: reason }
}

/** The row of a submission the grader itself failed on: `error`, and the message. */
export function errorRow (submission, digest, seed, ms, message) {
  return { ...emptyRow(submission, digest, seed), verdict: 'error', duration_s: seconds(ms), error: message }
}

/** The row of an entry that is no submission: `skipped`, and why. */
export function skippedRow (entry, seed) {
  return { ...emptyRow(entry, null, seed), verdict: 'skipped', duration_s: 0, error: entry.skipped }
}

function failedChecks (checks) {
  return checks.filter(function failed (c) { return !c.pass }).map(function named (c) { return `${c.area}: ${c.name}` }).join('; ')
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
