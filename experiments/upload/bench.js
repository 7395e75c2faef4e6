/** `npm run bench -- upload`: C uploads at once to /upload-buffer and /upload-stream, each measurement on a fresh server. */
import { measureOnFreshServer } from '../../lib/measure/fresh-server.js'
import { ensureBinaryInput } from '../../lib/measure/binary-input.js'
import { medianOfRuns, repeatCells } from '../../lib/measure/stats.js'
import { uploadMany } from '../../lib/experiments/upload-client.js'
import { publishedTable } from '../../lib/measure/published.js'
import { markdownTable, mib, fixed } from '../../lib/measure/table.js'
import { list, positiveInteger } from '../../lib/measure/args.js'
import { DEFAULTS } from '../../lib/config/options.js'
import { parseByteSize } from '../../lib/util/units.js'
import { removeUploads } from './server.js'
import { publishedBeside, summariseUploadCell, uploadCharts, uploadedNames } from './index.js'
import { schemaChoices, schemaDefault } from '../../lib/experiments/schema-options.js'
import * as experiment from './index.js'
import { serverFigures } from '../results.js'

export const name = 'upload'
export const summary = 'C uploads at once to /upload-buffer and /upload-stream'
/** The experiment's own default and routes (its schema), never written again here. */
const BYTES = schemaDefault(experiment.params, 'bytes')
const ROUTES = schemaChoices(experiment.params, 'route')

export const usage = `Options (upload):
  --concurrency LIST  uploads at once, e.g. 1,10,50,100,200 (default 1,10,50,100,200)
  --bytes SIZE        upload size (default ${BYTES})
  --routes LIST       ${ROUTES.join(',')} (default both)
  --repeat N          measurements per cell, fresh server each; medians reported (default 3)
  --server-flag FLAG  extra flag for the server processes (repeatable)`

export const options = Object.freeze({
  concurrency: { type: 'string', default: '1,10,50,100,200' },
  bytes: { type: 'string', default: BYTES },
  routes: { type: 'string', default: ROUTES.join(',') },
  repeat: { type: 'string', default: '3' },
  'server-flag': { type: 'string', multiple: true, default: [] }
})

const HEADERS = Object.freeze({ 'content-type': 'application/octet-stream' })

export function normalize (values) {
  const routes = list(values.routes, function route (r) {
    if (!ROUTES.includes(r)) throw new TypeError(`--routes takes ${ROUTES.join(' and ')}, got "${r}"`)
    return r
  })
  return {
    concurrency: list(values.concurrency, positiveInteger('concurrency')),
    bytes: parseByteSize(values.bytes),
    routes,
    repeat: positiveInteger('repeat')(values.repeat),
    serverFlags: values['server-flag']
  }
}

export async function run (opts, report) {
  const input = await ensureBinaryInput({ bytes: opts.bytes })
  const warm = await ensureBinaryInput({ bytes: 1024 })
  const cells = await repeatCells({
    cells: opts.concurrency.flatMap(function routesOf (concurrency) {
      return opts.routes.map(function cell (route) { return { route, concurrency } })
    }),
    repeat: opts.repeat,
    report,
    label: function label ({ route, concurrency }) { return `/upload-${route} x${concurrency}` },
    measure: function measure ({ route, concurrency }) {
      return measureUploads({ route, concurrency, file: input.file, warmFile: warm.file, bytes: opts.bytes, serverFlags: opts.serverFlags })
    },
    combine: function medianCell (runs) {
      const cell = medianOfRuns(runs, {
        sums: ['requests', 'ok'],
        medians: ['latencyMs.min', 'latencyMs.avg', 'latencyMs.max', 'wallMs', 'mbPerSecond']
      })
      cell.allBytesWritten = runs.every(function whole (r) { return r.allBytesWritten })
      return cell
    }
  })
  const published = publishedBeside(cells)
  return {
    title: 'Buffered vs streamed upload to disk',
    markdown: `${uploadTable(cells)}\n${publishedTable(published)}`,
    charts: uploadCharts(cells),
    data: { bytes: opts.bytes, cells, published }
  }
}

/** One measurement: a fresh server, a warm-up upload, C uploads at once, the files removed. */
async function measureUploads ({ route, concurrency, file, warmFile, bytes, serverFlags }) {
  // the servers are `server.js` with its default data directory: that is where their uploads land
  const made = []
  try {
    const measured = await measureOnFreshServer({
      serverFlags,
      warmUp: async function warmUp (url) {
        const [answer] = await uploadMany(`${url}/upload-${route}`, warmFile, { concurrency: 1, requests: 1, headers: HEADERS })
        if (answer.status !== 200) throw new Error(`warm-up upload answered ${answer.status}: ${JSON.stringify(answer.body)}`)
        made.push(answer.body.file)
      },
      load: function uploadAll (url) {
        return uploadMany(`${url}/upload-${route}`, file, { concurrency, requests: concurrency, headers: HEADERS })
      }
    })
    const results = measured.outcome.map(function slim (r) {
      const errorType = r.body?.error?.type ?? r.error ?? `status ${r.status}`
      return { status: r.status, ms: r.ms, bytes: r.body?.bytes, file: r.body?.file, errorType }
    })
    made.push(...uploadedNames(results))
    return summariseUploadCell({ route, concurrency, bytes, results, wallMs: measured.wallMs, server: serverFigures(measured) })
  } finally {
    await removeUploads(DEFAULTS.dataDir, made)
  }
}

/** The table: latency and server memory per route and concurrency, then the ratios the lesson is about. */
function uploadTable (cells) {
  const rows = cells.map(function row (c) {
    const seconds = [c.latencyMs.min, c.latencyMs.avg, c.latencyMs.max].map(function inSeconds (ms) { return fixed(ms / 1000, 2) })
    const memory = [mib(c.server.peakRss), mib(c.server.peakAboveIdle)]
    return [`/upload-${c.route}`, c.concurrency, `${c.ok}/${c.requests}`, ...seconds, fixed(c.mbPerSecond), ...memory]
  })
  const table = markdownTable(['route', 'conc', 'ok', 'min s', 'avg s', 'max s', 'MB/s', 'peak RSS MiB', 'above idle MiB'], rows)
  const notes = []
  for (const stream of cells.filter(function isStream (c) { return c.route === 'stream' })) {
    const buffer = cells.find(function twin (c) { return c.route === 'buffer' && c.concurrency === stream.concurrency })
    if (!buffer) continue
    notes.push(`- x${stream.concurrency}: buffered peak ${fixed(buffer.server.peakRss / stream.server.peakRss, 1)}x the streamed one ` +
      `(${fixed(buffer.server.peakAboveIdle / Math.max(1, stream.server.peakAboveIdle), 1)}x above idle); average latency ` +
      `${fixed(buffer.latencyMs.avg / stream.latencyMs.avg, 2)}x`)
  }
  return `${table}\n\n${notes.join('\n')}\n`
}
