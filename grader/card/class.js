/** A class graded: each submission in turn on one seed's bodies, the table written again after each (card/README.md). */
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

/** Grade every submission in `folder` and write the table (options: card/README.md); TypeError before grading a bad setup. */
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
    folder, seed, preset: options.preset ?? 'full', startedAt: new Date().toISOString(), labVersion: await labVersion(),
    command: options.command ?? null, rows: []
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
        const each = { ...options, grade: options.grade ?? grade, seed, inputDir, labCopy, onProgress, reportFolder, problems }
        row = await gradeOne(submission, each)
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

/** One submission as a row, whatever happens: refused, graded, or `error` when grading throws. */
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
      preset: options.preset, settings: options.settings, areas: options.areas, seed: options.seed,
      contentType: options.contentType, inputDir: options.inputDir, labCopy: options.labCopy,
      // what the grader reads of a line the process names: the bytes read here, before it ran
      sources: read.sources,
      // the process may read its own file or folder, not the other submissions beside it
      isolation: { ...options.isolation, submission: submission.path },
      onProgress: function forward (event) { options.onProgress({ ...event, submission: submission.name }) }
    })
  } catch (err) {
    const row = err?.code === 'NOT_GRADED'
      ? refusedRow(submission, read.sha256, options.seed, elapsed(), err.reason ?? err.message)
      : errorRow(submission, read.sha256, options.seed, elapsed(), `the grader failed: ${err?.message ?? err}`)
    return { ...row, notes: notes.join('; ') }
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

/** Why the table or reports may not go there (inside the class's folder, or CSV and HTML one file), or null. */
export function classPlaceProblem (folder, { csv, html = htmlBeside(csv), reportDir }) {
  const classFolder = resolvedPath(folder)
  if (resolvedPath(csv) === resolvedPath(html)) return `the table's CSV and its HTML page would be one file ` +
    `(${csv}): give --csv a name ending in .csv`
  const places = [['the table (--csv)', csv], ['its HTML page', html], ['the reports (--out)', reportDir]]
  for (const [what, place] of places) {
    if (place && isInside(classFolder, resolvedPath(place))) return `${what} would be written inside the class's folder ${folder}, ` +
      `beside the submissions: choose a place outside it`
  }
  return null
}

/** A distinct report folder (mode 0700) per name: safe characters, then `-2`, `-3` … compared without case. */
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
