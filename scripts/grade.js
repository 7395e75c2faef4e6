#!/usr/bin/env node
/**
 * npm run grade: one handler, a class's folder, a running service (--url), or a class's cards
 * collected (--collect); the flags and exit codes are USAGE (scripts/grade/args.js), the checks
 * grader/, and docs/lessons/grade.md reads the card with you.
 */
import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { DEFAULTS } from '../lib/config/options.js'
import { createDiskQuota } from '../lib/limits/disk-quota.js'
import { keepLessonRecord } from '../lib/runs/lessons.js'
import {
  cardJson, cardTable, countVerdicts, formatCard, grade, gradeClass, gradeService, saveCardRecord, terminalText,
  verdictSummary, writeGradeReport, baselineLines, baselineRefusal, collectClass, compareWithBaseline, htmlBeside,
  junitXml, labVersion, readBaseline, classLines, progressPrinter, verifyLine, appendClassroomOutput, classroomError, classroomResults,
  pointsLine
} from '../grader/index.js'
import { writeFigures, figuresCommand } from '../lib/measure/figures.js'
import { jsonText } from '../lib/util/escape.js'
import { USAGE, readGradeArgs } from './grade/args.js'
import { EXIT_USAGE, isMain, runScript } from './cli.js'

// what each exit code means: USAGE
const EXIT_FAILED = 1
const EXIT_GRADER = 3
const EXIT_BASELINE = 4
const EXIT_DISAGREES = 5

async function gradeOneFile (args, command) {
  const loadBefore = os.loadavg()[0]
  const options = {
    preset: args.preset,
    settings: args.settings,
    areas: args.areas ?? undefined,
    seed: args.seed ?? undefined,
    contentType: args.contentType ?? undefined,
    port: args.port,
    keepOpenMs: args.keepOpenMs,
    onProgress: progressPrinter(process.stderr)
  }
  const card = await gradeTarget(args, options)
  process.stdout.write('\n' + formatCard(card))
  const baseline = { file: args.baseline, tolerance: args.tolerance }
  const gate = args.baselineDoc ? compareWithBaseline(cardJson(card), args.baselineDoc, baseline) : null
  if (gate !== null) process.stdout.write('\n' + baselineLines(gate).map(terminalText).join('\n') + '\n')
  const files = await writeGradeReport(args.out, card, command)
  const record = await keepCardRecord(card)
  if (record !== null) files.push(record)
  if (args.junit) files.push(await writeFile(args.junit, junitXml(card, { baseline: gate })))
  if (args.classroom) {
    const results = classroomResults(card)
    process.stdout.write(`classroom: ${pointsLine(results)}\n`)
    const file = await writeClassroom(results)
    if (file !== null) files.push(file)
  }
  if (args.json) files.push(await writeFile(args.json, jsonText(cardJson(card), 2) + '\n'))
  if (args.figures) {
    files.push(...await writeFigures(args.figures, {
      title: `Grade card of ${card.handler}`,
      command: figuresCommand('grade', process.argv.slice(2)),
      meta: { experiment: 'grade', started: card.startedAt, loadBefore },
      markdown: cardTable(cardJson(card)),
      data: { card: cardJson(card) }
    }))
    // the grading the figures came from, beside them, as a bench keeps its run (lib/runs/lessons.js)
    if (record !== null) {
      try {
        files.push(await keepLessonRecord(record, args.figures))
      } catch (err) {
        process.stderr.write(`lesson run not kept: ${err.message}\n`)
      }
    }
  }
  process.stderr.write(`written: ${files.map(shown).join(', ')}\n`)
  if (!card.passed) return EXIT_FAILED
  return gate === null || gate.passed ? 0 : EXIT_BASELINE
}

/** The card of one handler or service; with --classroom, a grading that ends without one leaves results in error saying why. */
async function gradeTarget (args, options) {
  try {
    return args.service ? await gradeService({ ...options, ...args.service }) : await grade(args.handler, options)
  } catch (err) {
    if (args.classroom) await writeClassroom(classroomError(err?.reason ?? err?.message ?? String(err), args.areas))
    throw err
  }
}

/** --classroom: the results appended to $GITHUB_OUTPUT for the reporter; null when it is not set. */
async function writeClassroom (results) {
  const file = await appendClassroomOutput(results, process.env)
  if (file === null) process.stderr.write('--classroom: GITHUB_OUTPUT is not set (GitHub Actions sets it): the results were not written\n')
  return file
}

