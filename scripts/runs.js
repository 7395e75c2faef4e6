#!/usr/bin/env node
/** npm run runs: list, compare and export the run records kept in test-data/runs/ (docs/runs.md; commands and exit codes: USAGE). */
import fs from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { DEFAULTS } from '../lib/config/options.js'
import { runInvalid } from '../lib/errors/index.js'
import { RECORD_MAX_BYTES, RUN_ID, readRunRecord } from '../lib/runs/format.js'
import { createRunStore, readRecordAs, runsDir } from '../lib/runs/store.js'
import { createLessonRuns } from '../lib/runs/lessons.js'
import { compareRecords, judgeFailIf, parseFailIf } from '../lib/runs/compare.js'
import { SITE_ROWS, compareSites } from '../lib/runs/site-compare.js'
import { runPage } from '../lib/runs/run-page.js'
import { runPageName } from '../lib/runs/run-page-data.js'
import { markdownTable } from '../lib/measure/table.js'
import { displayPath } from '../lib/util/atomic-file.js'
import { formatDifference, formatFigure, formatRatio, formatSpread, formatWithRange } from '../lib/runs/figure-text.js'
import { formatBytes, formatMemory } from '../lib/util/units.js'
import { terminalText } from '../lib/util/escape.js'
import { EXIT_USAGE, runScript } from './cli.js'

const EXIT_FAILED = 1

const USAGE = `Usage: npm run runs -- list [--dir DIR]
       npm run runs -- compare <a> <b> [--all] [--fail-if RULE]... [--dir DIR]
       npm run runs -- export <run> [--out FILE] [--dir DIR]

  list             the run records kept, newest first: id, experiment, status, date, Node, size
  compare A B      each route's peak above idle, throughput and p99 latency in runs A and B (ids,
                   unique id prefixes, paths of record files, or a lesson's run, lesson-zip-bomb):
                   both, B/A, B - A, and whether the difference is inside the spread of the
                   repeats where the runs have repeats; then each route's allocation sites
                   that moved most (matched by file:line and function): MiB allocated over
                   the run and the most held, in A, B and B - A
  --all            compare every figure the runs report, not only those three, and list
                   ${SITE_ROWS.all} sites a route, not ${SITE_ROWS.some}
  --fail-if RULE   exit 1 when RULE holds for B against A (repeatable): ROUTE.FIGURE, an operator
                   (> >= < <=) and a threshold: a change in percent ("good.peak>+10%"), a ratio
                   ("*.latency>1.5x", * for every route) or a difference ("bad.peak>+20MiB", "+50ms")
  export RUN       write RUN as one HTML page that draws it as the dashboard does and opens
                   from disk with no lab and no network (Chart.js and the record inside)
  --out FILE       where export writes (default streamlab-run-<id>.html here)
  --dir DIR        where the records are (default test-data/runs)
  -h, --help

Exit codes: 0; 1 when a --fail-if rule holds; 2 for a usage error, or runs that cannot be read.`

class UsageError extends Error {}

function readArgs (argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      all: { type: 'boolean' },
      'fail-if': { type: 'string', multiple: true },
      dir: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help || positionals.length === 0) return null
  const [command, ...rest] = positionals
  const dir = path.resolve(values.dir ?? runsDir(DEFAULTS.dataDir))
  if (values.out !== undefined && command !== 'export') throw new UsageError('--out goes with export')
  if (command === 'export' && rest.length !== 1) throw new UsageError(`export takes one run, got ${rest.length}`)
  if (command === 'list' && rest.length > 0) throw new UsageError(`list takes no arguments, got ${rest.join(' ')}`)
  const compareOnly = values.all || values['fail-if']
  if (compareOnly && (command === 'export' || command === 'list')) throw new UsageError('--all and --fail-if go with compare')
  if (command === 'export') return { command, dir, run: rest[0], out: values.out ?? null }
  if (command === 'list') return { command, dir }
  if (command === 'compare') {
    if (rest.length !== 2) throw new UsageError(`compare takes two runs, got ${rest.length}`)
    return { command, dir, runs: rest, all: values.all === true, rules: (values['fail-if'] ?? []).map(parseFailIf) }
  }
  throw new UsageError(`unknown command "${command}": list, compare or export`)
}

