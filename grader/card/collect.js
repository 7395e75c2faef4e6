/** A class's table from cards graded elsewhere (`--collect DIR`): which cards count is in card/README.md. */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { AREAS } from '../checks/index.js'
import { fileDigest, READ_FLAGS } from '../student/digest.js'
import { validateCardJson } from './card-json.js'
import { markDuplicates, refusedRow, rowOfCardJson, skippedRow } from './class-rows.js'
import { writeTable } from './class-table.js'
import { verifyCards } from './verify.js'

export const CARD_FILE = 'card.json'
/** A card is a few KiB: past this it is not one. */
const MAX_CARD_BYTES = 4 * 2 ** 20

/** Build the class table from `dir`'s students' folders; options in grader/card/README.md; TypeError if there are none. */
export async function collectClass (dir, options) {
  const onProgress = options.onProgress ?? function quiet () {}
  const entries = await fs.promises.readdir(dir)
  const names = entries.filter(function shown (name) { return !name.startsWith('.') && name !== 'node_modules' }).sort()
  const rows = []
  const collected = []
  for (const [index, name] of names.entries()) {
    const { row, card } = await collectOne(path.join(dir, name), name, options)
    rows.push(row)
    if (card !== null) collected.push({ row, ...card })
    onProgress({ type: 'graded', index, total: names.length, row })
  }
  if (!rows.some(function isStudent (row) { return row.verdict !== 'skipped' })) {
    throw new TypeError(`no students' folders in ${dir}: each student's is a folder with its ${CARD_FILE} beside the file it graded ` +
      `(docs/grading-a-class.md)`)
  }
  markDuplicates(collected.map(function keysOf ({ row, doc }) { return { row, keys: [`sha256 ${doc.sha256}`, `card ${cardKey(doc)}`] } }))
  const verify = options.verify
    ? await verifyCards(collected, { ...options.verify, preset: options.preset, areas: options.areas ?? [...AREAS], onProgress })
    : null
  const table = {
    folder: dir, seed: options.seed, preset: options.preset, startedAt: new Date().toISOString(),
    labVersion: options.labVersion, command: options.command ?? null, rows
  }
  await writeTable(table, options.csv, options.html)
  return { rows, csv: options.csv, html: options.html, verify }
}

/** One entry as a row (collected, refused or skipped) and, when collected, its card, folder and file. */
async function collectOne (folder, name, options) {
  const notTaken = function notTaken (row) { return { row, card: null } }
  const entry = { name, path: folder }
  const stat = await fs.promises.lstat(folder)
  if (stat.isSymbolicLink()) return notTaken(refusedRow(entry, null, options.seed, 0, 'not collected: a symbolic link (a student\'s ' +
    'folder is a folder)'))
  if (!stat.isDirectory()) return notTaken(skippedRow({ ...entry, skipped: `not a student's folder: each is a folder with its ` +
    `${CARD_FILE} beside the file it graded` }, options.seed))
  const card = await readCard(path.join(folder, CARD_FILE))
  if (card.problem !== null) return notTaken(refusedRow(entry, null, options.seed, 0, `not collected: ${card.problem}`))
  const doc = card.doc
  const mismatch = gradedOtherwise(doc, options)
  if (mismatch !== null) return notTaken(refusedRow(entry, null, doc.seed, 0, `not collected: ${mismatch}`))
  const file = submissionBeside(folder, doc.handler)
  if (file.problem !== null) return notTaken(refusedRow(entry, null, doc.seed, 0, `not collected: ${file.problem}`))
  let digest
  try {
    digest = await fileDigest(file.path)
  } catch (err) {
    const why = err.code === 'ENOENT' ? `the card graded ${doc.handler}, which is not beside ` +
      `it` : err.reason ?? `${doc.handler} cannot be read (${err.code ?? err.message})`
    return notTaken(refusedRow(entry, null, doc.seed, 0, `not collected: ${why}`))
  }
  if (digest !== doc.sha256) {
    return notTaken(refusedRow(entry, digest, doc.seed, 0, `not collected: ${doc.handler} beside the card is not the file graded: its ` +
      `sha256 is ${digest}, the card's ${doc.sha256}`))
  }
  const row = rowOfCardJson({ name, path: file.path }, doc, digest)
  row.report = path.join(folder, CARD_FILE)
  row.notes = `collected: graded ${doc.date}`
  return { row, card: { doc, folder, file: file.path } }
}

