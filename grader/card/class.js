/**
 * A class graded: every submission in a folder (grader/student/submission.js) in
 * turn, each as `npm run grade -- FILE` grades one, its row added to the
 * table and the table written again, so a run cut short keeps the rows it
 * had. Every submission meets the same bodies: one seed for the class, and
 * its documents generated once into a folder of the run's own.
 *
 * Whatever a submission is or does, it gets a row and the run goes on: one
 * the grader will not run (a link, a pipe, one that would run as root) is
 * `refused` with the reason; the grader's own failure on one is `error`; an
 * entry that is no submission (notes.txt) is a `skipped` row with the reason. A
 * name is data: each submission's report goes to a folder of its own, never
 * the table's files, never inside the class's folder. What the grader could
 * not write is its own failure (`problems`), not the student's row.
 */
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { DEFAULTS } from '../../lib/config/options.js'
import { newSeed, normalizeSeed } from '../checks/settings.js'
import { grade } from '../run/grade-handler.js'
import { LabCopy } from '../student/lab-copy.js'
import { findSubmissions } from '../student/submission.js'
import { submissionDigest } from '../student/digest.js'
import { labVersion } from '../student/lab-version.js'
import { errorRow, markDuplicates, refusedRow, rowOf, skippedRow } from './class-rows.js'
import { htmlBeside, PRIVATE_FILE_MODE, PRIVATE_FOLDER_MODE, writeTable } from './class-table.js'

/** How many report folders one name may share before the grader gives up on a suffix. */
const MAX_SUFFIX = 1000

/**
 * Grade every submission in `folder`, one at a time, and write the table.
 * @param {string} folder
 * @param {{ csv: string, html?: string, preset?: string, settings?: object, areas?: string[], seed?: number,
 *   contentType?: string, reportDir?: string, command?: string, isolation?: object, onProgress?: (event: object) => void,
 *   writeReport?: (dir: string, card: object) => Promise<string[]>, grade?: typeof grade }} options
 *   `csv`: the table's file; `html`: beside it by default (class.csv -> class.html); `reportDir`: where each
 *   submission's report goes (a folder per submission, written by `writeReport`); `isolation`: as grade()
 *   takes it (each submission may read only its own file or folder); `grade`: grade() itself unless a
 *   spec gives a stand-in (the class run's rows without a grading); `onProgress` gets
 *   { type: 'submission', index, total, name, etaMs } before each one graded (counted among those graded),
 *   { type: 'graded', index, total, row } after each entry, skipped ones too (counted among all entries),
 *   and each grading's own events with `submission` added
 * @returns {Promise<{ seed: number, rows: object[], csv: string, html: string, problems: string[] }>}
 *   `problems`: what the grader failed to write (a report, the table), each once
 * @throws {TypeError} before anything is graded: no submissions, or the table or the reports inside the class's folder
 */
