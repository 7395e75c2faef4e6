/** The CI memory gate (`--baseline CARD.json`): a measure worse than the baseline's past tolerance fails (card/README.md). */
import fs from 'node:fs'
import { LIMITS } from '../checks/settings.js'
import { validateCardJson } from './card-json.js'
import { MEASURES } from './measures.js'

/** Worse by more than this fraction of the baseline's figure fails the gate. */
export const DEFAULT_TOLERANCE = 0.25
/** The most a tolerance may be: 10× the baseline is no gate. */
const MAX_TOLERANCE = 10
/** The measures the gate compares (MB/s is the machine's as much as the code's: the ratio is the code's). */
const COMPARED = Object.freeze(['slope', 'peak', 'ratio'])
/** A baseline card is a few KiB: past this it is not one. */
const MAX_CARD_BYTES = 4 * 2 ** 20

/** Differences under these are noise: half the memory checks' noise for a peak, a fifth of the check's limit else. */
export function noiseFloor (measure) {
  if (measure.name === 'peak') return LIMITS.noiseMiB / 2
  if (measure.name === 'ratio') return LIMITS.speedRatio / 5
  if (measure.name === 'slope' && /per upload/.test(measure.unit)) return LIMITS.concurrencySlopeMiBPerRequest / 5
  if (measure.name === 'slope') return LIMITS.sizeSlopeMiBPer100MB / 5
  return 0
}

/** `--tolerance` ("25%" or "25") as a fraction; TypeError naming the flag. */
export function parseTolerance (text) {
  const match = /^\s*(\d+(?:\.\d+)?)\s*%?\s*$/.exec(String(text))
  const fraction = match ? Number(match[1]) / 100 : NaN
  if (!Number.isFinite(fraction) || fraction > MAX_TOLERANCE) throw new TypeError(`--tolerance takes a percentage from 0% to ` +
    `${MAX_TOLERANCE * 100}%, got ${JSON.stringify(text)}`)
  return fraction
}

/** Read a baseline card: `{ doc, problem: null }` or `{ doc: null, problem }`. */
export async function readBaseline (file) {
  let text
  try {
    const stat = await fs.promises.stat(file)
    if (!stat.isFile()) return { doc: null, problem: `the baseline ${file} is not a file` }
    if (stat.size > MAX_CARD_BYTES) return { doc: null, problem: `the baseline ${file} is larger than a card is ` +
      `(${MAX_CARD_BYTES / 2 ** 20} MiB)` }
    text = await fs.promises.readFile(file, 'utf8')
  } catch (err) {
    return { doc: null, problem: `the baseline ${file} cannot be read (${err.code ?? err.message})` }
  }
  let doc
  try {
    doc = JSON.parse(text)
  } catch (err) {
    return { doc: null, problem: `the baseline ${file} is not JSON (${err.message})` }
  }
  // a card from before measures were kept: all of a card but them
  const isObject = doc !== null && typeof doc === 'object' && !Array.isArray(doc)
  const olderCard = isObject && Array.isArray(doc.checks) && typeof doc.handler === 'string'
  if (olderCard && !Object.hasOwn(doc, 'measures')) {
    return { doc: null, problem: `the baseline ${file} has no measures: it was written before cards kept their figures as numbers; ` +
      `write it again with --json` }
  }
  const problems = validateCardJson(doc)
  if (problems.length > 0) return { doc: null, problem: `the baseline ${file} is not a --json card: ${problems.slice(0, 3).join('; ')}` }
  if (!doc.measures.some(function compared (m) { return COMPARED.includes(m.name) })) {
    return { doc: null, problem: `the baseline ${file} has no figure to hold a run to (its measures have no ${COMPARED.join(', ')}): ` +
      `write it again with --json from a run whose memory, speed or safety checks gave figures` }
  }
  return { doc, problem: null }
}

/** Why a baseline cannot be compared with a run of `preset` at all (another preset's bodies), or null. */
export function baselineRefusal (baseline, preset) {
  if (baseline.preset === preset) return null
  const flag = function flag (p) { return p === 'quick' ? '--quick' : `the ${p} run` }
  return `the baseline is a card of ${flag(baseline.preset)}, this run is ${flag(preset)}: their bodies differ, so their figures cannot ` +
    `be compared (grade with the baseline's preset, or write a new baseline)`
}

