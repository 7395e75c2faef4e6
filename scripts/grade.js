#!/usr/bin/env node
/**
 * Grade your own handler:
 *
 *   npm run grade -- path/to/handler.js [--quick] [--json FILE] [--only AREAS] [--out DIR] [--port N] [--keep-open S]
 *
 * Starts a lab with the handler at POST /student, runs the checks
 * (correctness, memory, speed, safety, resilience: grader/), prints the
 * grade card, writes results.json, results.md and report.html under
 * test-data/grade/<timestamp>/, and exits 0 only when every check passes
 * (1 when one fails, 2 for a usage error). docs/lessons/grade.md reads the
 * card with you.
 */
import fs from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { DEFAULTS, PROJECT_ROOT } from '../lib/options.js'
import { AREAS, grade } from '../grader/index.js'
import { cardJson, formatCard } from '../grader/card.js'
import { writeGradeReport } from '../grader/report.js'

const EXIT_FAILED = 1
const EXIT_USAGE = 2

const USAGE = `Usage: npm run grade -- <handler.js> [options]

  <handler.js>     an ES module whose default export is an Express handler (req, res),
                   sync or async, or an express.Router() with a post('/') route
  --quick          smaller bodies and bombs: about a minute (the full run: about five)
  --json FILE      also write the card as JSON: { handler, checks: [{ area, name, pass, figure, limit, hint }] }
  --only AREAS     only these areas, comma-separated: correctness, memory, speed, safety, resilience
  --out DIR        where the report goes (default test-data/grade/<timestamp>)
  --port N         the lab's port (default: any free one); open http://127.0.0.1:N/ to watch the run
  --keep-open S    keep the lab up S seconds after the run, for the dashboard
  -h, --help

Exit code: 0 when every check passes, 1 when one fails, 2 for a usage error.
The checks and how to read the card: docs/lessons/grade.md`

/**
 * Read the command line.
 * @param {string[]} argv
 * @returns {{ help: true } | { handler: string, areas: string[]|null, preset: string, json: string|null, out: string,
 *   port: number, keepOpenMs: number }}
 * @throws {TypeError} naming the bad flag
 */
export function readGradeArgs (argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      quick: { type: 'boolean', default: false },
      json: { type: 'string' },
      only: { type: 'string' },
      out: { type: 'string' },
      port: { type: 'string', default: '0' },
      'keep-open': { type: 'string', default: '0' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help) return { help: true }
  if (positionals.length !== 1) throw new TypeError(positionals.length === 0 ? 'give the handler to grade' : `one handler at a time, got ${positionals.join(', ')}`)
  const handler = positionals[0]
  if (!fs.existsSync(handler)) throw new TypeError(`no such file: ${handler}`)
  const port = Number(values.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new TypeError(`--port takes 0 to 65535, got ${values.port}`)
  const keepOpen = Number(values['keep-open'])
  if (!Number.isFinite(keepOpen) || keepOpen < 0 || keepOpen > 3600) throw new TypeError(`--keep-open takes 0 to 3600 seconds, got ${values['keep-open']}`)
  const stamp = new Date().toISOString().replace(/[:.]/g, '-')
  const areas = values.only === undefined ? null : values.only.split(',').map(function trim (a) { return a.trim() }).filter(Boolean)
  for (const area of areas ?? []) {
    if (!AREAS.includes(area)) throw new TypeError(`--only takes ${AREAS.join(', ')}; got "${area}"`)
  }
  return {
    handler,
    areas,
    preset: values.quick ? 'quick' : 'full',
    json: values.json ?? null,
    out: values.out ?? path.join(DEFAULTS.dataDir, 'grade', stamp),
    port,
    keepOpenMs: Math.round(keepOpen * 1000)
  }
}

function progressPrinter (stream) {
  return function report (event) {
    if (event.type === 'lab') stream.write(`lab at ${event.url}/ (the dashboard), the handler at POST /student (${event.kind})\n`)
    else if (event.type === 'check') stream.write(`[${event.done + 1}/${event.total}] ${event.area}: ${event.check}\n`)
    else if (event.type === 'keep-open') stream.write(`the lab stays up ${event.ms / 1000} s: ${event.url}/\n`)
  }
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
  const card = await grade(args.handler, {
    preset: args.preset,
    areas: args.areas ?? undefined,
    port: args.port,
    keepOpenMs: args.keepOpenMs,
    onProgress: progressPrinter(process.stderr)
  })
  process.stdout.write('\n' + formatCard(card))
  const files = await writeGradeReport(args.out, card, `npm run grade -- ${process.argv.slice(2).join(' ')}`)
  if (args.json) {
    await fs.promises.mkdir(path.dirname(path.resolve(args.json)), { recursive: true })
    await fs.promises.writeFile(args.json, JSON.stringify(cardJson(card), null, 2) + '\n')
    files.push(args.json)
  }
  process.stderr.write(`written: ${files.map(function shown (f) { return path.relative(PROJECT_ROOT, path.resolve(f)) }).join(', ')}\n`)
  return card.passed ? 0 : EXIT_FAILED
}

// run as a command, not when a spec imports readGradeArgs
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().then(function exit (code) { process.exitCode = code }, function crash (err) {
    console.error(err)
    process.exitCode = EXIT_FAILED
  })
}