export async function gradeClass (folder, options) {
  const csv = options.csv
  const html = options.html ?? htmlBeside(csv)
  const misplaced = classPlaceProblem(folder, { csv, html, reportDir: options.reportDir })
  if (misplaced !== null) throw new TypeError(misplaced)
  const submissions = await findSubmissions(folder)
  const gradable = submissions.filter(function isSubmission (s) { return s.skipped === null }).length
  if (gradable === 0) throw new TypeError(noSubmissions(folder, submissions))
  const seed = options.seed === undefined || options.seed === null ? newSeed() : normalizeSeed(options.seed)
  const onProgress = options.onProgress ?? function quiet () {}
  const table = {
    folder,
    seed,
    preset: options.preset ?? 'full',
    startedAt: new Date().toISOString(),
    labVersion: await labVersion(),
    command: options.command ?? null,
    rows: []
  }
  const problems = new Set()
  const reportFolder = options.reportDir ? reportFolders(options.reportDir, [csv, html]) : null
  const inputDir = path.join(DEFAULTS.dataDir, 'grade', 'inputs', `class-${randomUUID()}`)
  // one copy of the lab's code for the class, made at the first submission that needs it
  const labCopy = new LabCopy()
  const started = Date.now()
  try {
    let graded = 0
    for (const [index, submission] of submissions.entries()) {
      let row
      if (submission.skipped !== null) {
        // listed, never graded: no 'submission' event, no time of the run's
        row = skippedRow(submission, seed)
      } else {
        const etaMs = graded === 0 ? null : Math.round((Date.now() - started) / graded * (gradable - graded))
        onProgress({ type: 'submission', index: graded, total: gradable, name: submission.name, etaMs })
        row = await gradeOne(submission, { ...options, grade: options.grade ?? grade, seed, inputDir, labCopy, onProgress, reportFolder, problems })
          .catch(function graderFailed (err) { return errorRow(submission, null, seed, 0, `the grader failed: ${err?.message ?? err}`) })
        graded++
      }
      table.rows.push(row)
      markDuplicates(table.rows.map(function keysOf (r) {
        return { row: r, keys: r.sha256 === '' || r.verdict === 'skipped' ? [] : [`sha256 ${r.sha256}`] }
      }))
      try {
        await writeTable(table, csv, html)
      } catch (err) {
        // by its code: the message names a temporary file, and the same failure is said once
        problems.add(`the table was not written to ${csv}: ${err.code ? `${err.code} on ${err.syscall}` : err.message}`)
      }
      onProgress({ type: 'graded', index, total: submissions.length, row })
    }
  } finally {
    labCopy.close()
    await fs.promises.rm(inputDir, { recursive: true, force: true })
  }
  return { seed, rows: table.rows, csv, html, problems: [...problems] }
}

/** The usage error of a folder with nothing to grade, naming what was skipped and why. */
function noSubmissions (folder, entries) {
  const what = 'a submission is a .js, .mjs or .cjs file, or a folder with a package.json naming its module or an index.js'
  if (entries.length === 0) return `no submissions in ${folder}: ${what}`
  const skipped = entries.slice(0, 5).map(function said (e) { return `${e.name} (${e.skipped})` }).join('; ')
  return `no submissions in ${folder}: ${what}; skipped: ${skipped}${entries.length > 5 ? `, and ${entries.length - 5} more` : ''}`
}

/**
 * One submission as a row, whatever happens: refused before anything reads it (findSubmissions)
 * or when reading it is refused; refused when grade() will not run it (`NOT_GRADED`); graded;
 * `error` when grading throws anything else (the grader's own failure, not the handler's).
 * Its report is written beside: a report that cannot be written is noted and counted among the
 * grader's problems, and the row keeps its grade.
 */
async function gradeOne (submission, options) {
  const started = Date.now()
  const elapsed = function elapsed () { return Date.now() - started }
  if (submission.refused !== null) return refusedRow(submission, null, options.seed, elapsed(), submission.refused)
  let read
  try {
    read = await submissionDigest(submission.path)
  } catch (err) {
    if (err.code === 'NOT_GRADED') return refusedRow(submission, null, options.seed, elapsed(), err.reason)
    // unreadable to the grader (EACCES, say): the grading says why it does not load
    read = { sha256: null, skipped: [], sources: new Map() }
  }
  const notes = read.skipped.length === 0 ? [] : [`not read, not in the digest: ${read.skipped.join(', ')}`]
  let card
  try {
    card = await options.grade(submission.handler, {
      preset: options.preset,
      settings: options.settings,
      areas: options.areas,
      seed: options.seed,
      contentType: options.contentType,
      inputDir: options.inputDir,
      labCopy: options.labCopy,
      // what the grader reads of a line the process names: the bytes read here, before it ran
      sources: read.sources,
      // the process may read its own file or folder, not the other submissions beside it
      isolation: { ...options.isolation, submission: submission.path },
      onProgress: function forward (event) { options.onProgress({ ...event, submission: submission.name }) }
    })
  } catch (err) {
    if (err?.code === 'NOT_GRADED') return { ...refusedRow(submission, read.sha256, options.seed, elapsed(), err.reason ?? err.message), notes: notes.join('; ') }
    return { ...errorRow(submission, read.sha256, options.seed, elapsed(), `the grader failed: ${err?.message ?? err}`), notes: notes.join('; ') }
  }
  const row = rowOf(submission, card, read.sha256)
  if (options.reportFolder !== null && options.writeReport) {
    try {
      const dir = await options.reportFolder(submission.name)
      await options.writeReport(dir, card)
      await keepPrivate(dir)
      row.report = dir
    } catch (err) {
      notes.push(`no report: ${err.message}`)
      options.problems.add(`the report of ${submission.name} was not written: ${err.message}`)
    }
  }
  row.notes = notes.join('; ')
  return row
}