async function gradeFolder (args, command) {
  const result = await gradeClass(args.folder, {
    csv: args.csv,
    preset: args.preset,
    settings: args.settings,
    areas: args.areas ?? undefined,
    seed: args.seed ?? undefined,
    contentType: args.contentType ?? undefined,
    reportDir: args.out,
    command,
    writeReport: function writeCardReport (dir, card) { return writeGradeReport(dir, card, command) },
    onProgress: progressPrinter(process.stderr)
  })
  const counts = countVerdicts(result.rows)
  // the grader's own failures: not a student's row, and the exit code says so
  const problems = result.problems.map(function said (problem) { return terminalText(`grader: ${problem}`) })
  const graded = `${result.rows.length - counts.skipped} submissions graded with seed ${result.seed}: ${verdictSummary(result.rows)}`
  process.stdout.write('\n' + [classLines(graded, result.rows), ...problems].join('\n') + '\n')
  const written = `written: ${[result.csv, result.html].map(shown).join(', ')}, and a report folder per submission under ${shown(args.out)}`
  process.stderr.write(terminalText(written) + '\n')
  if (result.problems.length > 0 || counts.error > 0) return EXIT_GRADER
  return counts.pass === result.rows.length - counts.skipped ? 0 : EXIT_FAILED
}

/** A class's table from the cards in a folder (grader/card/collect.js): nothing graded, every card checked. */
async function collectCards (args, command) {
  const result = await collectClass(args.collect, {
    csv: args.csv,
    html: htmlBeside(args.csv),
    seed: args.seed,
    preset: args.preset,
    areas: args.areas,
    labVersion: await labVersion(),
    command,
    verify: args.verify && { ...args.verify, tolerance: args.tolerance, settings: args.settings, contentType: args.contentType },
    onProgress: progressPrinter(process.stderr)
  })
  const counts = countVerdicts(result.rows)
  const collected = `${result.rows.length} entries collected for seed ${args.seed}: ${verdictSummary(result.rows)}`
  process.stdout.write('\n' + classLines(collected, result.rows) + '\n')
  if (result.verify !== null) process.stdout.write(terminalText(verifyLine(result.verify)) + '\n')
  process.stderr.write(terminalText(`written: ${[result.csv, result.html].map(shown).join(', ')}`) + '\n')
  if (result.verify !== null && result.verify.disagree.length > 0) return EXIT_DISAGREES
  if (counts.error > 0) return EXIT_GRADER
  return counts.pass === result.rows.length - counts.skipped ? 0 : EXIT_FAILED
}

/**
 * One file's card as a run record (grader/card/card-record.js), within the lab's disk quota; a
 * class's cards stay in its reports (docs/grading-a-class.md). A record that cannot be written
 * costs the grading nothing. Returns its path, or null.
 */
async function keepCardRecord (card) {
  try {
    const diskQuota = createDiskQuota({ dir: DEFAULTS.dataDir, quota: DEFAULTS.diskQuota })
    const saved = await saveCardRecord(card, { dataDir: DEFAULTS.dataDir, keep: DEFAULTS.runs.keep, diskQuota })
    return saved === null ? null : saved.path
  } catch (err) {
    process.stderr.write(`run record not written: ${err.message}\n`)
    return null
  }
}

/** A path as the person who typed the command sees it: relative to where they are. */
function shown (file) {
  return path.relative(process.cwd(), path.resolve(file)) || '.'
}

/** Write a file the command line named, its folder made; returns its name. */
async function writeFile (file, text) {
  await fs.promises.mkdir(path.dirname(path.resolve(file)), { recursive: true })
  await fs.promises.writeFile(file, text)
  return file
}

/** The --baseline card, read before minutes of grading: the problem, or null with the card in `args.baselineDoc`. */
async function loadBaseline (args) {
  const { doc, problem } = await readBaseline(args.baseline)
  if (problem !== null) return problem
  const refusal = baselineRefusal(doc, args.preset)
  if (refusal !== null) return `--baseline: ${refusal}`
  args.baselineDoc = doc
  return null
}

async function run (args) {
  if (args.baseline) {
    const problem = await loadBaseline(args)
    if (problem !== null) {
      process.stderr.write(terminalText(`grade: ${problem}`) + '\n')
      return EXIT_USAGE
    }
  }
  const command = `npm run grade -- ${process.argv.slice(2).join(' ')}`
  try {
    if (args.collect) return await collectCards(args, command)
    return args.folder === null ? await gradeOneFile(args, command) : await gradeFolder(args, command)
  } catch (err) {
    // a handler the grader will not run (it would run as root, say) is the handler's outcome, not a crash
    if (err?.code !== 'NOT_GRADED') throw err
    process.stderr.write(terminalText(`grade: ${err.reason ?? err.message}`) + '\n')
    return EXIT_FAILED
  }
}

if (isMain(import.meta.url)) runScript('grade', { usage: USAGE, readOptions: readGradeArgs, run })