/** A run named by a record file's path, an id in the folder or a prefix of one: UsageError when it names none or several. */
async function loadRun (named, dir) {
  const lessons = createLessonRuns()
  if (lessons.has(named)) return lessons.read(named)
  let file
  // a run named by its id in the folder is the file of that name, and its record must say so (store.js)
  let id = null
  if (named.includes('/') || named.includes(path.sep) || named.endsWith('.json')) {
    file = path.resolve(named)
    if (!fs.existsSync(file)) throw new UsageError(`no file ${named}`)
  } else {
    if (!RUN_ID.test(named)) throw new UsageError(`"${named}" is neither a run id nor a file`)
    const files = fs.existsSync(dir) ? fs.readdirSync(dir) : []
    const names = files.filter(function isRecord (n) { return n.endsWith('.json') && !n.startsWith('.') })
    const matches = names.includes(`${named}.json`) ? [`${named}.json`] : names.filter(function prefixed (n) { return n.startsWith(named) })
    if (matches.length === 0) throw new UsageError(`no run "${named}" in ${displayPath(dir)} (npm run runs -- list)`)
    if (matches.length > 1) throw new UsageError(`"${named}" names ${matches.length} runs in ${displayPath(dir)}: give more of the id`)
    file = path.join(dir, matches[0])
    id = matches[0].slice(0, -'.json'.length)
  }
  const size = fs.statSync(file).size
  const shown = displayPath(file)
  // not read at all past the bound: a record is never that large
  if (size > RECORD_MAX_BYTES) throw runInvalid(shown, '(file)', `is ${size} bytes, over the ${RECORD_MAX_BYTES} a record may be`)
  const text = await fs.promises.readFile(file)
  return id === null ? readRunRecord(text, shown) : readRecordAs(text, id, shown)
}

function describeRun (label, id, record) {
  const { where: w, run } = record
  const date = new Date(run.startedAt).toISOString().slice(0, 16).replace('T', ' ')
  return `${label}: ${id}  ${terminalText(run.experiment)} (${run.status}, ${run.source})  ${date}  ` +
    `Node ${terminalText(w.node.replace(/^v/, ''))}, ${terminalText(`${w.platform}-${w.arch}`)}, ${w.cores} cores, ` +
    `${formatMemory(w.memoryBytes)}${w.portable ? ', portable' : ''}`
}

function shownValue (value) {
  const text = value === undefined ? 'none' : terminalText(JSON.stringify(value))
  return text.length > 40 ? `${text.slice(0, 39)}…` : text
}

async function list (dir) {
  const store = createRunStore({ dir, keep: Number.MAX_SAFE_INTEGER })
  const runs = await store.list()
  if (runs.length === 0) return `No run records in ${displayPath(dir)}.`
  const rows = runs.map(function row (r) {
    // the message without "<id> is not a run record this lab reads: ", which the row says
    if (r.invalid) return [r.id, 'NOT A RECORD', '', '', '', formatBytes(r.bytes), r.invalid.slice(r.invalid.indexOf(': ') + 2)]
    return [r.id, r.experiment, r.status, r.date.slice(0, 16).replace('T', ' '), r.node, formatBytes(r.bytes), r.routes.join(', ')]
  }).map(function escaped (cells) { return cells.map(terminalText) })
  const table = markdownTable(['id', 'experiment', 'status', 'date (UTC)', 'node', 'size', 'routes'], rows)
  return `${table}\n\n${runs.length} in ${displayPath(dir)}`
}

async function compare (args) {
  const [a, b] = await Promise.all(args.runs.map(function load (named) { return loadRun(named, args.dir) }))
  const compared = compareRecords(a, b, { all: args.all })
  const lines = [describeRun('A', args.runs[0], a), describeRun('B', args.runs[1], b)]
  if (a.run.experiment !== b.run.experiment) lines.push(`! different experiments: ${a.run.experiment} and ${b.run.experiment}`)
  if (compared.params.length > 0) lines.push(`params differ: ${differences(compared.params)}`)
  if (compared.where.length > 0) lines.push(`machines differ: ${differences(compared.where)}`)
  lines.push('')
  if (compared.rows.length === 0) {
    lines.push('No route or cell has figures in both runs.')
  } else {
    const repeats = compared.rows.some(function hasSpread (r) { return r.spread !== null })
    const rows = compared.rows.map(function row (r) {
      const cells = [terminalText(r.key), terminalText(r.label), formatWithRange(r.a), formatWithRange(r.b), formatRatio(r.ratio)]
      cells.push(formatDifference(r.unit, r.difference))
      if (repeats) cells.push(formatSpread(r.spread))
      return cells
    })
    const header = ['route', 'figure', 'A', 'B', 'B/A', 'B − A']
    if (repeats) header.push('repeats')
    lines.push(markdownTable(header, rows))
  }
  if (compared.onlyA.length > 0) lines.push(`only in A: ${terminalText(compared.onlyA.join(', '))}`)
  if (compared.onlyB.length > 0) lines.push(`only in B: ${terminalText(compared.onlyB.join(', '))}`)
  lines.push(...sitesMoved(compareSites(a, b, { all: args.all })))
  let failed = false
  for (const rule of args.rules) {
    let verdicts
    try {
      verdicts = judgeFailIf(rule, a, b)
    } catch (err) {
      throw new UsageError(err.message)
    }
    for (const v of verdicts) {
      failed ||= v.failed
      const figures = `${formatFigure(v.a.unit, v.a.value)} → ${formatFigure(v.b.unit, v.b.value)}`
      lines.push(`${v.failed ? 'FAIL' : 'pass'} ${rule.text} on ${terminalText(v.key)}: ${ruleChange(rule, v)} (${figures})`)
    }
  }
  return { text: lines.join('\n'), code: failed ? EXIT_FAILED : 0 }
}