/**
 * @typedef {{ area: string, check: string, name: string, unit: string, better: 'lower'|'higher', value: number,
 *   baseline: number, allowed: number, worse: boolean, text: string }} BaselineLine
 * @typedef {{ file: string, tolerance: number, lines: BaselineLine[], notes: string[], passed: boolean }} BaselineResult
 */

/** Compare two --json cards measure by measure (COMPARED); `file` names the baseline, `against` it on each line. */
export function compareWithBaseline (run, baseline, options = {}) {
  const tolerance = options.tolerance ?? DEFAULT_TOLERANCE
  const file = options.file ?? 'the baseline'
  const notes = []
  const refusal = baselineRefusal(baseline, run.preset)
  if (refusal !== null) return { file, tolerance, lines: [], notes: [refusal], passed: false }
  if (baseline.labVersion !== run.labVersion) notes.push(`the baseline was graded by lab ${baseline.labVersion}, this run by ` +
    `${run.labVersion}: a check may have changed between them`)
  if (baseline.handler !== run.handler) notes.push(`the baseline graded ${baseline.handler}, this run ${run.handler}`)
  if (baseline.seed !== run.seed) notes.push(`the baseline's seed was ${baseline.seed}, this run's ${run.seed}: ` +
    `bodies of the same sizes, drawn differently`)
  const lines = []
  for (const before of baseline.measures) {
    if (!COMPARED.includes(before.name)) continue
    const now = run.measures.find(function same (m) { return m.area === before.area && m.check === before.check && m.name === before.name })
    if (now === undefined) {
      notes.push(`${label(before)}: in the baseline, not in this run (an area left out, or the check gave no figure)`)
      continue
    }
    lines.push(compareOne(now, before, tolerance, options.against ?? 'the baseline'))
  }
  if (lines.length === 0) notes.push('no figure to compare: the baseline and this run share no memory or speed measure')
  return { file, tolerance, lines, notes, passed: lines.every(function within (l) { return !l.worse }) }
}

function compareOne (now, before, tolerance, against) {
  const floor = noiseFloor(before)
  const allowed = Math.max(tolerance * Math.abs(before.value), floor)
  const change = now.value - before.value
  // the lab's direction: a baseline's own `better` is a claim, not a rule
  const better = MEASURES[before.name].better
  const worse = better === 'lower' ? change > allowed : -change > allowed
  const unit = before.unit === '' ? '' : ` ${before.unit}`
  const verdict = worse
    ? `worse than ${against} by ${number(Math.abs(change))}${unit}, more than the ${percent(tolerance)} tolerance ` +
      `allows (${number(allowed)})`
    : `within ${against}'s tolerance (${percent(tolerance)}, at least ${number(floor)})`
  return {
    area: before.area, check: before.check, name: before.name, unit: before.unit, better, value: now.value,
    baseline: before.value, allowed, worse,
    text: `${label(before)} ${number(now.value)}${unit}, ${against}'s ${number(before.value)}: ${verdict}`
  }
}

/** The comparison as terminal lines: a header naming the baseline, a line per measure, the notes. */
export function baselineLines (result) {
  const worse = result.lines.filter(function isWorse (l) { return l.worse }).length
  const head = result.lines.length === 0 && !result.passed
    ? `baseline ${result.file}: not compared`
    : `baseline ${result.file}: ${worse === 0 ? 'PASS' : `FAIL (${worse} of ${result.lines.length} worse)`}, tolerance ` +
      `${percent(result.tolerance)}`
  return [
    head,
    ...result.lines.map(function line (l) { return `${l.worse ? 'FAIL' : 'PASS'}  baseline  ${l.text}` }),
    ...result.notes.map(function note (n) { return `      note: ${n}` })
  ]
}

function label (m) {
  return `${m.area}: ${m.check}, ${m.name}`
}

function number (value) {
  return String(Math.round(value * 100) / 100)
}

function percent (fraction) {
  return `${Math.round(fraction * 1000) / 10}%`
}
