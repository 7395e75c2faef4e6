#!/usr/bin/env node
/**
 * The benchmark runner:
 *
 *   npm run bench -- <name> [options]
 *   npm run bench -- ingest --sizes 1KB,64KB,1MB,10MB,100MB,500MB --concurrency 1,10,100 --routes bad,good,express-json,streamparser-json
 *   npm run bench -- ingest --quick                     # the same on small bodies, in a minute
 *   npm run bench -- ingest --sizes 500MB --routes bad,good --repeat 3
 *
 * Prints progress and a table, and writes reports/<timestamp>/results.json,
 * results.md, report.html (charts) and each chart as SVG, and the run's record to
 * test-data/runs/ (docs/runs.md): by the lab it ran in for a bench made from an experiment,
 * else here. Each experiment's bench is its folder's
 * bench.js (experiments/<name>/bench.js, found through the registry); hostile is scripts/hostile/.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { DEFAULTS } from '../lib/config/options.js'
import { createDiskQuota } from '../lib/limits/disk-quota.js'
import { saveBenchRecord } from '../lib/runs/bench.js'
import { LESSON_PREFIX, keepLessonRecord } from '../lib/runs/lessons.js'
import { runsDir } from '../lib/runs/store.js'
import { displayPath } from '../lib/util/atomic-file.js'
import { outputRoot } from '../lib/util/project-root.js'
import { writeReport } from '../lib/measure/report.js'
import { checkFiguresName, writeFigures, figuresCommand } from '../lib/measure/figures.js'
import { loadBenches } from '../experiments/index.js'
import * as hostile from './hostile/bench.js'

const EXIT_USAGE = 2

/** Every experiment's bench, from the registry, and the hostile suite, a bench with no experiment of its own. */
const BENCHES = Object.freeze({ ...await loadBenches(), [hostile.name]: hostile })

function usage () {
  const names = Object.values(BENCHES).map(function line (b) { return `  ${b.name.padEnd(12)} ${b.summary}` }).join('\n')
  const details = Object.values(BENCHES).map(function text (b) { return b.usage }).join('\n\n')
  return `Usage: npm run bench -- <name> [options]

Benches:
${names}

Options (all):
  --out DIR           where reports go (default reports/<timestamp>)
  --figures NAME      also write docs/figures/NAME.json and NAME.md: the figures the docs quote,
                      and NAME.run.json: the run's record, which a lab replays as lesson-NAME
  -h, --help

${details}`
}

/**
 * Read the command line: the bench and its normalised options.
 * @throws {TypeError} naming the bad flag or bench
 */
function readBenchArgs (argv) {
  const name = argv[0]
  if (name === undefined || name === '-h' || name === '--help') return { help: true }
  const bench = BENCHES[name]
  if (!bench) throw new TypeError(`unknown experiment "${name}": try ${Object.keys(BENCHES).join(', ')}`)
  const { values } = parseArgs({
    args: argv.slice(1),
    options: {
      ...bench.options,
      out: { type: 'string' },
      figures: { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help) return { help: true }
  checkFiguresName(values.figures)
  return {
    bench,
    figures: values.figures,
    out: values.out ?? path.join(outputRoot(), 'reports', new Date().toISOString().replace(/[:.]/g, '-')),
    options: bench.normalize(values)
  }
}

function progressPrinter (stream) {
  let lastLength = 0
  return function report (event) {
    if (event.type === 'log') {
      if (stream.isTTY && lastLength) stream.write('\r' + ' '.repeat(lastLength) + '\r')
      stream.write(event.line + '\n')
      lastLength = 0
    } else if (event.type === 'progress') {
      const line = `[${event.done}/${event.total}] ${event.label}`
      if (stream.isTTY) {
        const width = 24
        const filled = Math.round(width * event.done / Math.max(1, event.total))
        const bar = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${line}`
        stream.write('\r' + bar.padEnd(lastLength))
        lastLength = bar.length
        if (event.done === event.total) { stream.write('\n'); lastLength = 0 }
      } else {
        stream.write(line + '\n')
      }
    }
  }
}

async function main () {
  let args
  try {
    args = readBenchArgs(process.argv.slice(2))
  } catch (err) {
    process.stderr.write(`bench: ${err.message}\n\n${usage()}\n`)
    return EXIT_USAGE
  }
  if (args.help) {
    process.stdout.write(usage() + '\n')
    return 0
  }
  const started = new Date()
  const loadBefore = os.loadavg()[0]
  const result = await args.bench.run(args.options, progressPrinter(process.stderr))
  process.stdout.write('\n' + result.markdown)
  const command = `npm run bench -- ${process.argv.slice(2).join(' ')}`
  const meta = { experiment: args.bench.name, started: started.toISOString(), node: process.version, cpus: os.availableParallelism(), memoryGiB: Math.round(os.totalmem() / 2 ** 30), loadBefore, options: args.options }
  const files = await writeReport(args.out, {
    title: result.title,
    command,
    meta,
    markdown: result.markdown,
    charts: result.charts,
    data: result.data
  })
  if (args.figures) files.push(...await writeFigures(args.figures, { title: result.title, command: figuresCommand('bench', process.argv.slice(2)), meta, markdown: result.markdown, data: result.data }))
  process.stderr.write(`reports written: ${files.map(displayPath).join(', ')}\n`)
  const kept = await keepRecord(args, result, started)
  process.stderr.write(`${kept.line}\n`)
  if (args.figures && kept.file !== null) {
    // the run the figures came from, beside them: the lesson that quotes them links its replay
    try {
      process.stderr.write(`lesson run: ${displayPath(await keepLessonRecord(kept.file, args.figures))} (/?run=${LESSON_PREFIX}${args.figures})\n`)
    } catch (err) {
      process.stderr.write(`lesson run not kept: ${err.message}\n`)
    }
  }
  return 0
}

/**
 * The run's record: written by the lab the experiment ran in (its id is in the result), or here
 * for a bench of fresh labs, within the lab's default disk quota. A record that cannot be
 * written costs the bench nothing: the reports are written.
 * @returns {Promise<{ line: string, file: string|null }>} a line saying where it is, and the file
 */
async function keepRecord (args, result, started) {
  if (typeof result.runId === 'string') {
    const file = path.join(runsDir(DEFAULTS.dataDir), `${result.runId}.json`)
    return { line: `run record: ${displayPath(file)} (written by the lab)`, file: fs.existsSync(file) ? file : null }
  }
  try {
    const diskQuota = createDiskQuota({ dir: DEFAULTS.dataDir, quota: DEFAULTS.diskQuota })
    const saved = await saveBenchRecord({
      dataDir: DEFAULTS.dataDir,
      keep: DEFAULTS.runs.keep,
      diskQuota,
      name: args.bench.name,
      title: result.title,
      params: args.options,
      startedAt: started.getTime(),
      endedAt: Date.now(),
      charts: result.charts,
      data: result.data
    })
    return saved === null ? { line: 'run record: none kept', file: null } : { line: `run record: ${displayPath(saved.path)}`, file: saved.path }
  } catch (err) {
    return { line: `run record not written: ${err.message}`, file: null }
  }
}

main().then(function exit (code) { process.exitCode = code }, function crash (err) {
  console.error(err)
  process.exitCode = 1
})
