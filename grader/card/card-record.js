/** A card as a run record (docs/runs.md): checks, verdicts, memory charts, and each point's peak and MB/s as cells. */
import { saveOutsideRecord } from '../../lib/runs/bench.js'
import { AREAS } from '../checks/index.js'
import { cardJson } from './card-json.js'
import { gradeCharts } from './report.js'
import { MiB } from '../../lib/util/units.js'

/** What the graded target is called in cells: the handler at POST /student, or the service. */
function gradedRoute (card) {
  return card.service ? 'service' : 'student'
}

function check (card, area, name) {
  return card.checks.find(function named (c) { return c.area === area && c.name === name }) ?? null
}

/** The memory curves' points as cells: the graded target's and the reference routes'. */
function memoryCells (card) {
  const cells = []
  for (const [name, coordinate] of [['growth against body size', 'size'], ['growth against concurrency', 'concurrency']]) {
    const details = check(card, 'memory', name)?.details
    if (!Array.isArray(details?.points)) continue
    const curves = [[gradedRoute(card), details.points], ...Object.entries(details.reference ?? {})]
    for (const [route, points] of curves) {
      for (const p of points) {
        if (!Number.isFinite(p.growthMiB)) continue
        const at = coordinate === 'size' ? { size: sizeLabel(p.x) } : { concurrency: p.x }
        cells.push({ route, ...at, peakAboveIdle: Math.round(p.growthMiB * MiB) })
      }
    }
  }
  return cells
}

/** A body size in MB as cells name it, rounded so two gradings of one preset name their sizes alike. */
function sizeLabel (mb) {
  return `${mb >= 10 ? Math.round(mb) : Math.round(mb * 10) / 10} MB`
}

/** The speed check's MB/s as cells: the graded target's, /streamparser-json's and /good's. */
function speedCells (card) {
  const details = card.checks.find(function speed (c) { return c.area === 'speed' })?.details
  if (!details) return []
  return [[gradedRoute(card), details.studentMBps], ['streamparser-json', details.textbookMBps], ['good', details.goodMBps]]
    .filter(function measured ([, mbps]) { return Number.isFinite(mbps) })
    .map(function cell ([route, mbps]) { return { route, mbPerSecond: mbps } })
}

/** The checks as a table: a row per check, its verdict, figure and limit. */
function checksTable (card) {
  return {
    name: 'checks',
    caption: `${card.checks.filter(function passed (c) { return c.pass }).length}/${card.checks.length} checks passed`,
    columns: [{ key: 'verdict', label: 'verdict' }, { key: 'figure', label: 'figure' }, { key: 'limit', label: 'limit' }],
    rows: card.checks.map(function row (c) {
      const values = { verdict: c.pass ? 'pass' : 'FAIL', figure: c.figure, limit: c.limit }
      return { field: `${c.area}: ${c.name}`, label: `${c.area}: ${c.name}`, unit: 'text', values }
    })
  }
}

function areaVerdicts (card) {
  const graded = AREAS.filter(function graded (area) { return card.checks.some(function inArea (c) { return c.area === area }) })
  return graded.map(function verdict (area) {
    const checks = card.checks.filter(function inArea (c) { return c.area === area })
    const failed = checks.filter(function failed (c) { return !c.pass })
    return {
      verdict: `${area}: ${failed.length === 0 ? 'pass' : 'fail'}`,
      text: `${area}: ${checks.length - failed.length}/${checks.length} checks ` +
        `passed${failed.length === 0 ? '' : `; failed: ${failed.map(function name (c) { return c.name }).join(', ')}`}`,
      ok: failed.length === 0
    }
  })
}

export function cardResults (card) {
  const target = card.service ? card.service.url : card.handler
  const passed = card.checks.filter(function passed (c) { return c.pass }).length
  const charts = gradeCharts(card)
  return {
    caption: `${target}: ${passed}/${card.checks.length} checks passed (${card.preset}, seed ${card.seed})`,
    cells: [...memoryCells(card), ...speedCells(card)],
    tables: [checksTable(card)],
    ...(charts.length > 0 ? { charts } : {}),
    verdicts: card.loadError ? [{ verdict: 'did not load', text: card.loadError, ok: false }] : areaVerdicts(card),
    details: { card: cardJson(card) }
  }
}

/** Keep a card as a run record in `<dataDir>/runs/`; null when no records are kept. */
export function saveCardRecord (card, where) {
  const startedAt = Date.parse(card.startedAt)
  return saveOutsideRecord({
    ...where,
    experiment: 'grade',
    title: `Grade card: ${card.service ? card.service.url : card.handler}`,
    params: {
      target: card.service ? card.service.url : card.handler, preset: card.preset, seed: card.seed, areas: card.areas, sha256: card.digest
    },
    source: 'grade',
    startedAt,
    endedAt: startedAt + card.ms,
    results: cardResults(card)
  })
}
