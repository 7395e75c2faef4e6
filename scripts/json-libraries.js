#!/usr/bin/env node
/**
 * Which streaming JSON library the textbook route (POST /streamparser-json) is built on: each
 * candidate's parse speed (inflated MB/s) and RSS growth on the lab's generated JSON, each in a
 * fresh process (the method: scripts/README.md).
 */
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs, promisify } from 'node:util'
import { createJsonStream } from '../lib/generate/items.js'
import { findCollector } from '../lib/util/collect-garbage.js'
import { readPeakRss, resetPeakRss, watchPeak } from '../lib/metrics/peak.js'
import { MB, parseByteSize } from '../lib/util/units.js'
import { markdownTable, fixed, mib } from '../lib/measure/table.js'
import { median } from '../lib/measure/stats.js'
import { positiveInteger } from '../lib/measure/args.js'
import { runScript } from './cli.js'

/** How to bring stream-json in without making it a dependency. */
const STREAM_JSON_INSTALL = 'npm install --no-save stream-json@3.8.0'

const USAGE = `Usage: node scripts/json-libraries.js [options]
  --bytes SZ       inflated size of the generated document (default 100MB)
  --repeat N       rounds, every library once a round, each in a fresh process; medians reported (default 3)
  --measure NAME   one measurement of one library in this process, printed as JSON (what each round runs)
  -h, --help
stream-json is not a dependency: after \`${STREAM_JSON_INSTALL}\` it is measured too.`

const EXIT_MISMATCH = 1
const SCRIPT = fileURLToPath(import.meta.url)
const run = promisify(execFile)
/** The generator's seed: every library reads the same items. */
const SEED = 1

/**
 * The candidates, in the table's order: how each loads, which rendering of
 * the items it reads, and how it counts their records.
 */
const LIBRARIES = Object.freeze({
  streamparser: Object.freeze({ label: '@streamparser/json', format: 'json', load: loadStreamparser }),
  'stream-json': Object.freeze({ label: 'stream-json', format: 'json', load: loadStreamJson }),
  'json-parse': Object.freeze({ label: 'JSON.parse per record (ceiling)', format: 'ndjson', load: loadJsonParse })
})

function readOptions (argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      bytes: { type: 'string', default: '100MB' },
      repeat: { type: 'string', default: '3' },
      measure: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false }
    }
  })
  if (values.help) return null
  if (values.measure !== undefined && !Object.hasOwn(LIBRARIES, values.measure)) {
    throw new TypeError(`--measure takes one of ${Object.keys(LIBRARIES).join(', ')}, got "${values.measure}"`)
  }
  let bytes
  try {
    bytes = parseByteSize(values.bytes)
  } catch (err) {
    throw new TypeError(`--bytes takes a byte size: ${err.message}`, { cause: err })
  }
  if (bytes < 1) throw new TypeError(`--bytes takes a byte size of 1 B or more, got "${values.bytes}"`)
  return { bytes, repeat: positiveInteger('repeat')(values.repeat), measure: values.measure ?? null }
}

/** The version of an installed package, from the package.json above its entry point. */
function installedVersion (name) {
  let dir = path.dirname(fileURLToPath(import.meta.resolve(name)))
  for (;;) {
    const file = path.join(dir, 'package.json')
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8'))
      if (pkg.name === name) return pkg.version
    }
    const parent = path.dirname(dir)
    if (parent === dir) return null
    dir = parent
  }
}

/** Whether an import failed because the package is not installed. */
function notInstalled (err) {
  return err?.code === 'ERR_MODULE_NOT_FOUND'
}

/** @streamparser/json as its README leads to: one JSONParser, the records of `items` emitted one by one. */
async function loadStreamparser () {
  const { JSONParser } = await import('@streamparser/json')
  return {
    version: installedVersion('@streamparser/json'),
    parse: async function parseWithStreamparser (chunks) {
      let records = 0
      const parser = new JSONParser({ paths: ['$.items.*'], keepStack: false })
      parser.onValue = function countRecord () { records++ }
      const sink = new Writable({
        write: function parseChunk (chunk, encoding, done) {
          try { parser.write(chunk); done() } catch (err) { done(err) }
        },
        final: function endParse (done) {
          try { if (!parser.isEnded) parser.end(); done() } catch (err) { done(err) }
        }
      })
      await pipeline(Readable.from(chunks), sink)
      return records
    }
  }
}

/** stream-json as its README leads to: parser, pick the `items` key, stream its array's elements. Null when absent. */
async function loadStreamJson () {
  let modules
  try {
    modules = await Promise.all([
      import('stream-json'),
      import('stream-json/filters/pick.js'),
      import('stream-json/streamers/stream-array.js'),
      import('stream-chain')
    ])
  } catch (err) {
    if (notInstalled(err)) return null
    throw err
  }
  const [{ parser }, { pick }, { streamArray }, { default: chain }] = modules
  return {
    version: installedVersion('stream-json'),
    parse: async function parseWithStreamJson (chunks) {
      let records = 0
      const count = new Writable({
        objectMode: true,
        write: function countRecord (item, encoding, done) { records++; done() }
      })
      await pipeline(Readable.from(chunks), chain([parser(), pick({ filter: 'items' }), streamArray()]), count)
      return records
    }
  }
}

/** The ceiling: each NDJSON line decoded and parsed by V8, the lines' bounds found before the clock starts. */
async function loadJsonParse () {
  return {
    version: process.versions.v8,
    prepare: function findLines (chunks) {
      const text = Buffer.concat(chunks)
      const ends = []
      for (let at = text.indexOf(0x0a); at !== -1; at = text.indexOf(0x0a, at + 1)) ends.push(at)
      if (ends.length === 0 || ends[ends.length - 1] < text.length - 1) ends.push(text.length)
      return { text, ends }
    },
    parse: async function parseEachRecord ({ text, ends }) {
      let records = 0
      let start = 0
      for (const end of ends) {
        if (end > start) {
          JSON.parse(text.toString('utf8', start, end))
          records++
        }
        start = end + 1
      }
      return records
    }
  }
}

