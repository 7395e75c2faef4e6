#!/usr/bin/env node
/**
 * Grade your own handler, or a whole class:
 *
 *   npm run grade -- path/to/handler.js [--quick] [--seed N] [--json FILE] [--only AREAS] [--out DIR] [--port N] [--keep-open S]
 *   npm run grade -- path/to/folder/ --csv class.csv [--quick] [--seed N] [--only AREAS] [--out DIR]
 *   npm run grade -- --url http://127.0.0.1:PORT/ingest [--start "CMD" | --pid N] [--header "Name: value"]... [--allow-remote]
 *   ... [--content-type TYPE]: the media type the encodings are probed and bombed in
 *   ... [--junit FILE] [--baseline CARD.json [--tolerance 25%]]: for CI (grader/card/junit.js, baseline.js)
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
import { parseArgs } from 'node:util'
import { DEFAULTS } from '../lib/config/options.js'
import { createDiskQuota } from '../lib/limits/disk-quota.js'
import { keepLessonRecord } from '../lib/runs/lessons.js'
import {
  AREAS, cardJson, cardTable, classifyUrl, classPlaceProblem, countVerdicts, formatCard, grade, gradeClass, gradeService,
  normalizeSeed, remoteRefusal, saveCardRecord, terminalText, verdictSummary, writeGradeReport,
  baselineLines, baselineRefusal, collectClass, compareWithBaseline, DEFAULT_TOLERANCE, htmlBeside, junitXml, labVersion,
  parseTolerance, readBaseline, classLines, progressPrinter, parseVerify, verifyLine
} from '../grader/index.js'
import { checkFiguresName, writeFigures, figuresCommand } from '../lib/measure/figures.js'
import { formatMemory, parseByteSize } from '../lib/util/units.js'

const EXIT_FAILED = 1
/** The least --memory-limit: the lab's own process, serving the handler, must fit in it. */
const MIN_MEMORY_LIMIT = 256 * 1024 * 1024
const EXIT_USAGE = 2
/** A class the grader itself failed on somewhere: a row it could not grade, a report or the table it could not write. */
const EXIT_GRADER = 3
/** Every check passed, but a figure is worse than the baseline card's by more than the tolerance (--baseline). */
const EXIT_BASELINE = 4
/** --collect --verify: a card disagrees with its submission graded here. */
const EXIT_DISAGREES = 5

