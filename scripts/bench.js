#!/usr/bin/env node
/**
 * npm run bench -- <name> [options]: an experiment's bench (experiments/<name>/bench.js, through the
 * registry) or the hostile suite (scripts/hostile/). Prints progress and a table; writes the report
 * (reports/<timestamp>/: results.json, results.md, report.html and SVG charts) and the run's record
 * (docs/runs.md), kept by the lab it ran in, else here.
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
import { checkFiguresName } from '../lib/measure/figures.js'
import { loadBenches } from '../experiments/index.js'
import * as hostile from './hostile/bench.js'
import { keepFigures, measureStart, runScript, stamp } from './cli.js'

/** Every experiment's bench, from the registry, and the hostile suite. */
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

/** The bench and its normalised options; null for --help. */
function readBenchArgs (argv) {
  const name = argv[0]
  if (name === undefined || name === '-h' || name === '--help') return null
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
  if (values.help) return null
  checkFiguresName(values.figures)
  return {
    bench,
    figures: values.figures,
    out: values.out ?? path.join(outputRoot(), 'reports', stamp()),
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

async function main (args) {
  const started = new Date()
  const { loadBefore } = measureStart()
  const result = await args.bench.run(args.options, progressPrinter(process.stderr))
  process.stdout.write('\n' + result.markdown)
  const command = `npm run bench -- ${process.argv.slice(2).join(' ')}`
  const meta = {
    experiment: args.bench.name,
    started: started.toISOString(),
    node: process.version,
    cpus: os.availableParallelism(),
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    loadBefore,
    options: args.options
  }
  const { title, markdown, charts, data } = result
  const files = await writeReport(args.out, { title, command, meta, markdown, charts, data })
  files.push(...await keepFigures('bench', args.figures, { title, meta, markdown, data }))
  process.stderr.write(`reports written: ${files.map(displayPath).join(', ')}\n`)
  const kept = await keepRecord(args, result, started)
  process.stderr.write(`${kept.line}\n`)
  if (args.figures && kept.file !== null) {
    // the run the figures came from, beside them: the lesson that quotes them links its replay
    try {
      const lesson = await keepLessonRecord(kept.file, args.figures)
      process.stderr.write(`lesson run: ${displayPath(lesson)} (/?run=${LESSON_PREFIX}${args.figures})\n`)
    } catch (err) {
      process.stderr.write(`lesson run not kept: ${err.message}\n`)
    }
  }
  return 0
}

/**
 * The run's record, written by the lab the experiment ran in (its id is in the result), or here within
 * the lab's disk quota; one that cannot be written costs the bench nothing. A line saying where, and the file.
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
    if (saved === null) return { line: 'run record: none kept', file: null }
    return { line: `run record: ${displayPath(saved.path)}`, file: saved.path }
  } catch (err) {
    return { line: `run record not written: ${err.message}`, file: null }
  }
}

runScript('bench', { usage: usage(), readOptions: readBenchArgs, run: main })
