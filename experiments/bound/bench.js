/**
 * `npm run bench -- bound`: what one core of this machine does at each of /good's stages, on the
 * body the ingest bench sends, held in memory, and the MB/s that bounds ingest on the lab's cores
 * (lib/measure/bound.js has the stages and the model). No lab runs: this bench has no experiment.
 */
import os from 'node:os'
import { parseByteSize } from '../../lib/util/units.js'
import { positiveInteger } from '../../lib/measure/args.js'
import { ensureInput } from '../../lib/measure/inputs.js'
import { markdownTable, fixed } from '../../lib/measure/table.js'
import { MODEL, measureBoundOfFile } from '../../lib/measure/bound.js'
import { FORMATS } from '../../lib/json/records.js'

export const name = 'bound'
export const summary = 'what one core does at each of /good\'s stages, and the MB/s that bounds ingest on this machine'

const DEFAULTS = Object.freeze({ size: '100MB', format: 'json', repeat: '3' })

export const usage = `Options (bound):
  --size SIZE         the inflated body, as the ingest bench makes it (default ${DEFAULTS.size})
  --format F          ${FORMATS.join(' | ')} (default ${DEFAULTS.format})
  --repeat N          timed passes per stage after a warm-up; medians reported (default ${DEFAULTS.repeat})
  --cores N           cores the bound spreads the work over (default this machine's)
  Each stage alone on one core, the body held in memory: inflate (a Gunzip stream, 1 MiB reads,
  256 KiB chunks), parse (JSON.parse of ~64 KiB batches of whole records, tallied), sha256 (1 MiB
  updates), find (the record scanner, 256 KiB chunks); MB/s of inflated body.
  ${MODEL}`

export const options = Object.freeze({
  size: { type: 'string' },
  format: { type: 'string' },
  repeat: { type: 'string' },
  cores: { type: 'string' }
})

export function normalize (given) {
  const values = { ...DEFAULTS }
  for (const [key, value] of Object.entries(given)) if (value !== undefined) values[key] = value
  let bytes
  try {
    bytes = parseByteSize(values.size)
  } catch (err) {
    throw new TypeError(`--size: ${err.message}`, { cause: err })
  }
  if (!(bytes >= 1)) throw new TypeError(`--size takes a size of at least 1 byte, got "${values.size}"`)
  if (!FORMATS.includes(values.format)) throw new TypeError(`--format takes ${FORMATS.join(', ')}, got "${values.format}"`)
  return {
    bytes,
    size: values.size,
    format: values.format,
    repeat: positiveInteger('repeat')(values.repeat),
    cores: values.cores === undefined ? os.availableParallelism() : positiveInteger('cores')(values.cores)
  }
}

export async function run (opts, report) {
  const input = await ensureInput({ bytes: opts.bytes, format: opts.format }, function log (line) { report({ type: 'log', line }) })
  const data = await measureBoundOfFile(input.file, opts, report)
  return boundReport({ ...data, body: { ...data.body, size: opts.size } })
}

function cpuText (cpuSecondsPerGB) {
  return typeof cpuSecondsPerGB === 'number' ? fixed(cpuSecondsPerGB, 2) : 'n/a'
}

/** The report of a bound's measurement (lib/measure/bound.js): the stages' table, the bound, the model. */
export function boundReport (data) {
  const rows = data.cells.map(function row (c) {
    return [c.stage, fixed(c.mbPerSecond), fixed(c.secondsPerGB, 2), cpuText(c.cpuSecondsPerGB)]
  })
  rows.push(['all four, 1 core', fixed(data.singleCore), fixed(1000 / data.singleCore, 2), cpuText(data.stagesCpuPerGB)])
  rows.push([`bound, ${data.cores} core${data.cores === 1 ? '' : 's'}`, fixed(data.bound), fixed(1000 / data.bound, 2), ''])
  const { body } = data
  const notes = [
    `- body: ${body.size ?? `${body.bytes} B`} ${body.format} as the ingest bench sends it, ${fixed(body.bytes / 1e6)} MB inflated ` +
      `from ${fixed(body.compressedBytes / 1e6)} MB of gzip, held in memory`,
    `- each stage alone on one core: the median of ${data.repeat} timed pass${data.repeat === 1 ? '' : 'es'} after a warm-up ` +
      '(a small body\'s sample repeats the pass for at least 20 ms)',
    `- the model: ${data.model}, every stage spread perfectly over the cores; a route's MB/s stays under it`,
    '- CPU s per GB: this process\'s CPU (every thread) over the timed passes, per GB of inflated body; the ingest bench holds each ' +
      'route\'s CPU per GB, its worker\'s, to the sum of the stages\' (its "of stages\' CPU")'
  ]
  return {
    title: 'The machine\'s bound on ingest speed',
    markdown: `${markdownTable(['stage', 'MB/s on one core', 's per GB', 'CPU s per GB'], rows)}\n\n${notes.join('\n')}\n`,
    charts: [],
    data
  }
}
