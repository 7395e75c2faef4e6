#!/usr/bin/env node
/**
 * The benchmark runner:
 *
 *   npm run bench -- ingest --sizes 10MB,100MB,500MB --concurrency 1 --routes bad,good --repeat 3
 *
 * Starts a fresh server per measurement (or targets --url), prints progress
 * and a table, and writes reports/<timestamp>/results.json, results.md and
 * report.html (charts).
 */
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { parseByteSize } from '../lib/units.js'
import { PROJECT_ROOT } from '../lib/options.js'
import { runIngestBench } from './ingest.js'
import { markdownTable, mib, fixed } from './table.js'
import { writeReport } from './report.js'

const USAGE = `Usage: npm run bench -- <experiment> [options]

Experiments:
  ingest   POST the same generated body to /bad and /good

Options (ingest):
  --sizes LIST        inflated sizes, e.g. 10MB,100MB,500MB (default 10MB,100MB,500MB)
  --concurrency LIST  uploads in flight, e.g. 1,10,50 (default 1)
  --requests N        uploads per measurement (default: the concurrency)
  --routes LIST       bad,good (default both)
  --format F          json | array | ndjson (default json)
  --repeat N          measurements per cell, fresh server each; medians reported (default 3)
  --url URL           measure a running server instead (peak RSS then comes from its answers)
  --out DIR           where reports go (default reports/<timestamp>)
  --server-flag FLAG  extra flag for the server processes (repeatable)
  -h, --help`

const EXIT_USAGE = 2

function list (text, parse) {
  return text.split(',').map(function item (s) { return s.trim() }).filter(Boolean).map(parse)
}

function positiveInteger (name) {
  return function parse (text) {
    const n = Number(text)
    if (!Number.isInteger(n) || n < 1) throw new TypeError(`--${name} takes positive integers, got "${text}"`)
    return n
  }
}

