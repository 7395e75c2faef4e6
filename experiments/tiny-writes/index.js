/** The tiny-writes experiment: the lab's server only starts the sink and client processes, none of this is its memory. */
import { runTinyWrites, tinyWritesCells } from './run.js'
import { BATCH_STEPS, TINY_MODES } from './writes.js'
import { choiceEntry, deepFreeze, integerEntry, normalizeBySchema, sweepEntry, sweepLevels } from '../../lib/experiments/params.js'
import { round } from '../../lib/util/units.js'
import { publishedWith } from '../results.js'

export const name = 'tiny-writes'
export const title = 'Many tiny writes vs coalesced writes'
export const description = 'Sends N bytes over a local TCP connection to a "byte sucker" process, one socket.write() ' +
  'per byte, then with cork()/uncork() every few KiB, then through a buffer written when full, each from a fresh ' +
  'client process, and reports the time, socket.write() calls and write system calls of each.'

const SOURCE = 'A .NET demo: 1,000,000 single bytes to a TCP byte sucker, straight to the socket stream vs through a buffering stream: ' +
  'docs/sources.md#tiny-writes'

/** The published figures, with where each is matched in `cells`. */
export const PUBLISHED = deepFreeze([
  { label: '.NET: one write per byte, 1,000,000 bytes', value: 6.1, unit: 's', source: SOURCE, figure: 'perByteSeconds' },
  { label: '.NET: through a buffering stream', value: 1.2, unit: 's', source: SOURCE, figure: 'coalescedSeconds' },
  { label: 'Buffered speed-up', value: 5, unit: 'x', source: SOURCE, figure: 'speedUp' }
])

export const params = deepFreeze([
  choiceEntry('mode', {
    values: ['all', ...TINY_MODES],
    valueLabels: {
      all: 'All three', 'per-byte': 'One socket.write() per byte', cork: 'cork() / uncork() every batch',
      coalesce: 'A buffer written when full'
    },
    label: 'How to send',
    help: 'per-byte: every byte its own socket.write(). cork: still one write() per byte, but sent in one writev per batch. ' +
      'coalesce: bytes gathered in a Buffer, one write() per batch.'
  }),
  integerEntry('bytes', {
    default: 1_000_000,
    min: 1000,
    max: 10_000_000,
    label: 'Bytes to send',
    help: 'The .NET demo sent 1,000,000. One write per byte takes a few seconds per million.'
  }),
  integerEntry('batch', {
    default: 65536,
    min: 2,
    max: 1024 * 1024,
    label: 'Batch (bytes)',
    help: 'Bytes between uncork() calls, and the size of the coalescing buffer.'
  }),
  sweepEntry({
    steps: 'Sweep: 16, 256, 4096, 65536 up to the batch',
    single: 'Only the batch',
    label: 'Batch sweep',
    help: 'Sweep the batch size to draw time against bytes per batch.'
  }),
  choiceEntry('nagle', {
    values: ['on', 'off'],
    valueLabels: { on: 'On (Node\'s default for net sockets)', off: 'Off (setNoDelay: every write its own packet)' },
    label: 'Nagle\'s algorithm',
    help: 'With it on, the kernel gathers tiny writes into packets; the system calls remain.'
  })
])

/** @throws {LabError} 400 parameter.invalid naming the field */
export function normalizeParams (raw) {
  return Object.freeze(normalizeBySchema(params, raw))
}

/** A sink process for the run, a client process per cell. */
export async function run (ctx) {
  const { params: p, signal } = ctx
  const modes = p.mode === 'all' ? [...TINY_MODES] : [p.mode]
  const cells = tinyWritesCells({ modes, batches: sweepLevels(p.sweep, BATCH_STEPS, p.batch) })
  const results = await runTinyWrites({ bytes: p.bytes, cells, noDelay: p.nagle === 'off' }, {
    signal,
    onSpawn: ctx.trackProcess,
    onMeasurement: function relayProgress (done, total, cell) {
      const shown = cell ? `${cell.mode}${cell.batch ? ` · batch ${cell.batch}` : ''}` : undefined
      ctx.progress({ done, total, mode: cell?.mode ?? null, batch: cell?.batch ?? null, stage: 'send', cell: shown })
    }
  })
  const rounded = results.map(roundTinyCell)
  return { bytes: p.bytes, nagle: p.nagle, cells: rounded, charts: tinyWritesCharts(rounded), published: publishedBeside(rounded) }
}

/** What the lab shows of a cell, in order, with the scale each figure is rounded to (0: as it is). */
const SHOWN = Object.freeze({
  mode: 0, batch: 0, bytes: 0, runs: 0, ms: 10, writeCalls: 0, bytesPerWrite: 10, syscalls: 0, bytesPerSyscall: 10,
  cpuUserMs: 10, cpuSystemMs: 10, sinkReads: 0, mbPerSecond: 100, delivered: 0
})

/** A cell as the lab shows it: figures rounded, the raw measurements left out. */
export function roundTinyCell (cell) {
  return Object.fromEntries(Object.entries(SHOWN).map(function shown ([key, scale]) {
    return [key, scale ? round(cell[key], scale) : cell[key]]
  }))
}

/** Time and write system calls against bytes per batch; one write per byte is where both batched lines start (a batch of 1). */
export function tinyWritesCharts (cells) {
  const perByte = cells.find(function isPerByte (c) { return c.mode === 'per-byte' })
  function series (y) {
    const out = []
    for (const [mode, label] of [['cork', 'cork() / uncork() every batch'], ['coalesce', 'coalescing buffer of a batch']]) {
      const points = cells.filter(function ofMode (c) { return c.mode === mode })
        .map(function point (c) { return { x: c.batch, y: y(c) } })
      if (perByte && points.length) points.push({ x: 1, y: y(perByte) })
      points.sort(function byX (a, b) { return a.x - b.x })
      if (points.length) out.push({ label, points })
    }
    if (perByte && out.length === 0) out.push({ label: 'one write per byte', points: [{ x: 1, y: y(perByte) }] })
    return out
  }
  const x = 'bytes per batch (1: one write per byte)'
  function time (c) { return c.ms }
  function calls (c) { return c.syscalls }
  return [
    { title: 'Time to deliver N bytes vs bytes per batch', x, y: 'ms', logX: true, series: series(time) },
    { title: 'Write system calls vs bytes per batch', x, y: 'write syscalls', logX: true, series: series(calls) }
  ]
}

/** The published figures, each with the measured one beside it: per-byte, the largest coalescing batch, and their ratio. */
export function publishedBeside (cells) {
  const perByte = cells.find(function isPerByte (c) { return c.mode === 'per-byte' })
  const coalesced = cells.filter(function isCoalesce (c) { return c.mode === 'coalesce' })
    .sort(function largestFirst (a, b) { return b.batch - a.batch })[0]
  return publishedWith(PUBLISHED, {
    perByteSeconds: perByte ? round(perByte.ms / 1000, 1000) : null,
    coalescedSeconds: coalesced ? round(coalesced.ms / 1000, 1000) : null,
    speedUp: perByte && coalesced ? round(perByte.ms / coalesced.ms, 10) : null
  })
}