const USAGE = `Usage: npm run grade -- <handler.js> [options]
       npm run grade -- <folder> --csv class.csv [options]
       npm run grade -- --url http://127.0.0.1:PORT/PATH [--start "CMD" | --pid N] [options]
       npm run grade -- --collect DIR --seed N [--quick] [--only AREAS] [--csv FILE] [--verify K]
       (installed as a package: npx streamlab grade … takes the same arguments)

  <handler.js>     an ES module (.js, .mjs) whose default export is an Express handler (req, res),
                   sync or async, or an express.Router() with a post('/') route; or CommonJS (.cjs)
  <folder>         a class: every .js, .mjs and .cjs file in it, and every folder in it with a
                   package.json naming its module (exports ".", main) or an index.js, .mjs or .cjs,
                   graded one at a time; one row each in the CSV and in an HTML table beside it;
                   anything else is a row "skipped", with the reason
  --quick          smaller bodies and bombs: about a minute a handler, the full run two to three
                   (measured on a 2-core machine: docs/lessons/grade.md, "Run it")
  --seed N         draw the bodies from seed N (0 to 4294967295): the card names the seed of every
                   run, and --seed with it sends the same bodies again; by default a new random seed
  --json FILE      also write the card as JSON: { handler, verdict, preset, seed, date, durationMs,
                   labVersion, sha256, areas, encodings, checks: [{ area, name, pass, figure, limit, hint }],
                   measures: [{ area, check, name, value, unit, better }] }
  --figures NAME   also write docs/figures/NAME.json and NAME.md: the card as the docs quote it
  --junit FILE     also write the card as JUnit XML, for CI: a testsuite per area, a testcase per
                   check, a failure with the figure, the limit and the hint (not with a folder)
  --baseline CARD  hold this run to an earlier --json card: fail (exit 4) when a memory slope, a peak
                   or the speed ratio is worse than the baseline's by more than the tolerance; a
                   baseline of another preset is refused, another lab version or seed is said
  --tolerance P    with --baseline or --verify: how much worse is allowed, in percent of the card's
                   figure (default ${DEFAULT_TOLERANCE * 100}%; a difference under each measure's noise floor never fails)
  --collect DIR    build the class table from cards graded elsewhere: DIR/<student>/card.json beside
                   the file it graded; a card is refused unless its sha256 matches that file, its
                   seed (--seed, needed), preset (--quick), areas (--only) and lab version are the
                   class's, its checks are the grader's and each figure is in its range
  --verify K       with --collect: grade K of the cards' submissions again here, drawn at random, and
                   refuse each card that disagrees (an area's verdict, or a figure better than measured
                   here by more than --tolerance)
  --verify-seed S  with --verify: draw the same K cards again
  --csv FILE       with a folder: the table's file (default <out>/class.csv); the HTML table goes beside it
  --only AREAS     only these areas, comma-separated: correctness, memory, speed, safety, resilience
  --out DIR        where the report goes (default test-data/grade/<timestamp>; a class: a folder per submission)
  --port N         the lab's port (default: any free one); open http://127.0.0.1:N/ to watch the run
  --keep-open S    keep the lab up S seconds after the run, for the dashboard
  --url URL        grade a service's ingest endpoint, any language (loopback only, unless --allow-remote)
  --start "CMD"    the lab starts it (PORT from the URL in its environment), reads its memory, stops it
  --pid N          or watches one already running (never signalled); with neither, memory is not judged
                   and fails: add --only correctness,speed,safety,resilience
  --header "N: V"  sent with every body (repeat it): a token, Content-Type: application/json
  --content-type T before the safety checks a small document goes in each encoding (gzip, deflate,
                   br, zstd where Node has it, identity) and each one taken gets its bombs: in media
                   type T (default: a Content-Type --header gives, else application/json, else
                   application/octet-stream, the first it accepts one in); a handler or a service
  --allow-remote   aim at a URL that is not loopback (the card says so; its memory cannot be read)
  --memory-limit S the grader's memory budget (default a quarter of the machine, 1 to 4 GiB; at least
                   256MiB): a handler or a started service past it is killed, from its first byte
  -h, --help

Exit code: 0 when every check passes (a class: every submission, skipped entries aside; memory not
judged is not a pass), 1 when one fails (a class: or a submission or a card is refused), 2 for a usage
error (a remote URL without --allow-remote, a baseline that is not a card or of another preset, say),
3 when the grader failed on a class (an error row, a report or the table not written), 4 when every
check passed but a figure is worse than the --baseline card's (docs/grading-in-ci.md), 5 when a card
disagrees with its submission graded again (--verify).
The checks and how to read the card: docs/lessons/grade.md`

/**
 * Read the command line.
 * @param {string[]} argv
 * @returns {{ help: true } | { handler: string|null, folder: string|null, service: object|null, areas: string[]|null,
 *   preset: string, seed: number|null, json: string|null, csv: string|null, out: string, port: number, keepOpenMs: number }}
 *   one of `handler`, `folder` and `service` (readServiceArgs); `csv` is set for a folder
 * @throws {TypeError} naming the bad flag
 */