/** Each difference a params or machine line names, `name a → b`. */
function differences (list) {
  return list.map(function shown (d) { return `${terminalText(d.name)} ${shownValue(d.a)} → ${shownValue(d.b)}` }).join('; ')
}

/** How B moved from A in a --fail-if rule's own terms. */
function ruleChange (rule, v) {
  if (v.value === null) return 'n/a'
  if (rule.kind === 'percent') return `${v.value >= 0 ? '+' : ''}${v.value.toFixed(1)}%`
  return rule.kind === 'ratio' ? `${v.value.toFixed(2)}x` : formatDifference(v.a.unit, v.value)
}

/** The sites that moved, a table per route; a line for a run without sites. */
function sitesMoved (sites) {
  const lines = []
  if (sites.routes.length > 0) lines.push('', 'Sites that moved (MiB allocated over the run, and the most held at once):')
  const mib = function mib (v) { return v === null ? '–' : formatFigure('bytes', v) }
  for (const { route, rows, more } of sites.routes) {
    const header = ['route', 'site', 'kind', 'allocated A', 'allocated B', 'B − A', 'held A', 'held B', 'B − A']
    lines.push('', markdownTable(header, rows.map(function row (r) {
      return [terminalText(`/${route}`), terminalText(r.line), r.kinds, mib(r.allocated.a), mib(r.allocated.b),
        formatDifference('bytes', r.allocated.difference), mib(r.held.a), mib(r.held.b), formatDifference('bytes', r.held.difference)]
    })))
    const listsMore = rows.length < SITE_ROWS.all ? ' (--all lists more)' : ''
    if (more > 0) lines.push(`${more} more site${more === 1 ? '' : 's'} of /${terminalText(route)}${listsMore}`)
  }
  for (const run of sites.without) {
    lines.push(`no allocation sites in ${run}: a record from before the lab kept them, or sampling was off (--allocation-sampling)`)
  }
  return lines
}

async function exportRun (args) {
  const record = await loadRun(args.run, args.dir)
  const out = path.resolve(args.out ?? runPageName(record))
  const html = runPage(record)
  await fs.promises.writeFile(out, html)
  return `Wrote ${displayPath(out)} (${formatBytes(Buffer.byteLength(html))}): run ${record.id}, ` +
    `${terminalText(record.run.experiment)}, as one page that opens from disk, with no lab and no network.`
}

async function main (args) {
  try {
    if (args.command === 'list') {
      say(process.stdout, await list(args.dir))
      return 0
    }
    if (args.command === 'export') {
      say(process.stdout, await exportRun(args))
      return 0
    }
    const { text, code } = await compare(args)
    say(process.stdout, text)
    return code
  } catch (err) {
    if (err instanceof UsageError || err.type === 'run.invalid') {
      say(process.stderr, `runs: ${err.message}`)
      return EXIT_USAGE
    }
    throw err
  }
}

/**
 * Lines to the terminal. A record's strings are anyone's: each is escaped where it is written
 * (terminalText, a line break in it too), and each line again here, for what a message quotes.
 */
function say (stream, text) {
  stream.write(`${text.split('\n').map(terminalText).join('\n')}\n`)
}

// a crash exits 2, not 1: that says a --fail-if rule held
runScript('runs', { usage: USAGE, readOptions: readArgs, run: main, crashCode: EXIT_USAGE })
