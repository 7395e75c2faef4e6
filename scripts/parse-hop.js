#!/usr/bin/env node
/**
 * What a hop to a parse thread costs against parsing on the main thread, for generated documents of a
 * few sizes: parseDocument here (and its cost projection's share, which /bad does not make), then a
 * parse thread's round trip and the main thread's share of it (HOP_WORTH in lib/parse/small-body.js).
 */
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { createJsonStream } from '../lib/generate/items.js'
import { parseDocument } from '../lib/parse/parse-batch.js'
import { createParsePool, threadHeapMb } from '../lib/parse/pool.js'
import { DEFAULTS } from '../lib/config/options.js'
import { parseByteSize } from '../lib/util/units.js'
import { projectParseCost } from '../lib/json/parse-cost.js'
import { markdownTable, fixed } from '../lib/measure/table.js'
import { median } from '../lib/measure/stats.js'
import { list, positiveInteger } from '../lib/measure/args.js'
import { runScript } from './cli.js'

const USAGE = `Usage: node scripts/parse-hop.js [options]
  --sizes LIST   inflated document sizes (default 1KB,4KB,8KB,16KB,32KB,64KB)
  --count N      parses per measurement (default 1000)
  --repeat N     measurements per size; medians reported (default 3)
  -h, --help`

function readOptions (argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      sizes: { type: 'string', default: '1KB,4KB,8KB,16KB,32KB,64KB' },
      count: { type: 'string', default: '1000' },
      repeat: { type: 'string', default: '3' },
      help: { type: 'boolean', short: 'h', default: false }
    }
  })
  if (values.help) return null
  return {
    sizes: list(values.sizes, parseByteSize),
    count: positiveInteger('count')(values.count),
    repeat: positiveInteger('repeat')(values.repeat)
  }
}

/** A generated `json` document of about `bytes` inflated bytes, as the bench's inputs are made. */
async function generatedDocument (bytes) {
  const pieces = []
  for await (const piece of createJsonStream({ format: 'json', bytes, seed: 1 })) pieces.push(Buffer.from(piece))
  return Buffer.concat(pieces)
}

/** The task parseDocument takes, with the lab's default limits. */
function documentTask (bytes) {
  const { limits, ingest } = DEFAULTS
  return { kind: 'document', bytes, format: 'json', maxDepth: limits.depth, maxCost: ingest.parseCost, maxValueBytes: limits.record }
}

/** Microseconds per parse on this thread. */
function parseHere (data, count) {
  const task = documentTask(data)
  const started = performance.now()
  for (let k = 0; k < count; k++) parseDocument(task)
  return (performance.now() - started) * 1000 / count
}

/** Microseconds per projection of the parse's cost (lib/json/parse-cost.js), the part of parseDocument /bad does not do. */
function projectHere (data, count) {
  const started = performance.now()
  for (let k = 0; k < count; k++) projectParseCost(data)
  return (performance.now() - started) * 1000 / count
}

/** Microseconds per round trip to a parse thread (wall), and of the main thread's time in it. */
async function parseThere (pool, data, count) {
  const before = performance.eventLoopUtilization()
  const started = performance.now()
  for (let k = 0; k < count; k++) {
    const bytes = new Uint8Array(data)
    await pool.run(documentTask(bytes), { transferList: [bytes.buffer] })
  }
  const wall = (performance.now() - started) * 1000 / count
  const main = performance.eventLoopUtilization(before).active * 1000 / count
  return { wall, main }
}

async function measure (options) {
  const pool = createParsePool(1, threadHeapMb(DEFAULTS.ingest.parseCost))
  const rows = []
  try {
    for (const size of options.sizes) {
      const data = await generatedDocument(size)
      if (parseDocument(documentTask(data)) === null) throw new Error(`the generated ${size}-byte document did not parse`)
      // warm both paths up before measuring
      parseHere(data, Math.min(200, options.count))
      await parseThere(pool, data, Math.min(200, options.count))
      const here = []
      const projection = []
      const wall = []
      const mainShare = []
      for (let r = 0; r < options.repeat; r++) {
        here.push(parseHere(data, options.count))
        projection.push(projectHere(data, options.count))
        const there = await parseThere(pool, data, options.count)
        wall.push(there.wall)
        mainShare.push(there.main)
      }
      const row = { bytes: data.length, here: median(here), projection: median(projection), wall: median(wall), main: median(mainShare) }
      rows.push(row)
      process.stderr.write(`${row.bytes} B done\n`)
    }
  } finally {
    await pool.destroy()
  }
  process.stdout.write(markdownTable(
    ['document', 'parsed here us', 'of which the cost projection us', 'on a thread: answer us', 'main thread us', 'main thread spared us'],
    rows.map(function line (r) {
      return [`${r.bytes} B`, fixed(r.here, 0), fixed(r.projection, 0), fixed(r.wall, 0), fixed(r.main, 0), fixed(r.here - r.main, 0)]
    })
  ) + `\nNode ${process.version}; medians of ${options.repeat} x ${options.count} parses; one parse thread, the lab's default limits.\n`)
  return 0
}

await runScript('parse-hop', { usage: USAGE, readOptions, run: measure })