/** Normalise CLI flags into bench options; a TypeError names the bad flag. */
export function readBenchOptions (argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      sizes: { type: 'string', default: '10MB,100MB,500MB' },
      concurrency: { type: 'string', default: '1' },
      requests: { type: 'string' },
      routes: { type: 'string', default: 'bad,good' },
      format: { type: 'string', default: 'json' },
      repeat: { type: 'string', default: '3' },
      url: { type: 'string' },
      out: { type: 'string' },
      'server-flag': { type: 'string', multiple: true, default: [] },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help) return { help: true }
  const experiment = positionals[0]
  if (experiment !== 'ingest') throw new TypeError(`unknown experiment "${experiment ?? ''}": try ingest`)
  const routes = list(values.routes, function route (r) {
    if (r !== 'bad' && r !== 'good') throw new TypeError(`--routes takes bad and good, got "${r}"`)
    return r
  })
  if (!['json', 'array', 'ndjson'].includes(values.format)) throw new TypeError(`--format takes json, array or ndjson, got "${values.format}"`)
  return {
    experiment,
    sizes: list(values.sizes, parseByteSize),
    sizeLabels: list(values.sizes, String),
    concurrency: list(values.concurrency, positiveInteger('concurrency')),
    requests: values.requests === undefined ? null : positiveInteger('requests')(values.requests),
    routes,
    format: values.format,
    repeat: positiveInteger('repeat')(values.repeat),
    url: values.url ?? null,
    out: values.out ?? path.join(PROJECT_ROOT, 'reports', new Date().toISOString().replace(/[:.]/g, '-')),
    serverFlags: values['server-flag']
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

/** The table of an ingest run, and the ratios the lesson is about. */
export function ingestTable (cells) {
  const rows = cells.map(function row (c) {
    return [c.route, c.size, c.concurrency, fixed(c.mbPerSecond), mib(c.peakRss), mib(c.peakAboveIdle),
      fixed(c.latencyAvgMs, 0), `${c.ok}/${c.requests}`]
  })
  const table = markdownTable(['route', 'size', 'conc', 'MB/s', 'peak RSS MiB', 'above idle MiB', 'avg ms', 'ok'], rows)
  const notes = []
  for (const good of cells.filter(function isGood (c) { return c.route === 'good' })) {
    const bad = cells.find(function twin (c) { return c.route === 'bad' && c.bytes === good.bytes && c.concurrency === good.concurrency })
    if (!bad) continue
    const same = bad.summary && good.summary && JSON.stringify(bad.summary) === JSON.stringify(good.summary)
    notes.push(`- ${good.size} x${good.concurrency}: /good ${fixed(good.mbPerSecond / bad.mbPerSecond, 2)}x the MB/s of /bad, ` +
      `${fixed(bad.peakAboveIdle / good.peakAboveIdle, 1)}x less memory above idle; answers ${same ? 'identical' : 'DIFFER'}`)
  }
  return `${table}\n\n${notes.join('\n')}\n`
}

/** The three charts of the upload article, from an ingest run's cells. */
export function ingestCharts (cells) {
  const routes = [...new Set(cells.map(function route (c) { return c.route }))]
  const sizes = [...new Set(cells.map(function size (c) { return c.size }))]
  const concurrencies = [...new Set(cells.map(function conc (c) { return c.concurrency }))]
  function series (x, y, groupBySize) {
    const out = []
    for (const route of routes) {
      for (const size of groupBySize ? sizes : [null]) {
        const points = cells
          .filter(function inGroup (c) { return c.route === route && (size === null || c.size === size) && (groupBySize || c.concurrency === concurrencies[0]) })
          .map(function point (c) { return { x: x(c), y: y(c) } })
          .sort(function byX (a, b) { return a.x - b.x })
        if (points.length) out.push({ label: groupBySize && sizes.length > 1 ? `/${route} ${size}` : `/${route}`, points })
      }
    }
    return out
  }
  function toMiB (bytes) { return bytes === null ? null : bytes / 1048576 }
  return [
    { title: 'Server peak RSS above idle vs concurrency', x: 'concurrent uploads', y: 'MiB', series: series(function conc (c) { return c.concurrency }, function peak (c) { return toMiB(c.peakAboveIdle) }, true) },
    { title: 'Average latency vs concurrency', x: 'concurrent uploads', y: 'ms', series: series(function conc (c) { return c.concurrency }, function latency (c) { return c.latencyAvgMs }, true) },
    { title: `Throughput vs body size (concurrency ${concurrencies[0]})`, x: 'inflated MB', y: 'MB/s', series: series(function mb (c) { return c.bytes / 1e6 }, function speed (c) { return c.mbPerSecond }, false) }
  ]
}

async function main () {
  let options
  try {
    options = readBenchOptions(process.argv.slice(2))
  } catch (err) {
    process.stderr.write(`bench: ${err.message}\n\n${USAGE}\n`)
    return EXIT_USAGE
  }
  if (options.help) {
    process.stdout.write(USAGE + '\n')
    return 0
  }
  const started = new Date()
  const cells = await runIngestBench(options, progressPrinter(process.stderr))
  const text = ingestTable(cells)
  process.stdout.write('\n' + text)
  const meta = { experiment: options.experiment, started: started.toISOString(), node: process.version, cpus: os.availableParallelism(), options: { ...options, out: undefined } }
  const command = `npm run bench -- ${process.argv.slice(2).join(' ')}`
  const files = await writeReport(options.out, {
    title: 'Buffered vs streamed ingest',
    command,
    meta,
    markdown: text,
    charts: ingestCharts(cells),
    data: { cells }
  })
  process.stderr.write(`reports written: ${files.map(function shown (f) { return path.relative(PROJECT_ROOT, f) }).join(', ')}\n`)
  return 0
}

main().then(function exit (code) { process.exitCode = code }, function crash (err) {
  console.error(err)
  process.exitCode = 1
})