function readGradeArgs (argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      quick: { type: 'boolean', default: false },
      seed: { type: 'string' },
      json: { type: 'string' },
      figures: { type: 'string' },
      csv: { type: 'string' },
      only: { type: 'string' },
      out: { type: 'string' },
      port: { type: 'string', default: '0' },
      'keep-open': { type: 'string', default: '0' },
      url: { type: 'string' },
      start: { type: 'string' },
      pid: { type: 'string' },
      header: { type: 'string', multiple: true },
      'allow-remote': { type: 'boolean', default: false },
      'content-type': { type: 'string' },
      junit: { type: 'string' },
      baseline: { type: 'string' },
      tolerance: { type: 'string' },
      collect: { type: 'string' },
      verify: { type: 'string' },
      'verify-seed': { type: 'string' },
      'memory-limit': { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help) return { help: true }
  if (values.tolerance !== undefined && values.baseline === undefined && values.verify === undefined) throw new TypeError('--tolerance goes with --baseline or --verify: the card a grading is held to')
  if (values.collect === undefined && values.verify !== undefined) throw new TypeError('--verify goes with --collect: the cards to grade again')
  if (values['verify-seed'] !== undefined && values.verify === undefined) throw new TypeError('--verify-seed goes with --verify: it draws the cards to grade again')
  if (values.collect !== undefined) return readCollectArgs(values, positionals)
  if (values.url !== undefined) return readServiceArgs(values, positionals)
  for (const flag of ['start', 'pid', 'header']) {
    if (values[flag] !== undefined) throw new TypeError(`--${flag} goes with --url: the service to grade`)
  }
  if (values['allow-remote']) throw new TypeError('--allow-remote goes with --url: the service to grade')
  if (positionals.length !== 1) throw new TypeError(positionals.length === 0 ? 'give the handler to grade, or a folder of them' : `one handler or folder at a time, got ${positionals.join(', ')}`)
  const target = positionals[0]
  if (!fs.existsSync(target)) throw new TypeError(`no such file or folder: ${target}`)
  const isFolder = fs.statSync(target).isDirectory()
  const common = readCommon(values)
  if (isFolder) {
    if (values.json !== undefined || values.figures !== undefined) throw new TypeError('--json and --figures write one card: with a folder, each card is in its report folder (results.json), and the table in --csv')
    if (values.junit !== undefined || values.baseline !== undefined) throw new TypeError('--junit and --baseline are for one card: grade one handler or service with them (each student\'s CI, docs/grading-in-ci.md)')
    if (common.port !== 0 || common.keepOpenMs !== 0) throw new TypeError('--port and --keep-open watch one handler: grade the submission on its own to watch it')
  } else if (values.csv !== undefined) {
    throw new TypeError('--csv writes a class\'s table: give a folder of submissions')
  }
  const csv = isFolder ? values.csv ?? path.join(common.out, 'class.csv') : null
  if (isFolder) {
    const misplaced = classPlaceProblem(target, { csv, reportDir: common.out })
    if (misplaced !== null) throw new TypeError(misplaced)
  }
  return {
    ...common,
    handler: isFolder ? null : target,
    folder: isFolder ? target : null,
    csv,
    service: null
  }
}

/**
 * The command line of a service grading (--url): the URL checked (a remote
 * one refused without --allow-remote), --start or --pid, the headers.
 * @returns {{ service: { url: string, command: string|null, pid: number|null, headers: Record<string, string>,
 *   allowRemote: boolean }, areas: string[]|null, preset: string, seed: number|null, json: string|null, out: string,
 *   port: number, keepOpenMs: number, handler: null, folder: null }}
 * @throws {TypeError} naming the bad flag
 */
function readServiceArgs (values, positionals) {
  if (positionals.length > 0) throw new TypeError(`--url grades a service: no handler or folder beside it (got ${positionals.join(', ')})`)
  if (values.csv !== undefined) throw new TypeError('--csv writes a class\'s table: give a folder of submissions')
  const target = classifyUrl(values.url)
  if (!target.ok) throw new TypeError(`--url: ${target.problem}`)
  if (!target.loopback && !values['allow-remote']) throw new TypeError(remoteRefusal(target.url))
  if (values.start !== undefined && values.pid !== undefined) throw new TypeError('give --start or --pid, not both: the lab either starts the service or watches one that runs')
  if (values.start !== undefined && values.start.trim() === '') throw new TypeError('--start needs a command')
  let pid = null
  if (values.pid !== undefined) {
    pid = Number(values.pid)
    if (!Number.isSafeInteger(pid) || pid < 1) throw new TypeError(`--pid takes a process id, got ${values.pid}`)
  }
  if ((values.start !== undefined || pid !== null) && !target.loopback) throw new TypeError('--start and --pid are for a service on this machine: its URL must be a loopback one')
  const headers = {}
  for (const line of values.header ?? []) {
    const colon = line.indexOf(':')
    const name = colon > 0 ? line.slice(0, colon).trim().toLowerCase() : ''
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name)) throw new TypeError(`--header takes "Name: value", got ${JSON.stringify(line)}`)
    headers[name] = line.slice(colon + 1).trim()
  }
  const common = readCommon(values)
  return {
    ...common,
    handler: null,
    folder: null,
    service: { url: target.url.href, command: values.start ?? null, pid, headers, allowRemote: values['allow-remote'] }
  }
}

/**
 * The command line of a class built from cards (--collect DIR): the teacher's seed (needed: a
 * card of other bodies is refused), preset and areas; the table's place, outside DIR.
 * @returns {{ collect: string, seed: number, preset: string, areas: string[]|null, csv: string, out: string,
 *   handler: null, folder: null, service: null }}
 * @throws {TypeError} naming the bad flag
 */
