/**
 * Cards checked against the teacher's own grading (`--collect DIR --verify K`).
 * A card's sha256 ties it to the file beside it, not to its figures: a card
 * forged by hand holds the contract (the grader's checks, every figure in its
 * range) and still says what no grading said. So K of the collected cards,
 * drawn with a seed of their own (printed, `--verify-seed` to draw the same
 * again; never the class's --seed, which every student knows), have their
 * submission graded again here as the class grades it, on bodies of a fresh
 * seed (printed, never the cards'): a handler that answers from a table made
 * for the class's seed meets bodies it has never seen. Each card is held
 * to that grading: an area whose verdict differs, or a figure the card claims
 * better than measured here by more than a baseline's tolerance (baseline.js),
 * and the card is refused, the reasons and this grading's verdict in its row.
 * A figure the card says is worse than measured here is no forgery: not flagged.
 */
import { newSeed, normalizeSeed } from '../checks/settings.js'
import { grade } from '../run/grade-handler.js'
import { prng } from '../../lib/measure/mutate.js'
import { compareWithBaseline, DEFAULT_TOLERANCE } from './baseline.js'
import { cardJson } from './card-json.js'
import { errorRow, refusedRow } from './class-rows.js'

/** The most cards --verify grades again: a class is graded here one at a time, minutes each. */
const MAX_VERIFY = 1000

/**
 * Read `--verify K` and `--verify-seed S`.
 * @param {string} count
 * @param {string} [seed] a new random one when not given
 * @returns {{ count: number, seed: number }}
 * @throws {TypeError} naming the flag
 */
export function parseVerify (count, seed) {
  const k = /^\s*\d+\s*$/.test(String(count)) ? Number(count) : NaN
  if (!Number.isSafeInteger(k) || k < 1 || k > MAX_VERIFY) throw new TypeError(`--verify takes how many cards to grade again, 1 to ${MAX_VERIFY}, got ${JSON.stringify(count)}`)
  if (seed === undefined) return { count: k, seed: newSeed() }
  try {
    return { count: k, seed: normalizeSeed(seed) }
  } catch (err) {
    throw new TypeError(`--verify-seed: ${err.message}`, { cause: err })
  }
}

/**
 * What --verify did, in a line: the cards graded again, the seed that drew them, the seed of the
 * bodies they were graded on, which disagree.
 * @param {{ seed: number, bodySeed: number, chosen: string[], disagree: string[] }} result
 */
export function verifyLine (result) {
  const which = result.chosen.length === 0 ? 'none (no card was collected)' : result.chosen.join(', ')
  const bodies = `on bodies of seed ${result.bodySeed}, not the cards' (--seed ${result.bodySeed} grades one so again)`
  const drawn = `--verify: graded again here ${which}, drawn with --verify-seed ${result.seed} (give it again to draw the same), ${bodies}`
  return `${drawn}: ${result.disagree.length === 0 ? 'every card agrees' : `${result.disagree.length} disagree${result.disagree.length === 1 ? 's' : ''} (${result.disagree.join(', ')}), refused`}`
}

/**
 * Which of the collected cards to grade again: `count` of them, drawn from `seed`
 * (a shuffle of the names in order), returned in name order.
 * @param {string[]} names the collected cards' rows' names
 * @param {number} count
 * @param {number} seed
 * @returns {string[]}
 */
export function chooseCards (names, count, seed) {
  const random = prng(seed)
  const order = [...names].sort()
  for (let k = order.length - 1; k > 0; k--) {
    const j = Math.floor(random() * (k + 1))
    ;[order[k], order[j]] = [order[j], order[k]]
  }
  return order.slice(0, count).sort()
}

/**
 * Where a card and the grading here disagree: each area's verdict, the file's digest, and
 * each figure the card claims better than this grading's by more than the tolerance.
 * @param {object} doc the --json card collected
 * @param {object} here the --json card of the grading here
 * @param {number} tolerance as --baseline takes it
 * @returns {string[]} empty when they agree
 */
export function disagreements (doc, here, tolerance) {
  const said = []
  if (here.sha256 !== doc.sha256) said.push(`the file graded here has sha256 ${here.sha256}, the card's ${doc.sha256}`)
  const areas = new Set([...Object.keys(doc.areas), ...Object.keys(here.areas)])
  for (const area of areas) {
    const card = doc.areas[area] ?? 'not run'
    const mine = here.areas[area] ?? 'not run'
    if (card !== mine) said.push(`${area}: the card says ${card}, graded here ${mine}`)
  }
  // the card as the baseline, this grading as the run: "worse" is a card that claims better than measured
  const gate = compareWithBaseline(here, doc, { tolerance, against: 'the card' })
  for (const line of gate.lines) if (line.worse) said.push(line.text)
  return said
}

