/** `--collect DIR --verify K`: K cards graded again here on fresh bodies; one that disagrees is refused (card/README.md). */
import { newSeed, normalizeSeed } from '../checks/settings.js'
import { grade } from '../run/grade-handler.js'
import { prng } from '../../lib/measure/mutate.js'
import { compareWithBaseline, DEFAULT_TOLERANCE } from './baseline.js'
import { cardJson } from './card-json.js'
import { errorRow, refusedRow } from './class-rows.js'

/** The most cards --verify grades again: a class is graded here one at a time, minutes each. */
const MAX_VERIFY = 1000

/** Read `--verify K` and `--verify-seed S` (a new random seed when not given); TypeError naming the flag. */
export function parseVerify (count, seed) {
  const k = /^\s*\d+\s*$/.test(String(count)) ? Number(count) : NaN
  if (!Number.isSafeInteger(k) || k < 1 || k > MAX_VERIFY) throw new TypeError(`--verify takes how many cards to grade again, 1 to ` +
    `${MAX_VERIFY}, got ${JSON.stringify(count)}`)
  if (seed === undefined) return { count: k, seed: newSeed() }
  try {
    return { count: k, seed: normalizeSeed(seed) }
  } catch (err) {
    throw new TypeError(`--verify-seed: ${err.message}`, { cause: err })
  }
}

/** What --verify did, in a line: the cards graded again, both seeds, which disagree. */
export function verifyLine (result) {
  const which = result.chosen.length === 0 ? 'none (no card was collected)' : result.chosen.join(', ')
  const bodies = `on bodies of seed ${result.bodySeed}, not the cards' (--seed ${result.bodySeed} grades one so again)`
  const drawn = `--verify: graded again here ${which}, drawn with --verify-seed ${result.seed} (give it again to draw the same), ${bodies}`
  const n = result.disagree.length
  return `${drawn}: ${n === 0 ? 'every card agrees' : `${n} disagree${n === 1 ? 's' : ''} (${result.disagree.join(', ')}), refused`}`
}

/** `count` of the collected cards' names, drawn from `seed` (a shuffle), in name order. */
export function chooseCards (names, count, seed) {
  const random = prng(seed)
  const order = [...names].sort()
  for (let k = order.length - 1; k > 0; k--) {
    const j = Math.floor(random() * (k + 1))
    ;[order[k], order[j]] = [order[j], order[k]]
  }
  return order.slice(0, count).sort()
}

/** Where a card and the grading here disagree: an area's verdict, the digest, a figure it claims better past `tolerance`. */
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

/** Grade `count` cards' submissions again and hold each card to it, changing the chosen rows in place. */
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
  const refused = refusedRow(submission, row.sha256, doc.seed, ms, `not collected: the card disagrees with its submission graded here ` +
    `(--verify): ${said.join('; ')}`)
  return { row: { ...refused, report: row.report, notes: `${row.notes}; ${graded}` }, disagrees: true }
}
