/** `npm run bench -- chunk-size`: GET /files/chunk under keep-alive load at each read size and mode, each on a fresh server. */
import { measureOnFreshServer } from '../../lib/measure/fresh-server.js'
import { getMany } from './get-many.js'
import { medianOfRuns, repeatCells } from '../../lib/measure/stats.js'
import { publishedTable } from '../../lib/measure/published.js'
import { markdownTable, mib, fixed } from '../../lib/measure/table.js'
import { list, positiveInteger } from '../../lib/measure/args.js'
import { CHUNK_FILE_BYTES, CHUNK_MODES, HWM_MAX, HWM_MIN } from './server.js'
import { chunkSizeCharts, chunkUrl, publishedBeside, summariseChunkCell } from './index.js'
import { formatBytes, parseByteSize } from '../../lib/util/units.js'
import { schemaDefault } from '../../lib/experiments/schema-options.js'
import * as experiment from './index.js'
import { serverFigures } from '../results.js'

export const name = 'chunk-size'
export const summary = 'GET a 1 MiB file read in chunks of 1 KiB to 1 MiB, as Buffers and as strings'
export const usage = `Options (chunk-size):
  --hwm LIST          read sizes (highWaterMark), e.g. 4KiB,64KiB (default 1KiB,4KiB,16KiB,64KiB,256KiB,1MiB)
  --modes LIST        buffer,string (default both)
  --concurrency N     keep-alive connections (default 100, as ab -c 100)
  --requests N        downloads per measurement (default 300)
  --repeat N          measurements per cell, fresh server each; medians reported (default 3)
  --server-flag FLAG  extra flag for the server processes (repeatable)`

export const options = Object.freeze({
  hwm: { type: 'string', default: '1KiB,4KiB,16KiB,64KiB,256KiB,1MiB' },
  modes: { type: 'string', default: 'buffer,string' },
  concurrency: { type: 'string', default: String(schemaDefault(experiment.params, 'concurrency')) },
  requests: { type: 'string', default: '300' },
  repeat: { type: 'string', default: '3' },
  'server-flag': { type: 'string', multiple: true, default: [] }
})

export function normalize (values) {
  return {
    hwm: list(values.hwm, function readSize (text) {
      const bytes = parseByteSize(text)
      if (bytes < HWM_MIN || bytes > HWM_MAX) throw new TypeError(`--hwm takes sizes from ${HWM_MIN} to ${HWM_MAX} bytes, got "${text}"`)
      return bytes
    }),
    modes: list(values.modes, function mode (m) {
      if (!CHUNK_MODES.includes(m)) throw new TypeError(`--modes takes buffer and string, got "${m}"`)
      return m
    }),
    concurrency: positiveInteger('concurrency')(values.concurrency),
    requests: positiveInteger('requests')(values.requests),
    repeat: positiveInteger('repeat')(values.repeat),
    serverFlags: values['server-flag']
  }
}

export async function run (opts, report) {
  const cells = await repeatCells({
    cells: opts.hwm.flatMap(function modesOf (hwm) {
      return opts.modes.map(function cell (mode) { return { hwm, mode } })
    }),
    repeat: opts.repeat,
    report,
    label: function label ({ hwm, mode }) { return `${mode} ${formatBytes(hwm)}` },
    measure: async function measure ({ hwm, mode }) {
      const measured = await measureOnFreshServer({
        serverFlags: opts.serverFlags,
        warmUp: function warmUp (url) {
          // also makes the file in the server's data directory on a first run
          return getMany(chunkUrl(url, hwm, mode), { concurrency: 1, requests: 2, expectBytes: CHUNK_FILE_BYTES })
        },
        load: function download (url) {
          const { concurrency, requests } = opts
          return getMany(chunkUrl(url, hwm, mode), { concurrency, requests, expectBytes: CHUNK_FILE_BYTES })
        }
      })
      return summariseChunkCell({ hwm, mode, concurrency: opts.concurrency, load: measured.outcome, server: serverFigures(measured) })
    },
    combine: function medianCell (runs) {
      return medianOfRuns(runs, {
        sums: ['requests', 'ok', 'bytes'],
        medians: ['wallMs', 'mibPerSecond', 'latencyMs.min', 'latencyMs.avg', 'latencyMs.p99', 'latencyMs.max']
      })
    }
  })
  const published = publishedBeside(cells)
  return {
    title: 'Read chunk size, Buffer vs string',
    markdown: `${chunkSizeTable(cells)}\n${publishedTable(published)}`,
    charts: chunkSizeCharts(cells),
    data: { fileBytes: CHUNK_FILE_BYTES, cells, published }
  }
}

/** The table, then Buffer against string per read size and the best read size per mode. */
function chunkSizeTable (cells) {
  const rows = cells.map(function row (c) {
    return [c.mode, formatBytes(c.hwm), fixed(c.mibPerSecond), fixed(c.latencyMs.avg, 0), fixed(c.latencyMs.p99, 0),
      mib(c.server.peakRss), mib(c.server.peakAboveIdle), `${c.ok}/${c.requests}`]
  })
  const table = markdownTable(['mode', 'highWaterMark', 'MiB/s', 'avg ms', 'p99 ms', 'peak RSS MiB', 'above idle MiB', 'ok'], rows)
  const notes = []
  for (const buffer of cells.filter(function isBuffer (c) { return c.mode === 'buffer' })) {
    const string = cells.find(function twin (c) { return c.mode === 'string' && c.hwm === buffer.hwm })
    if (!string) continue
    notes.push(`- ${formatBytes(buffer.hwm)}: Buffers ${fixed(buffer.mibPerSecond / string.mibPerSecond, 2)}x the MiB/s of strings`)
  }
  for (const mode of CHUNK_MODES) {
    const ofMode = cells.filter(function same (c) { return c.mode === mode })
    if (ofMode.length < 2) continue
    const best = ofMode.reduce(function faster (a, b) { return b.mibPerSecond > a.mibPerSecond ? b : a })
    notes.push(`- fastest ${mode} read size: ${formatBytes(best.hwm)} (${fixed(best.mibPerSecond)} MiB/s)`)
  }
  return `${table}\n\n${notes.join('\n')}\n`
}
