/**
 * A graded submission as a row of the class table: the columns, in order,
 * and the figures each takes from the card.
 */
import { AREAS } from '../checks/index.js'
import { areaVerdicts } from './card.js'

/**
 * The table's columns, in order. `*_slope` and `speed_*` are the key
 * figures of the memory and speed checks (empty when the check did not give
 * one); `failed_checks` names the checks that failed, `;` between them;
 * `notes` what the grader says beside the grade (files left out of the
 * digest, a report it could not write), never a part of it; `duplicates` the other
 * rows handed in the same (markDuplicates).
 */
export const COLUMNS = Object.freeze([
  'name', 'verdict', ...AREAS, 'checks_passed', 'checks_total',
  'memory_size_slope_MiB_per_100MB', 'memory_concurrency_slope_MiB_per_upload', 'speed_MBps', 'speed_ratio',
  'failed_checks', 'seed', 'duration_s', 'sha256', 'submission', 'report', 'error', 'duplicates', 'notes'
])

/**
 * A row's verdict: `pass` and `fail` are the grade; `refused` a submission the grader would
 * not run (a symbolic link, a pipe, past the size or time a read may take, or one that would
 * run as root), the reason in `error`; `error` the grader's own failure on it; `skipped` an
 * entry of the folder that is no submission (notes.txt, handler.ts), listed so that nothing
 * is dropped in silence, the reason in `error`.
 */
export const VERDICTS = Object.freeze(['pass', 'fail', 'refused', 'error', 'skipped'])

/**
 * How many rows have each verdict.
 * @param {Array<{ verdict: string }>} rows
 * @returns {{ pass: number, fail: number, refused: number, error: number, skipped: number }}
 */
export function countVerdicts (rows) {
  const counts = Object.fromEntries(VERDICTS.map(function zero (verdict) { return [verdict, 0] }))
  for (const row of rows) counts[row.verdict]++
  return counts
}

/**
 * Flag the rows that are one submission handed in twice: each row that shares a key with
 * others (the same sha256; with --collect, the same card) gets their names in `duplicates`,
 * `;` between them, so that both students of a pair are flagged, each naming the other.
 * @param {Array<{ row: object, keys: string[] }>} entries a row's keys: 'sha256 …', 'card …'
 */
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

/**
 * A card as a row of the table.
 * @param {{ name: string, path: string }} submission
 * @param {import('../run/run-checks.js').Card} card
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

/**
 * A --json card graded elsewhere as a row (`--collect`): the same columns as a card graded
 * here, the key figures from its `measures`.
 * @param {{ name: string, path: string }} submission
 * @param {object} doc a --json card (validateCardJson holds)
 * @param {string} digest the submission's, as checked against the card
 */
export function rowOfCardJson (submission, doc, digest) {
  const row = emptyRow(submission, digest, doc.seed)
  row.verdict = doc.verdict
  for (const area of AREAS) row[area] = doc.areas[area] ?? 'not run'
  row.checks_passed = doc.checks.filter(function passed (c) { return c.pass }).length
  row.checks_total = doc.checks.length
  const measure = function measure (area, check, name) {
    const found = doc.measures.find(function named (m) { return m.area === area && (check === null || m.check === check) && m.name === name })
    return figureOf(found?.value)
  }
  row.memory_size_slope_MiB_per_100MB = measure('memory', 'growth against body size', 'slope')
  row.memory_concurrency_slope_MiB_per_upload = measure('memory', 'growth against concurrency', 'slope')
  row.speed_MBps = measure('speed', null, 'MB/s')
  row.speed_ratio = measure('speed', null, 'ratio')
  row.failed_checks = doc.checks.filter(function failed (c) { return !c.pass }).map(function named (c) { return `${c.area}: ${c.name}` }).join('; ')
  row.duration_s = seconds(doc.durationMs)
  return row
}

/**
 * The row of a submission the grader would not run: verdict `refused`, and the reason.
 * @param {{ name: string, path: string }} submission
 * @param {string|null} digest null when it was not read
 * @param {number} seed the class's
 * @param {number} ms how long it took
 * @param {string} reason
 */
export function refusedRow (submission, digest, seed, ms, reason) {
  return { ...emptyRow(submission, digest, seed), verdict: 'refused', duration_s: seconds(ms), error: reason }
}

/**
 * The row of a submission the grader itself failed on: verdict `error`, and the message.
 * @param {{ name: string, path: string }} submission
 * @param {string|null} digest
 * @param {number} seed the class's
 * @param {number} ms how long it took
 * @param {string} message
 */
export function errorRow (submission, digest, seed, ms, message) {
  return { ...emptyRow(submission, digest, seed), verdict: 'error', duration_s: seconds(ms), error: message }
}

/**
 * The row of an entry that is no submission: verdict `skipped`, and why.
 * @param {{ name: string, path: string, skipped: string }} entry from findSubmissions
 * @param {number} seed the class's
 */
export function skippedRow (entry, seed) {
  return { ...emptyRow(entry, null, seed), verdict: 'skipped', duration_s: 0, error: entry.skipped }
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
