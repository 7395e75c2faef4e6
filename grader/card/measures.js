/**
 * A card's figures as numbers: the `measures` of the --json card, taken from
 * what each check recorded (its details), so that a later run can be held to
 * them (baseline.js) and a class table built from cards alone (collect.js).
 * The figure strings stay the card's words for people; these are for programs.
 *
 *   { "area": "memory", "check": "growth against body size", "name": "slope",
 *     "value": 1.2, "unit": "MiB per 100 MB", "better": "lower" }
 *
 * Names: `slope` (a memory curve's least-squares slope), `peak` (the most a
 * memory curve or a zip bomb grew the process, in MiB), `ratio` (throughput
 * as a fraction of /streamparser-json's) and `MB/s` (the throughput itself).
 * A check that gave no figure (not run, the service died) gives no measure.
 */

const KEYS = Object.freeze(['area', 'check', 'name', 'value', 'unit', 'better'])
const BETTER = Object.freeze(['lower', 'higher'])

/**
 * @typedef {{ area: string, check: string, name: string, value: number, unit: string, better: 'lower'|'higher' }} Measure
 */

/**
 * The measures of a card, in the order of its checks.
 * @param {{ checks: Array<{ area: string, name: string, details?: object|null }> }} card as grade() returns it
 * @returns {Measure[]}
 */
export function cardMeasures (card) {
  const measures = []
  for (const check of card.checks) {
    const details = check.details ?? null
    if (details === null || typeof details !== 'object') continue
    const add = function add (name, value, unit, better) {
      if (typeof value === 'number' && Number.isFinite(value)) measures.push({ area: check.area, check: check.name, name, value, unit, better })
    }
    if (check.area === 'memory' && typeof details.slope === 'number') {
      // a peak only beside a slope: a curve cut short by a failure is no figure to hold a run to
      add('slope', details.slope, details.unit, 'lower')
      add('peak', highest((details.points ?? []).map(function growth (p) { return p.growthMiB })), 'MiB', 'lower')
    } else if (check.area === 'speed') {
      add('ratio', details.ratio, '× /streamparser-json', 'higher')
      add('MB/s', details.studentMBps, 'MB/s', 'higher')
    } else if (check.area === 'safety' && Array.isArray(details.sends)) {
      add('peak', highest(details.sends.map(function growth (send) { return send?.growthMiB })), 'MiB', 'lower')
    }
  }
  return measures
}

/** The largest finite number of `values`, or null. */
function highest (values) {
  const numbers = values.filter(function finite (v) { return typeof v === 'number' && Number.isFinite(v) })
  return numbers.length === 0 ? null : Math.max(...numbers)
}

/**
 * What is wrong with a --json card's `measures`: each must name a check on the card.
 * @param {unknown} measures
 * @param {Array<{ area: string, name: string }>} checks the card's
 * @returns {string[]}
 */
export function measuresProblems (measures, checks) {
  if (!Array.isArray(measures)) return ['measures must be an array']
  const problems = []
  const named = new Set((Array.isArray(checks) ? checks : []).map(function key (c) { return `${c?.area}\n${c?.name}` }))
  measures.forEach(function checkOne (m, k) {
    const at = `measures[${k}]`
    if (m === null || typeof m !== 'object' || Array.isArray(m)) return problems.push(`${at} is not an object`)
    const keys = Object.keys(m).sort()
    if (keys.join() !== [...KEYS].sort().join()) problems.push(`${at} has keys ${keys.join(', ')}, not ${KEYS.join(', ')}`)
    if (!named.has(`${m.area}\n${m.check}`)) problems.push(`${at} names no check on the card (${m.area}: ${m.check})`)
    if (typeof m.name !== 'string' || m.name === '') problems.push(`${at}.name must be a non-empty string`)
    if (typeof m.value !== 'number' || !Number.isFinite(m.value)) problems.push(`${at}.value must be a finite number`)
    if (typeof m.unit !== 'string') problems.push(`${at}.unit must be a string`)
    if (!BETTER.includes(m.better)) problems.push(`${at}.better must be lower or higher`)
  })
  return problems
}

/**
 * One measure of a card, or undefined.
 * @param {{ measures?: Measure[] }} doc a --json card
 * @param {string} area
 * @param {string} check
 * @param {string} name
 */
export function findMeasure (doc, area, check, name) {
  return (doc.measures ?? []).find(function named (m) { return m.area === area && m.check === check && m.name === name })
}
