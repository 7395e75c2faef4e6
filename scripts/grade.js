#!/usr/bin/env node
/**
 * Grade your own handler, or a whole class:
 *
 *   npm run grade -- path/to/handler.js [--quick] [--seed N] [--json FILE] [--only AREAS] [--out DIR] [--port N] [--keep-open S]
 *   npm run grade -- path/to/folder/ --csv class.csv [--quick] [--seed N] [--only AREAS] [--out DIR]
 *   npm run grade -- --url http://127.0.0.1:PORT/ingest [--start "CMD" | --pid N] [--header "Name: value"]... [--allow-remote]
 *   ... [--content-type TYPE]: the media type the encodings are probed and bombed in
 *   ... [--junit FILE] [--baseline CARD.json [--tolerance 25%]] [--classroom]: for CI (grader/card/junit.js,
 *     baseline.js, classroom.js: GitHub Classroom's points, appended to $GITHUB_OUTPUT)
 *   npm run grade -- --collect DIR --seed N [--quick] [--only AREAS] [--csv FILE] [--verify K [--verify-seed S]]:
 *     a class's table from cards (grader/card/collect.js), K of them graded again here (verify.js)
 *
 * One handler: starts a lab with it at POST /student, runs the checks
 * (correctness, memory, speed, safety, resilience: grader/), prints the
 * grade card, writes results.json, results.md and report.html under
 * test-data/grade/<timestamp>/, and exits 0 only when every check passes
 * (1 when one fails, 2 for a usage error). A folder: grades each
 * submission in it in turn (grader/card/class.js), writes the table as CSV and
 * as HTML beside it, and each card's report in a folder of its own; exits
 * 0 only when every submission passes, 3 when the grader failed on one or
 * could not write a report or the table. A service (--url): the same checks
 * aimed at a running endpoint in any language, started by the grader
 * (--start, so it reads its memory), watched (--pid) or reached only over
 * HTTP (memory not judged: the card fails unless --only leaves memory out);
 * grader/service/. docs/lessons/grade.md reads the card with you.
 */
import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
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
import { EXIT_USAGE, USAGE, readGradeArgs } from './grade/args.js'

const EXIT_FAILED = 1
/** A class the grader itself failed on somewhere: a row it could not grade, a report or the table it could not write. */
const EXIT_GRADER = 3
/** Every check passed, but a figure is worse than the baseline card's by more than the tolerance (--baseline). */
const EXIT_BASELINE = 4
/** --collect --verify: a card disagrees with its submission graded here. */
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
  // the gate: this run's figures against the baseline card's, each line naming the baseline
  const gate = args.baselineDoc ? compareWithBaseline(cardJson(card), args.baselineDoc, { file: args.baseline, tolerance: args.tolerance }) : null
  if (gate !== null) process.stdout.write('\n' + baselineLines(gate).map(terminalText).join('\n') + '\n')
  const files = await writeGradeReport(args.out, card, command)
  const record = await keepCardRecord(card)
  if (record !== null) files.push(record)
  if (args.junit) {
    await fs.promises.mkdir(path.dirname(path.resolve(args.junit)), { recursive: true })
    await fs.promises.writeFile(args.junit, junitXml(card, { baseline: gate }))
    files.push(args.junit)
  }
  if (args.classroom) {
    const results = classroomResults(card)
    process.stdout.write(`classroom: ${pointsLine(results)}\n`)
    const file = await writeClassroom(results)
    if (file !== null) files.push(file)
  }
  if (args.json) {
    await fs.promises.mkdir(path.dirname(path.resolve(args.json)), { recursive: true })
    await fs.promises.writeFile(args.json, jsonText(cardJson(card), 2) + '\n')
    files.push(args.json)
  }
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

/**
 * The card of one handler or service. With --classroom, a grading that ends without one still
 * leaves GitHub Classroom's reporter results, in error, saying why (grader/card/classroom.js).
 */
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
  process.stdout.write('\n' + [classLines(`${result.rows.length - counts.skipped} submissions graded with seed ${result.seed}: ${verdictSummary(result.rows)}`, result.rows), ...problems].join('\n') + '\n')
  process.stderr.write(terminalText(`written: ${[result.csv, result.html].map(shown).join(', ')}, and a report folder per submission under ${shown(args.out)}`) + '\n')
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
  process.stdout.write('\n' + classLines(`${result.rows.length} entries collected for seed ${args.seed}: ${verdictSummary(result.rows)}`, result.rows) + '\n')
  if (result.verify !== null) process.stdout.write(terminalText(verifyLine(result.verify)) + '\n')
  process.stderr.write(terminalText(`written: ${[result.csv, result.html].map(shown).join(', ')}`) + '\n')
  if (result.verify !== null && result.verify.disagree.length > 0) return EXIT_DISAGREES
  if (counts.error > 0) return EXIT_GRADER
  return counts.pass === result.rows.length - counts.skipped ? 0 : EXIT_FAILED
}

/**
 * The card as a run record in the lab's runs folder (grader/card/card-record.js), within the lab's
 * disk quota: `npm run runs` lists and compares it, the dashboard's Runs panel shows it. One file
 * graded only: a class's cards stay in its reports, readable by the grader's user alone
 * (docs/grading-a-class.md). A record that cannot be written costs the grading nothing: the
 * reports are written, and the line says why.
 * @returns {Promise<string|null>} the record's path, null when none was written
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

/**
 * The --baseline card, read before anything is graded: a file that is no card, or a card of
 * another preset, is a usage error at once rather than after minutes of grading.
 * @returns {Promise<string|null>} the problem, or null (the card is then `args.baselineDoc`)
 */
async function loadBaseline (args) {
  const { doc, problem } = await readBaseline(args.baseline)
  if (problem !== null) return problem
  const refusal = baselineRefusal(doc, args.preset)
  if (refusal !== null) return `--baseline: ${refusal}`
  args.baselineDoc = doc
  return null
}

async function main () {
  let args
  try {
    args = readGradeArgs(process.argv.slice(2))
  } catch (err) {
    process.stderr.write(`grade: ${err.message}\n\n${USAGE}\n`)
    return EXIT_USAGE
  }
  if (args.help) {
    process.stdout.write(USAGE + '\n')
    return 0
  }
  if (args.baseline) {
    const problem = await loadBaseline(args)
    if (problem !== null) {
      process.stderr.write(terminalText(`grade: ${problem}`) + '\n')
      return EXIT_USAGE
    }
  }
  const command = `npm run grade -- ${process.argv.slice(2).join(' ')}`
  if (args.collect) return collectCards(args, command)
  return args.folder === null ? gradeOneFile(args, command) : gradeFolder(args, command)
}

// run as a command only: a module that imports this file starts nothing
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().then(function exit (code) { process.exitCode = code }, function crash (err) {
    // a handler the grader will not run (it would run as root, say) is the handler's outcome, not a crash
    const text = err?.code === 'NOT_GRADED' ? `grade: ${err.reason ?? err.message}` : String(err?.stack ?? err)
    process.stderr.write(text.split('\n').map(terminalText).join('\n') + '\n')
    process.exitCode = EXIT_FAILED
  })
}