/** What makes two cards one: all but the path it names (a card copied beside a renamed file is the same card). */
function cardKey (doc) {
  return createHash('sha256').update(JSON.stringify({ ...doc, handler: null })).digest('hex')
}

/** A card read as a regular file, no link followed, and held to the contract: `{ doc }` or `{ problem }`. */
async function readCard (file) {
  let handle
  try {
    handle = await fs.promises.open(file, READ_FLAGS)
  } catch (err) {
    if (err.code === 'ENOENT') return { doc: null, problem: `no ${CARD_FILE} in the folder` }
    if (err.code === 'ELOOP' || err.code === 'EMLINK') return { doc: null, problem: `${CARD_FILE} is a symbolic link, not a regular file` }
    return { doc: null, problem: `${CARD_FILE} cannot be opened (${err.code ?? err.message})` }
  }
  let text
  try {
    const stat = await handle.stat()
    if (!stat.isFile()) return { doc: null, problem: `${CARD_FILE} is not a regular file` }
    if (stat.size > MAX_CARD_BYTES) return { doc: null, problem: `${CARD_FILE} is larger than a card is` }
    text = await handle.readFile('utf8')
  } finally {
    await handle.close()
  }
  let doc
  try {
    doc = JSON.parse(text)
  } catch (err) {
    return { doc: null, problem: `${CARD_FILE} is not JSON (${err.message})` }
  }
  const problems = validateCardJson(doc)
  if (problems.length > 0) return { doc: null, problem: `${CARD_FILE} is not a --json card: ${problems.slice(0, 3).join('; ')}` }
  if (doc.service !== undefined) return { doc: null, problem: `${CARD_FILE} is a service's card (--url), not a submission's` }
  return { doc, problem: null }
}

/** Why a card was not graded as the teacher grades (seed, preset, areas, lab version), or null. */
function gradedOtherwise (doc, { seed, preset, areas = null, labVersion }) {
  if (doc.seed !== seed) return `graded with seed ${doc.seed}, not the class's ${seed} (--seed): other bodies`
  if (doc.preset !== preset) return `graded with the ${doc.preset} preset, not the class's ` +
    `${preset}${preset === 'quick' ? ' (--quick)' : ''}`
  if (doc.labVersion !== labVersion) return `graded by lab ${doc.labVersion}, not the class's ${labVersion}: ` +
    `grade with the same streamlab package`
  const classAreas = areas ?? AREAS
  const graded = Object.keys(doc.areas).sort().join(',')
  if (graded !== [...classAreas].sort().join(',')) return `graded the areas ${Object.keys(doc.areas).join(', ')}, not the class's ` +
    `${classAreas.join(', ')}${areas === null ? ' (all of them: --only for fewer)' : ' (--only)'}`
  return null
}

/** The file a card graded, inside the student's folder: not absolute, not leaving it, through no link. */
function submissionBeside (folder, handler) {
  const rel = path.normalize(handler)
  if (path.isAbsolute(handler) || rel === '..' || rel.startsWith(`..${path.sep}`) || rel === '.') {
    return { path: null, problem: `the card graded ${handler}: a path inside the student's folder is needed (grade the file by a ` +
      `relative path, from the repository's root)` }
  }
  const parts = rel.split(path.sep)
  let at = folder
  for (const part of parts.slice(0, -1)) {
    at = path.join(at, part)
    let stat
    try {
      stat = fs.lstatSync(at)
    } catch {
      return { path: null, problem: `the card graded ${handler}, which is not beside it` }
    }
    if (stat.isSymbolicLink()) return { path: null, problem: `the way to ${handler} passes through a symbolic link` }
  }
  return { path: path.join(folder, rel), problem: null }
}
