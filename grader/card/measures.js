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
 * MEASURES says, once, which way each is better and what range it can have:
 * a card or a baseline that says otherwise is no card of this lab.
 */
import { CURVES } from '../checks/memory.js'
import { steepestSlope } from '../checks/figures.js'
import { normalizeSettings, PRESET_NAMES } from '../checks/settings.js'
import { round } from '../../lib/util/units.js'

const KEYS = Object.freeze(['area', 'check', 'name', 'value', 'unit', 'better'])

/** More than any machine that grades has: a process grown past it is no measurement (1 TiB). */
export const MAX_GROWTH_MIB = 2 ** 20
/** Faster than memory is copied on any such machine, so faster than a socket is read (100 GB/s). */
export const MAX_MBPS = 100_000
/** The slowest a reference route may read and still be timed (the presets' `slowestMBps`): a ratio's floor under it. */
const SLOWEST_MBPS = Math.min(...PRESET_NAMES.map(function slowest (preset) { return normalizeSettings(preset).slowestMBps }))

/**
 * Each measure: the areas whose checks give it, which way is better, its unit (a slope's is its
 * curve's) and the range a measured figure can have, for a card of `preset`. A slope's range is
 * the steepest the preset's points allow with every growth between 0 and MAX_GROWTH_MIB.
 */
export const MEASURES = Object.freeze({
  slope: Object.freeze({
    areas: ['memory'],
    better: 'lower',
    unit: function curveUnit (check) { return CURVES[check]?.unit ?? null },
    range: function slopeRange (preset, check) {
      const curve = CURVES[check]
      const steepest = steepestSlope(curve.xs(normalizeSettings(preset)), curve.per, MAX_GROWTH_MIB)
      return [-steepest, steepest]
    }
  }),
  peak: Object.freeze({ areas: ['memory', 'safety'], better: 'lower', unit: function mib () { return 'MiB' }, range: function peakRange () { return [0, MAX_GROWTH_MIB] } }),
  ratio: Object.freeze({ areas: ['speed'], better: 'higher', unit: function times () { return '× /streamparser-json' }, range: function ratioRange () { return [0, MAX_MBPS / SLOWEST_MBPS] } }),
  'MB/s': Object.freeze({ areas: ['speed'], better: 'higher', unit: function mbps () { return 'MB/s' }, range: function speedRange () { return [0, MAX_MBPS] } })
})

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
    const add = function add (name, value) {
      const { unit, better } = MEASURES[name]
      if (typeof value === 'number' && Number.isFinite(value)) measures.push({ area: check.area, check: check.name, name, value, unit: unit(check.name), better })
    }
    if (check.area === 'memory' && typeof details.slope === 'number') {
      // a peak only beside a slope: a curve cut short by a failure is no figure to hold a run to
      add('slope', details.slope)
      add('peak', highest((details.points ?? []).map(function growth (p) { return p.growthMiB })))
    } else if (check.area === 'speed') {
      add('ratio', details.ratio)
      add('MB/s', details.studentMBps)
    } else if (check.area === 'safety' && Array.isArray(details.sends)) {
      add('peak', highest(details.sends.map(function growth (send) { return send?.growthMiB })))
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
 * What is wrong with a --json card's `measures`: each must name a check on the card, once per
 * name, and be what MEASURES says: a measure of that area, its unit, its direction, and a figure
 * in its range for the card's preset.
 * @param {unknown} measures
 * @param {Array<{ area: string, name: string }>} checks the card's
 * @param {string} preset the card's
 * @returns {string[]}
 */
export function measuresProblems (measures, checks, preset) {
  if (!Array.isArray(measures)) return ['measures must be an array']
  const problems = []
  const named = new Set((Array.isArray(checks) ? checks : []).map(function key (c) { return `${c?.area}\n${c?.name}` }))
  const seen = new Set()
  measures.forEach(function checkOne (m, k) {
    const at = `measures[${k}]`
    if (m === null || typeof m !== 'object' || Array.isArray(m)) return problems.push(`${at} is not an object`)
    const keys = Object.keys(m).sort()
    if (keys.join() !== [...KEYS].sort().join()) problems.push(`${at} has keys ${keys.join(', ')}, not ${KEYS.join(', ')}`)
    if (!named.has(`${m.area}\n${m.check}`)) problems.push(`${at} names no check on the card (${m.area}: ${m.check})`)
    const key = `${m.area}\n${m.check}\n${m.name}`
    if (seen.has(key)) problems.push(`${at} is a second ${m.name} of ${m.area}: ${m.check}`)
    seen.add(key)
    if (typeof m.value !== 'number' || !Number.isFinite(m.value)) problems.push(`${at}.value must be a finite number`)
    if (!Object.hasOwn(MEASURES, m.name)) return problems.push(`${at}.name must be one of ${Object.keys(MEASURES).join(', ')}`)
    problems.push(...measureProblems(MEASURES[m.name], m, at, preset))
  })
  return problems
}

/** What is wrong with one measure of a known name, against what MEASURES says of it. */
function measureProblems (known, m, at, preset) {
  const problems = []
  if (!known.areas.includes(m.area)) return [`${at}: a ${m.name} is a figure of ${known.areas.join(' or ')}, not of ${m.area}`]
  const unit = known.unit(m.check)
  if (unit === null) return [`${at}: ${m.area}: ${m.check} gives no ${m.name}`]
  if (m.unit !== unit) problems.push(`${at}.unit must be ${unit}`)
  if (m.better !== known.better) problems.push(`${at}.better must be ${known.better}: a ${m.name} is better ${known.better}`)
  if (!PRESET_NAMES.includes(preset) || typeof m.value !== 'number' || !Number.isFinite(m.value)) return problems
  const [least, most] = known.range(preset, m.check)
  if (m.value < least || m.value > most) problems.push(`${at}.value ${m.value} is out of a ${m.name}'s range, ${round(least, 100)} to ${round(most, 100)}${unit === '' ? '' : ` ${unit}`}`)
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
