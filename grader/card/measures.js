/** A card's figures as numbers (`measures`) for baseline.js and collect.js; MEASURES holds each one's direction and range. */
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

/** Each measure's areas, better direction, unit and range for a card of `preset` (a slope's: the steepest possible). */
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
  peak: Object.freeze({
    areas: ['memory', 'safety'], better: 'lower', unit: function mib () { return 'MiB' },
    range: function peakRange () { return [0, MAX_GROWTH_MIB] }
  }),
  ratio: Object.freeze({
    areas: ['speed'], better: 'higher', unit: function times () { return '× /streamparser-json' },
    range: function ratioRange () { return [0, MAX_MBPS / SLOWEST_MBPS] }
  }),
  'MB/s': Object.freeze({
    areas: ['speed'], better: 'higher', unit: function mbps () { return 'MB/s' }, range: function speedRange () { return [0, MAX_MBPS] }
  })
})

/** @typedef {{ area: string, check: string, name: string, value: number, unit: string, better: 'lower'|'higher' }} Measure */

/** The measures of a card (as grade() returns it), in the order of its checks. */
export function cardMeasures (card) {
  const measures = []
  for (const check of card.checks) {
    const details = check.details ?? null
    if (details === null || typeof details !== 'object') continue
    const add = function add (name, value) {
      const { unit, better } = MEASURES[name]
      if (typeof value !== 'number' || !Number.isFinite(value)) return
      measures.push({ area: check.area, check: check.name, name, value, unit: unit(check.name), better })
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

function highest (values) {
  const numbers = values.filter(function finite (v) { return typeof v === 'number' && Number.isFinite(v) })
  return numbers.length === 0 ? null : Math.max(...numbers)
}

/** What is wrong with a card's `measures`: each names a check once, and is what MEASURES says, in range. */
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
  if (m.value < least || m.value > most) problems.push(`${at}.value ${m.value} is out of a ${m.name}'s range, ${round(least, 100)} to ` +
    `${round(most, 100)}${unit === '' ? '' : ` ${unit}`}`)
  return problems
}

/** One measure of a card, or undefined. */
export function findMeasure (doc, area, check, name) {
  return (doc.measures ?? []).find(function named (m) { return m.area === area && m.check === check && m.name === name })
}