function readCollectArgs (values, positionals) {
  if (positionals.length > 0) throw new TypeError(`--collect builds a table from cards: no handler or folder beside it (got ${positionals.join(', ')})`)
  const grades = values.verify === undefined ? ['content-type', 'memory-limit'] : []
  for (const flag of ['url', 'start', 'pid', 'header', 'json', 'figures', 'junit', 'baseline', ...grades]) {
    if (values[flag] !== undefined) throw new TypeError(`--${flag} grades one target: --collect reads the cards students' CI wrote${values.verify === undefined ? '' : ' and --verify grades them as the class grades'}`)
  }
  if (values.seed === undefined) throw new TypeError('--collect needs the class\'s --seed: a card graded with other bodies is refused')
  const dir = values.collect
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new TypeError(`--collect takes a folder of students' folders, got ${dir}`)
  const common = readCommon(values)
  const csv = values.csv ?? path.join(common.out, 'class.csv')
  const misplaced = classPlaceProblem(dir, { csv, reportDir: common.out })
  if (misplaced !== null) throw new TypeError(misplaced)
  return { ...common, collect: dir, csv, verify: values.verify === undefined ? null : parseVerify(values.verify, values['verify-seed']), handler: null, folder: null, service: null }
}

/** The flags a handler and a service share. */
function readCommon (values) {
  const port = Number(values.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new TypeError(`--port takes 0 to 65535, got ${values.port}`)
  const keepOpen = Number(values['keep-open'])
  if (!Number.isFinite(keepOpen) || keepOpen < 0 || keepOpen > 3600) throw new TypeError(`--keep-open takes 0 to 3600 seconds, got ${values['keep-open']}`)
  let seed = null
  if (values.seed !== undefined) {
    try {
      seed = normalizeSeed(values.seed)
    } catch (err) {
      throw new TypeError(`--seed: ${err.message}`, { cause: err })
    }
  }
  const areas = values.only === undefined ? null : values.only.split(',').map(function trim (a) { return a.trim() }).filter(Boolean)
  for (const area of areas ?? []) {
    if (!AREAS.includes(area)) throw new TypeError(`--only takes ${AREAS.join(', ')}; got "${area}"`)
  }
  const stamp = new Date().toISOString().replace(/[:.]/g, '-')
  return {
    areas,
    contentType: readContentType(values['content-type']),
    preset: values.quick ? 'quick' : 'full',
    seed,
    json: values.json ?? null,
    junit: values.junit ?? null,
    baseline: values.baseline ?? null,
    tolerance: values.tolerance === undefined ? DEFAULT_TOLERANCE : parseTolerance(values.tolerance),
    figures: readFiguresName(values.figures),
    out: values.out ?? path.join(DEFAULTS.dataDir, 'grade', stamp),
    port,
    keepOpenMs: Math.round(keepOpen * 1000),
    settings: values['memory-limit'] === undefined ? undefined : { memoryBudget: readMemoryLimit(values['memory-limit']) }
  }
}

/** --memory-limit: the grader's budget, at least MIN_MEMORY_LIMIT (the lab's own process must fit). */
function readMemoryLimit (text) {
  let bytes
  try {
    bytes = parseByteSize(text)
  } catch {
    throw new TypeError(`--memory-limit takes a size such as 1GiB or 512MiB, got ${JSON.stringify(text)}`)
  }
  if (bytes < MIN_MEMORY_LIMIT) throw new TypeError(`--memory-limit: at least ${formatMemory(MIN_MEMORY_LIMIT)}, got ${text}`)
  return bytes
}

/** --content-type: a media type, `type/subtype`, without parameters; null when not given. */
function readContentType (text) {
  if (text === undefined) return null
  const type = text.trim().toLowerCase()
  if (!/^[!#$%&'*+.^_`|~0-9a-z-]+\/[!#$%&'*+.^_`|~0-9a-z-]+$/.test(type)) throw new TypeError(`--content-type takes a media type such as application/json, got ${JSON.stringify(text)}`)
  return type
}

function readFiguresName (name) {
  if (name === undefined) return null
  checkFiguresName(name)
  return name
}

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
  const card = args.service ? await gradeService({ ...options, ...args.service }) : await grade(args.handler, options)
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
  if (args.json) {
    await fs.promises.mkdir(path.dirname(path.resolve(args.json)), { recursive: true })
    await fs.promises.writeFile(args.json, JSON.stringify(cardJson(card), null, 2) + '\n')
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
