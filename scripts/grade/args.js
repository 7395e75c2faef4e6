/** npm run grade's usage, and its command line read: each flag checked, a bad one refused with a TypeError naming it. */
import fs from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { DEFAULTS } from '../../lib/config/options.js'
import {
  AREAS, AREA_POINTS, classifyUrl, classPlaceProblem, normalizeSeed, remoteRefusal, DEFAULT_TOLERANCE, parseTolerance, parseVerify
} from '../../grader/index.js'
import { checkFiguresName } from '../../lib/measure/figures.js'
import { formatMemory, parseByteSize } from '../../lib/util/units.js'

/** An HTTP token (RFC 9110), lower case: a header's name, each half of a media type. */
const TOKEN = "[!#$%&'*+.^_`|~0-9a-z-]+"
const HEADER_NAME = new RegExp(`^${TOKEN}$`)
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}$`)
/** The least --memory-limit: the lab's own process, serving the handler, must fit in it. */
const MIN_MEMORY_LIMIT = 256 * 1024 * 1024

export const USAGE = `Usage: npm run grade -- <handler.js> [options]
       npm run grade -- <folder> --csv class.csv [options]
       npm run grade -- --url http://127.0.0.1:PORT/PATH [--start "CMD" | --pid N] [options]
       npm run grade -- --collect DIR --seed N [--quick] [--only AREAS] [--csv FILE] [--verify K]
       (installed as a package: npx streamlab grade … takes the same arguments)

  <handler.js>     an ES module (.js, .mjs) whose default export is an Express handler (req, res), sync or
                   async, or an express.Router() with a post('/') route; or CommonJS (.cjs)
  <folder>         a class: every .js, .mjs and .cjs file in it, and every folder with a package.json naming
                   its module or an index.js, graded in turn: a row each in the CSV and the HTML table beside it
  --quick          smaller bodies and bombs: about a minute a handler (docs/lessons/grade.md, "Run it")
  --seed N         draw the bodies from seed N (0 to 4294967295): the card names its seed; default random
  --json FILE      also write the card as JSON (handler, verdict, seed, checks, measures: docs/grading-in-ci.md)
  --figures NAME   also write docs/figures/NAME.json and NAME.md: the card as the docs quote it
  --junit FILE     also write the card as JUnit XML: a testsuite per area, a testcase per check (not a folder)
  --classroom      also append GitHub Classroom's autograding results (each area ${AREA_POINTS} points) to the
                   file $GITHUB_OUTPUT names, and print the points (not with a folder)
  --baseline CARD  fail (exit 4) when a memory slope, a peak or the speed ratio is worse than this earlier
                   --json card's by more than the tolerance; a card of another preset is refused
  --tolerance P    with --baseline or --verify: how much worse is allowed, in percent
                   (default ${DEFAULT_TOLERANCE * 100}%; under each measure's noise floor never fails)
  --collect DIR    the class table from cards graded elsewhere, DIR/<student>/card.json beside the file it
                   graded; a card is refused unless its sha256, seed (--seed, needed), preset, areas, lab
                   version, checks and figures' ranges are the class's
  --verify K       with --collect: grade K of the cards' submissions again here, on a fresh seed, and refuse
                   each card that disagrees (a verdict, or a figure better by more than --tolerance)
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
  --content-type T the media type the safety checks probe each encoding in and send its bombs in (default:
                   a Content-Type --header gives, else the first of application/json, application/octet-stream
                   taken)
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

/** The command line: null for --help, else one of `handler`, `folder`, `service` and `collect` set, with the common flags. */
export function readGradeArgs (argv) {
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
      'allow-remote': { type: 'boolean' },
      'content-type': { type: 'string' },
      junit: { type: 'string' },
      classroom: { type: 'boolean' },
      baseline: { type: 'string' },
      tolerance: { type: 'string' },
      collect: { type: 'string' },
      verify: { type: 'string' },
      'verify-seed': { type: 'string' },
      'memory-limit': { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help) return null
  goesWith(values, 'tolerance', ['baseline', 'verify'], 'the card a grading is held to')
  goesWith(values, 'verify', ['collect'], 'the cards to grade again')
  goesWith(values, 'verify-seed', ['verify'], 'it draws the cards to grade again')
  if (values.collect !== undefined) return readCollectArgs(values, positionals)
  if (values.url !== undefined) return readServiceArgs(values, positionals)
  for (const flag of ['start', 'pid', 'header', 'allow-remote']) goesWith(values, flag, ['url'], 'the service to grade')
  if (positionals.length === 0) throw new TypeError('give the handler to grade, or a folder of them')
  if (positionals.length > 1) throw new TypeError(`one handler or folder at a time, got ${positionals.join(', ')}`)
  const target = positionals[0]
  if (!fs.existsSync(target)) throw new TypeError(`no such file or folder: ${target}`)
  const isFolder = fs.statSync(target).isDirectory()
  const common = readCommon(values)
  if (isFolder) {
    if (values.json !== undefined || values.figures !== undefined) {
      throw new TypeError('--json and --figures write one card: a class writes each card in its report folder, the table in --csv')
    }
    if (values.junit !== undefined || values.baseline !== undefined || values.classroom) {
      throw new TypeError('--junit, --classroom and --baseline are for one card: grade one handler or service with them ' +
        '(each student\'s CI, docs/grading-in-ci.md)')
    }
    if (common.port !== 0 || common.keepOpenMs !== 0) throw new TypeError('--port and --keep-open watch one handler: grade it alone')
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

/** A service grading (--url): the URL checked (a remote one refused without --allow-remote), --start or --pid, the headers. */
function readServiceArgs (values, positionals) {
  if (positionals.length > 0) throw new TypeError(`--url grades a service: no handler or folder beside it (got ${positionals.join(', ')})`)
  if (values.csv !== undefined) throw new TypeError('--csv writes a class\'s table: give a folder of submissions')
  const target = classifyUrl(values.url)
  if (!target.ok) throw new TypeError(`--url: ${target.problem}`)
  if (!target.loopback && !values['allow-remote']) throw new TypeError(remoteRefusal(target.url))
  if (values.start !== undefined && values.pid !== undefined) throw new TypeError('give --start or --pid, not both')
  if (values.start !== undefined && values.start.trim() === '') throw new TypeError('--start needs a command')
  let pid = null
  if (values.pid !== undefined) {
    pid = Number(values.pid)
    if (!Number.isSafeInteger(pid) || pid < 1) throw new TypeError(`--pid takes a process id, got ${values.pid}`)
  }
  if ((values.start !== undefined || pid !== null) && !target.loopback) {
    throw new TypeError('--start and --pid are for a service on this machine: its URL must be a loopback one')
  }
  const headers = {}
  for (const line of values.header ?? []) {
    const colon = line.indexOf(':')
    const name = colon > 0 ? line.slice(0, colon).trim().toLowerCase() : ''
    if (!HEADER_NAME.test(name)) throw new TypeError(`--header takes "Name: value", got ${JSON.stringify(line)}`)
    headers[name] = line.slice(colon + 1).trim()
  }
  const common = readCommon(values)
  return {
    ...common,
    handler: null,
    folder: null,
    service: { url: target.url.href, command: values.start ?? null, pid, headers, allowRemote: values['allow-remote'] === true }
  }
}

/** A class built from cards (--collect DIR): the seed is needed (a card of other bodies is refused); the table goes outside DIR. */
function readCollectArgs (values, positionals) {
  if (positionals.length > 0) throw new TypeError(`--collect reads cards: no handler or folder beside it (got ${positionals.join(', ')})`)
  const grades = values.verify === undefined ? ['content-type', 'memory-limit'] : []
  const verifying = values.verify === undefined ? '' : ' and --verify grades them as the class grades'
  const why = `--collect reads the cards students' CI wrote${verifying}`
  for (const flag of ['url', 'start', 'pid', 'header', 'json', 'figures', 'junit', 'classroom', 'baseline', ...grades]) {
    if (values[flag] !== undefined) throw new TypeError(`--${flag} grades one target: ${why}`)
  }
  if (values.seed === undefined) throw new TypeError('--collect needs the class\'s --seed: a card graded with other bodies is refused')
  const dir = values.collect
  if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new TypeError(`--collect takes a folder of students', got ${dir}`)
  const common = readCommon(values)
  const csv = values.csv ?? path.join(common.out, 'class.csv')
  const misplaced = classPlaceProblem(dir, { csv, reportDir: common.out })
  if (misplaced !== null) throw new TypeError(misplaced)
  const verify = values.verify === undefined ? null : parseVerify(values.verify, values['verify-seed'])
  return { ...common, collect: dir, csv, verify, handler: null, folder: null, service: null }
}

/** Refuse `flag` given without any of `partners`. */
function goesWith (values, flag, partners, why) {
  if (values[flag] === undefined || partners.some(function given (p) { return values[p] !== undefined })) return
  throw new TypeError(`--${flag} goes with ${partners.map(function named (p) { return `--${p}` }).join(' or ')}: ${why}`)
}

/** The flags a handler and a service share. */
function readCommon (values) {
  const port = Number(values.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new TypeError(`--port takes 0 to 65535, got ${values.port}`)
  const keepOpen = Number(values['keep-open'])
  if (!(keepOpen >= 0 && keepOpen <= 3600)) throw new TypeError(`--keep-open takes 0 to 3600 seconds, got ${values['keep-open']}`)
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
    classroom: values.classroom === true,
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
  if (!MEDIA_TYPE.test(type)) throw new TypeError(`--content-type takes a media type such as application/json, got ${JSON.stringify(text)}`)
  return type
}

function readFiguresName (name) {
  if (name === undefined) return null
  checkFiguresName(name)
  return name
}