/** The generated document as the generator's chunks, and how many items it holds. */
async function generatedChunks (format, bytes) {
  const stream = createJsonStream({ format, bytes, seed: SEED })
  const chunks = []
  for await (const chunk of stream) chunks.push(chunk)
  return { chunks, bytes: stream.bytes, items: stream.items }
}

/**
 * One measurement, in this process: generate, collect, reset the peak, parse, read the peak.
 * @returns {Promise<object>} what the round reports; `{ missing: true }` when the library is not installed
 */
async function measureHere (name, bytes) {
  const library = LIBRARIES[name]
  const loaded = await library.load()
  if (loaded === null) return { name, missing: true }
  const document = await generatedChunks(library.format, bytes)
  let input = document.chunks
  if (loaded.prepare) {
    input = loaded.prepare(document.chunks)
    document.chunks = null
  }
  const collect = findCollector()
  collect?.()
  const stopWatching = watchPeak()
  resetPeakRss()
  const rssBefore = process.memoryUsage.rss()
  const started = performance.now()
  const records = await loaded.parse(input)
  const seconds = (performance.now() - started) / 1000
  const peak = readPeakRss()
  stopWatching()
  return {
    name,
    version: loaded.version,
    bytes: document.bytes,
    items: document.items,
    records,
    seconds,
    mbps: document.bytes / MB / seconds,
    rssGrowth: Math.max(0, peak.bytes - rssBefore),
    peakSource: peak.source
  }
}

async function measureInChild (name, bytes) {
  const { stdout } = await run(process.execPath, ['--expose-gc', SCRIPT, '--measure', name, '--bytes', String(bytes)], {
    maxBuffer: 1024 * 1024
  })
  return JSON.parse(stdout)
}

async function measureRounds (bytes, repeat) {
  const runs = Object.fromEntries(Object.keys(LIBRARIES).map(function none (name) { return [name, []] }))
  for (let round = 1; round <= repeat; round++) {
    for (const name of Object.keys(LIBRARIES)) {
      const measured = await measureInChild(name, bytes)
      runs[name].push(measured)
      const said = measured.missing ? 'not installed' : `${fixed(measured.mbps)} MB/s`
      process.stderr.write(`round ${round}/${repeat}: ${LIBRARIES[name].label} ${said}\n`)
    }
  }
  return runs
}

function tableRow (name, measurements) {
  const { label } = LIBRARIES[name]
  if (measurements.some(function absent (m) { return m.missing })) {
    return [label, 'not installed', 'n/a', 'n/a', 'n/a', 'n/a']
  }
  const speeds = measurements.map(function speed (m) { return m.mbps })
  return [
    label,
    measurements[0].version,
    fixed(median(speeds)),
    speeds.map(function one (s) { return fixed(s) }).join(', '),
    mib(median(measurements.map(function growth (m) { return m.rssGrowth }))),
    String(measurements[0].records)
  ]
}

/** Libraries whose record count is not the generator's item count, with both. */
function miscounts (runs) {
  const wrong = []
  for (const [name, measurements] of Object.entries(runs)) {
    for (const m of measurements) {
      if (!m.missing && m.records !== m.items) wrong.push(`${LIBRARIES[name].label} counted ${m.records} records of ${m.items}`)
    }
  }
  return wrong
}

async function measure (options) {
  if (options.measure !== null) {
    process.stdout.write(JSON.stringify(await measureHere(options.measure, options.bytes)) + '\n')
    return 0
  }
  const loadBefore = os.loadavg()[0]
  const runs = await measureRounds(options.bytes, options.repeat)
  const loadAfter = os.loadavg()[0]
  const names = Object.keys(LIBRARIES)
  const measured = names.flatMap(function present (name) { return runs[name].filter(function found (m) { return !m.missing }) })
  const first = measured[0]
  const lines = [
    markdownTable(
      ['library', 'version', 'MB/s', 'each round MB/s', 'RSS growth MiB', 'records'],
      names.map(function row (name) { return tableRow(name, runs[name]) })
    ),
    `Node ${process.version}; ${fixed(first.bytes / MB)} MB of generated JSON (${first.items} items, seed ${SEED}); ` +
      `medians of ${options.repeat} round(s), every library once a round, each in a fresh process; ` +
      `RSS growth: the ${first.peakSource === 'VmHWM' ? 'kernel\'s' : 'sampled'} peak above the RSS before the parse; ` +
      `1-minute load average ${fixed(loadBefore, 2)} at the start, ${fixed(loadAfter, 2)} at the end (${os.cpus().length} cores).`,
    'JSON.parse per record reads the same items as NDJSON, each line\'s bounds found before the clock starts: ' +
      'a ceiling, not a route (its version is V8\'s).'
  ]
  if (runs['stream-json'].some(function absent (m) { return m.missing })) {
    lines.push(`stream-json is not a dependency of the lab: \`${STREAM_JSON_INSTALL}\` installs it without changing package.json ` +
      'or the lockfile (the next `npm ci` removes it); then run this again.')
  }
  process.stdout.write(lines.join('\n') + '\n')
  const wrong = miscounts(runs)
  if (wrong.length > 0) {
    process.stderr.write(`records miscounted: ${wrong.join('; ')}\n`)
    return EXIT_MISMATCH
  }
  return 0
}

await runScript('json-libraries', { usage: USAGE, readOptions, run: measure })