/**
 * Where the table and the reports may not go: inside the class's folder (a submission
 * could read them, and they would be submissions of the next run), or the CSV and the HTML
 * one file. Paths compared as the file system resolves them (links in the folders followed).
 * @param {string} folder the class's
 * @param {{ csv: string, html?: string, reportDir?: string }} places
 * @returns {string|null} what is wrong, or null
 */
export function classPlaceProblem (folder, { csv, html = htmlBeside(csv), reportDir }) {
  const classFolder = resolvedPath(folder)
  if (resolvedPath(csv) === resolvedPath(html)) return `the table's CSV and its HTML page would be one file (${csv}): give --csv a name ending in .csv`
  const places = [['the table (--csv)', csv], ['its HTML page', html], ['the reports (--out)', reportDir]]
  for (const [what, place] of places) {
    if (place && isInside(classFolder, resolvedPath(place))) return `${what} would be written inside the class's folder ${folder}, beside the submissions: choose a place outside it`
  }
  return null
}

/**
 * A report folder per submission, each distinct: the name made safe for a folder, then `-2`,
 * `-3` … after one already taken in this run, by the table's own files, or on disk. Compared
 * without case, as a case-insensitive disk would. Each folder is made here, mode 0700.
 * @param {string} reportDir
 * @param {string[]} tableFiles the CSV and the HTML: never a report's folder
 * @returns {(name: string) => Promise<string>}
 */
export function reportFolders (reportDir, tableFiles) {
  const taken = new Set()
  for (const file of tableFiles) {
    const rel = path.relative(path.resolve(reportDir), path.resolve(file))
    if (isRelativeInside(rel) && rel !== '') taken.add(rel.split(path.sep)[0].toLowerCase())
  }
  return async function reportFolder (name) {
    await fs.promises.mkdir(reportDir, { recursive: true, mode: PRIVATE_FOLDER_MODE })
    const base = folderName(name)
    for (let k = 1; k <= MAX_SUFFIX; k++) {
      const candidate = k === 1 ? base : `${base}-${k}`
      if (taken.has(candidate.toLowerCase())) continue
      taken.add(candidate.toLowerCase())
      const dir = path.join(reportDir, candidate)
      try {
        await fs.promises.mkdir(dir, { mode: PRIVATE_FOLDER_MODE })
        return dir
      } catch (err) {
        if (err.code !== 'EEXIST') throw err
      }
    }
    throw new Error(`no free report folder for ${base} under ${reportDir}`)
  }
}

/** A submission's name as a folder name: letters, digits, `.`, `-` and `_` only, at most 100 of them. */
function folderName (name) {
  return name.replace(/[^\w.-]+/g, '_').slice(0, 100)
}

/** The files a report writer left with the default mode, made the grader's alone. */
async function keepPrivate (dir) {
  for (const entry of await fs.promises.readdir(dir, { withFileTypes: true })) {
    if (entry.isFile()) await fs.promises.chmod(path.join(dir, entry.name), PRIVATE_FILE_MODE)
  }
}

/** An absolute path with the links of its nearest existing folder resolved: what a file there would be. */
function resolvedPath (place) {
  const absolute = path.resolve(place)
  const rest = []
  let at = absolute
  for (;;) {
    try {
      return path.join(fs.realpathSync(at), ...rest)
    } catch {
      const parent = path.dirname(at)
      if (parent === at) return absolute
      rest.unshift(path.basename(at))
      at = parent
    }
  }
}

function isInside (parent, child) {
  return isRelativeInside(path.relative(parent, child))
}

function isRelativeInside (rel) {
  return !path.isAbsolute(rel) && rel !== '..' && !rel.startsWith(`..${path.sep}`)
}