/**
 * Grade `count` of the collected cards' submissions again and hold each card to it.
 * @param {Array<{ row: object, doc: object, folder: string, file: string }>} collected the cards
 *   taken, each with its row, its card, the student's folder and the file it graded
 * @param {{ count: number, seed?: number|null, tolerance?: number, preset: string, areas: string[],
 *   bodySeed?: number, settings?: object, contentType?: string|null, isolation?: object, grade?: typeof grade,
 *   onProgress?: (event: object) => void }} options the class's preset and areas; `bodySeed`: the
 *   bodies' (a fresh one unlike every card's by default); `grade`: a spec's stand-in for grade()
 * @returns {Promise<{ seed: number, bodySeed: number, chosen: string[], disagree: string[] }>} each chosen
 *   row is changed in place: refused with the reasons when its card disagrees, noted when it agrees
 */
export async function verifyCards (collected, options) {
  const seed = options.seed ?? newSeed()
  const bodySeed = options.bodySeed ?? freshSeed(collected.map(function cardSeed (c) { return c.doc.seed }))
  const tolerance = options.tolerance ?? DEFAULT_TOLERANCE
  const gradeHere = options.grade ?? grade
  const onProgress = options.onProgress ?? function quiet () {}
  const chosen = chooseCards(collected.map(function named (c) { return c.row.name }), options.count, seed)
  const disagree = []
  const started = Date.now()
  for (const [index, name] of chosen.entries()) {
    const entry = collected.find(function named (c) { return c.row.name === name })
    const etaMs = index === 0 ? null : Math.round((Date.now() - started) / index * (chosen.length - index))
    onProgress({ type: 'submission', index, total: chosen.length, name, etaMs })
    const began = Date.now()
    const outcome = await gradeAgain(entry, { ...options, bodySeed }, gradeHere, onProgress)
    const row = verifiedRow(entry, outcome, tolerance, Date.now() - began, bodySeed)
    if (row.disagrees) disagree.push(name)
    Object.assign(entry.row, row.row)
    onProgress({ type: 'graded', index, total: chosen.length, row: entry.row })
  }
  return { seed, bodySeed, chosen, disagree }
}

/** A new random seed none of `taken` is: a table made for a card's seed never meets its own bodies. */
function freshSeed (taken) {
  for (;;) {
    const seed = newSeed()
    if (!taken.includes(seed)) return seed
  }
}

/** The submission graded here as the class grades it: `{ card }`, or `{ err }` when the grader would not or could not. */
async function gradeAgain (entry, options, gradeHere, onProgress) {
  try {
    const card = await gradeHere(entry.file, {
      preset: options.preset,
      settings: options.settings,
      areas: options.areas,
      seed: options.bodySeed,
      contentType: options.contentType ?? undefined,
      // the process may read the student's own folder, not the others beside it
      isolation: { ...options.isolation, submission: entry.folder },
      onProgress: function forward (event) { onProgress({ ...event, submission: entry.row.name }) }
    })
    return { card, err: null }
  } catch (err) {
    return { card: null, err }
  }
}

/** The row after its card was held to the grading here: `{ row, disagrees }`. */
function verifiedRow (entry, outcome, tolerance, ms, bodySeed) {
  const { row, doc } = entry
  const submission = { name: row.name, path: row.submission }
  if (outcome.err !== null) {
    const why = outcome.err.reason ?? outcome.err.message ?? String(outcome.err)
    const failed = outcome.err.code === 'NOT_GRADED'
      ? refusedRow(submission, row.sha256, doc.seed, ms, `not verified: graded here, it was refused: ${why}`)
      : errorRow(submission, row.sha256, doc.seed, ms, `not verified: the grader failed: ${why}`)
    return { row: { ...failed, report: row.report }, disagrees: false }
  }
  const here = cardJson(outcome.card)
  const said = disagreements(doc, here, tolerance)
  const passed = here.checks.filter(function pass (c) { return c.pass }).length
  const graded = `graded here (--verify, seed ${bodySeed}): ${here.verdict} ${passed}/${here.checks.length}`
  if (said.length === 0) return { row: { notes: `${row.notes}; ${graded}, the card agrees` }, disagrees: false }
  const refused = refusedRow(submission, row.sha256, doc.seed, ms, `not collected: the card disagrees with its submission graded here (--verify): ${said.join('; ')}`)
  return { row: { ...refused, report: row.report, notes: `${row.notes}; ${graded}` }, disagrees: true }
}
