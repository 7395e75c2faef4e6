/**
 * A class graded: every submission in a folder (grader/student/submission.js) in
 * turn, each as `npm run grade -- FILE` grades one, its row added to the
 * table and the table written again, so a run cut short keeps the rows it
 * had. Every submission meets the same bodies: one seed for the class, and
 * its documents generated once into a folder of the run's own.
 */
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { DEFAULTS } from '../../lib/config/options.js'
import { newSeed, normalizeSeed } from '../checks/settings.js'
import { grade } from '../run/grade-handler.js'
import { findSubmissions, labVersion, submissionDigest } from '../student/submission.js'
import { errorRow, rowOf } from './class-rows.js'
import { htmlBeside, writeTable } from './class-table.js'

/**
 * Grade every submission in `folder`, one at a time, and write the table.
 * @param {string} folder
 * @param {{ csv: string, html?: string, preset?: string, settings?: object, areas?: string[], seed?: number,
 *   reportDir?: string, command?: string, onProgress?: (event: object) => void,
 *   writeReport?: (dir: string, card: object) => Promise<string[]> }} options
 *   `csv`: the table's file; `html`: beside it by default (class.csv -> class.html); `reportDir`: where each
 *   submission's report goes (a folder per submission, written by `writeReport`); `onProgress` gets
 *   { type: 'submission', index, total, name, etaMs } before each, { type: 'graded', index, total, row }
 *   after, and each grading's own events with `submission` added
 * @returns {Promise<{ seed: number, rows: object[], csv: string, html: string }>}
 */
export async function gradeClass (folder, options) {
  const submissions = await findSubmissions(folder)
  if (submissions.length === 0) throw new TypeError(`no submissions in ${folder}: a submission is a .js file, or a folder with an index.js`)
  const seed = options.seed === undefined || options.seed === null ? newSeed() : normalizeSeed(options.seed)
  const csv = options.csv
  const html = options.html ?? htmlBeside(csv)
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
  const inputDir = path.join(DEFAULTS.dataDir, 'grade', 'inputs', `class-${randomUUID()}`)
  const started = Date.now()
  try {
    for (const [index, submission] of submissions.entries()) {
      const graded = table.rows.length
      const etaMs = graded === 0 ? null : Math.round((Date.now() - started) / graded * (submissions.length - graded))
      onProgress({ type: 'submission', index, total: submissions.length, name: submission.name, etaMs })
      const row = await gradeOne(submission, { ...options, seed, inputDir, onProgress })
      table.rows.push(row)
      await writeTable(table, csv, html)
      onProgress({ type: 'graded', index, total: submissions.length, row })
    }
  } finally {
    await fs.promises.rm(inputDir, { recursive: true, force: true })
  }
  return { seed, rows: table.rows, csv, html }
}

/**
 * One submission graded, as a row. A grading that throws (the grader's own
 * failure, not the handler's) is a row too, with verdict `error` and the message.
 */
async function gradeOne (submission, options) {
  const started = Date.now()
  const digest = await submissionDigest(submission.path).catch(function unreadable () { return null })
  try {
    const card = await grade(submission.handler, {
      preset: options.preset,
      settings: options.settings,
      areas: options.areas,
      seed: options.seed,
      inputDir: options.inputDir,
      onProgress: function forward (event) { options.onProgress({ ...event, submission: submission.name }) }
    })
    const row = rowOf(submission, card, digest)
    if (options.reportDir && options.writeReport) {
      row.report = path.join(options.reportDir, safeName(submission.name))
      await options.writeReport(row.report, card)
    }
    return row
  } catch (err) {
    return errorRow(submission, digest, options.seed, Date.now() - started, `the grader failed: ${err.message}`)
  }
}

/** A submission's name as a folder name for its report. */
function safeName (name) {
  return name.replace(/[^\w.-]+/g, '_')
}
