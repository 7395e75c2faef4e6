/** `npm run bench -- tiny-writes`: N bytes to a TCP byte sucker three ways, a client process per measurement. */
import { batchSteps, runTinyWrites, tinyWritesCells } from './run.js'
import { publishedTable } from '../../lib/measure/published.js'
import { markdownTable, fixed } from '../../lib/measure/table.js'
import { list, positiveInteger } from '../../lib/measure/args.js'
import { TINY_MODES } from './writes.js'
import { publishedBeside, roundTinyCell, tinyWritesCharts } from './index.js'
import { schemaDefault } from '../../lib/experiments/schema-options.js'
import * as experiment from './index.js'

const BYTES = schemaDefault(experiment.params, 'bytes')
const BATCH = schemaDefault(experiment.params, 'batch')

export const name = 'tiny-writes'
export const summary = 'N bytes over TCP: a write per byte, cork/uncork, a coalescing buffer'
export const usage = `Options (tiny-writes):
  --bytes N           bytes per transfer (default ${BYTES})
  --modes LIST        per-byte,cork,coalesce (default all)
  --batch LIST        bytes per uncork() / per buffered write (default 16,256,4096,65536)
  --no-delay          turn Nagle's algorithm off (setNoDelay) on the client's socket
  --repeat N          measurements per cell, a fresh client process each; medians reported (default 3)`

export const options = Object.freeze({
  bytes: { type: 'string', default: String(BYTES) },
  modes: { type: 'string', default: TINY_MODES.join(',') },
  batch: { type: 'string', default: batchSteps(BATCH).join(',') },
  'no-delay': { type: 'boolean', default: false },
  repeat: { type: 'string', default: '3' }
})

export function normalize (values) {
  return {
    bytes: positiveInteger('bytes')(values.bytes),
    modes: list(values.modes, function mode (m) {
      if (!TINY_MODES.includes(m)) throw new TypeError(`--modes takes ${TINY_MODES.join(', ')}, got "${m}"`)
      return m
    }),
    batch: list(values.batch, positiveInteger('batch')),
    noDelay: values['no-delay'],
    repeat: positiveInteger('repeat')(values.repeat)
  }
}

export async function run (opts, report) {
  const cells = tinyWritesCells({ modes: opts.modes, batches: opts.batch })
  const results = await runTinyWrites({ bytes: opts.bytes, cells, noDelay: opts.noDelay, repeat: opts.repeat }, {
    onMeasurement: function relayProgress (done, total, cell) {
      const label = cell ? `${cell.mode}${cell.mode === 'per-byte' ? '' : ` ${cell.batch} B`}` : 'done'
      report({ type: 'progress', done, total, label })
    }
  })
  const rounded = results.map(roundTinyCell)
  const published = publishedBeside(rounded)
  return {
    title: 'Many tiny writes vs coalesced writes',
    markdown: `${tinyWritesTable(rounded, opts)}\n${publishedTable(published)}`,
    charts: tinyWritesCharts(rounded),
    data: { bytes: opts.bytes, noDelay: opts.noDelay, cells: results, published }
  }
}

/** The table, then each mode's speed-up over one write per byte. */
function tinyWritesTable (cells, opts) {
  const rows = cells.map(function row (c) {
    return [c.mode, c.mode === 'per-byte' ? '1' : String(c.batch), fixed(c.ms), String(c.writeCalls), fixed(c.bytesPerWrite),
      c.syscalls === null ? 'n/a' : String(c.syscalls), fixed(c.bytesPerSyscall), fixed(c.cpuUserMs, 0), fixed(c.cpuSystemMs, 0),
      String(c.sinkReads), c.delivered ? 'yes' : 'NO']
  })
  const heads = ['mode', 'batch B', 'ms', 'write() calls', 'B/write', 'write syscalls', 'B/syscall', 'CPU user ms', 'CPU sys ms']
  const table = markdownTable([...heads, 'sink reads', 'all bytes, in order'], rows)
  const perByte = cells.find(function isPerByte (c) { return c.mode === 'per-byte' })
  const notes = [`${opts.bytes} bytes per transfer, Nagle's algorithm ${opts.noDelay ? 'off' : 'on'}.`, '']
  if (perByte) {
    for (const c of cells.filter(function batched (c) { return c.mode !== 'per-byte' })) {
      notes.push(`- ${c.mode} ${c.batch} B: ${fixed(perByte.ms / c.ms, 1)}x faster than a write per byte`)
    }
  }
  return `${table}\n\n${notes.join('\n')}\n`
}
