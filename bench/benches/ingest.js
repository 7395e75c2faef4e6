/**
 * `npm run bench -- ingest`: the same generated body POSTed to /bad and
 * /good (and /express-json, when named), sizes x concurrency x routes, each
 * measurement on a fresh server.
 */
import { parseByteSize } from '../../lib/units.js'
import { runIngestBench } from '../ingest.js'
import { markdownTable, mib, fixed } from '../table.js'
import { list, positiveInteger } from './args.js'
import { INGEST_ROUTES, INGEST_ROUTE_NAMES, routesRefusing } from '../../lib/ingest-routes.js'

export const name = 'ingest'
export const summary = 'POST the same generated body to /bad and /good (and /express-json)'
export const usage = `Options (ingest):
  --sizes LIST        inflated sizes, e.g. 10MB,100MB,500MB (default 10MB,100MB,500MB)
  --concurrency LIST  uploads in flight, e.g. 1,10,50 (default 1)
  --requests N        uploads per measurement (default: the concurrency)
  --routes LIST       of bad, good, express-json (default bad,good; express.json reads no NDJSON)
  --format F          json | array | ndjson (default json)
  --repeat N          measurements per cell, fresh server each; medians reported (default 3)
  --url URL           measure a running server instead (peak RSS then comes from its answers)
  --server-flag FLAG  extra flag for the server processes (repeatable)`

export const options = Object.freeze({
  sizes: { type: 'string', default: '10MB,100MB,500MB' },
  concurrency: { type: 'string', default: '1' },
  requests: { type: 'string' },
  routes: { type: 'string', default: 'bad,good' },
  format: { type: 'string', default: 'json' },
  repeat: { type: 'string', default: '3' },
  url: { type: 'string' },
  'server-flag': { type: 'string', multiple: true, default: [] }
})

/** Normalise parsed flags; a TypeError names the bad flag. */
export function normalize (values) {
  const routes = list(values.routes, function route (r) {
    if (!Object.hasOwn(INGEST_ROUTES, r)) throw new TypeError(`--routes takes ${INGEST_ROUTE_NAMES.join(', ')}, got "${r}"`)
    return r
  })
  if (!['json', 'array', 'ndjson'].includes(values.format)) throw new TypeError(`--format takes json, array or ndjson, got "${values.format}"`)
  const refusing = routesRefusing(routes, values.format)
  if (refusing.length > 0) throw new TypeError(`--format ${values.format}: /${refusing.join(', /')} reads only ${INGEST_ROUTES[refusing[0]].formats.join(' or ')}`)
  return {
    sizes: list(values.sizes, parseByteSize),
    sizeLabels: list(values.sizes, String),
    concurrency: list(values.concurrency, positiveInteger('concurrency')),
    requests: values.requests === undefined ? null : positiveInteger('requests')(values.requests),
    routes,
    format: values.format,
    repeat: positiveInteger('repeat')(values.repeat),
    url: values.url ?? null,
    serverFlags: values['server-flag']
  }
}

/**
 * Run it.
 * @returns {Promise<{ title: string, markdown: string, charts: object[], data: object }>}
 */
export async function run (opts, report) {
  const cells = await runIngestBench(opts, report)
  return { title: 'Buffered vs streamed ingest', markdown: ingestTable(cells), charts: ingestCharts(cells), data: { cells } }
}

/** The table of an ingest run, and the ratios the lesson is about. */
export function ingestTable (cells) {
  const rows = cells.map(function row (c) {
    return [c.route, c.size, c.concurrency, fixed(c.mbPerSecond), mib(c.peakRss), mib(c.peakAboveIdle),
      fixed(c.latencyAvgMs, 0), `${c.ok}/${c.requests}`]
  })
  const table = markdownTable(['route', 'size', 'conc', 'MB/s', 'peak RSS MiB', 'above idle MiB', 'avg ms', 'ok'], rows)
  const notes = []
  // each other route against /bad, the buffered baseline, on the same body and concurrency
  for (const other of cells.filter(function isNotBad (c) { return c.route !== 'bad' })) {
    const bad = cells.find(function twin (c) { return c.route === 'bad' && c.bytes === other.bytes && c.concurrency === other.concurrency })
    if (!bad) continue
    const same = bad.summary && other.summary && JSON.stringify(bad.summary) === JSON.stringify(other.summary)
    const ratio = bad.peakAboveIdle / other.peakAboveIdle
    const memory = ratio >= 1 ? `${fixed(ratio, 1)}x less memory above idle` : `${fixed(1 / ratio, 1)}x more memory above idle`
    notes.push(`- ${other.size} x${other.concurrency}: /${other.route} ${fixed(other.mbPerSecond / bad.mbPerSecond, 2)}x the MB/s of /bad, ` +
      `${memory}; answers ${same ? 'identical' : 'DIFFER'}`)
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

