/** The ingest experiment's lesson screenshot and classroom demo step, from the run's own result (experiments/README.md#figures). */
import { formatDecimalBytes, formatDuration, formatMiB, formatMs, parseByteSize } from '../../lib/util/units.js'
import { count, errorList, peakOf, times } from '../../lib/measure/figure-lines.js'
import { INGEST_ROUTES } from '../../lib/ingest/contenders.js'

export const screenshot = Object.freeze({
  name: 'ingest',
  flags: [],
  // a /good-only run comes first: after "both" runs /bad, /good runs in pages /bad grew (it allocates too little
  // on the main thread for a GC to hand them back); the chart shows /good flat at idle, then /bad's climb
  prelude: [{ route: 'good', bytes: '100MB', size: '', format: 'json', concurrency: 1, requests: 2 }],
  params: { route: 'both', bytes: '100MB', size: '', format: 'json', concurrency: 1, requests: 2 },
  timeoutMs: 10 * 60_000,
  figures: ingestFigures
})

function ingestFigures ({ params, result }) {
  const input = result.input
  const body = input.bytes !== null ? `${formatDecimalBytes(input.bytes)} of JSON` : `${count(input.size)} items`
  const load = `concurrency ${params.concurrency}, ${params.requests} upload(s) per route`
  const lines = [`input: ${body} (${input.format}), ${formatDecimalBytes(input.compressedBytes)} gzipped; ${load}`]
  for (const r of Object.values(result.routes)) {
    lines.push(`/${r.route}: ${r.ok}/${r.requests} answered 200${errorList(r.errors)}; ` +
      `server peak above idle ${formatMiB(r.server?.peakAboveIdle)} ` +
      `(idle ${formatMiB(r.server?.idleRss)}, peak RSS ${formatMiB(r.server?.peakRss)}); ${r.mbPerSecond} MB/s; ` +
      `latency avg ${formatMs(r.latencyMs?.avg)}, p99 ${formatMs(r.latencyMs?.p99)}`)
  }
  const items = Object.values(result.routes)[0]?.summary?.items
  lines.push(`answers identical: ${result.summariesAgree}${Number.isFinite(items) ? ` (${count(items)} items each)` : ''}`)
  return lines
}

/** How the demo names a route: its path and the route table's label, e.g. "/good (streamed)". */
function routeName (route) {
  return Object.hasOwn(INGEST_ROUTES, route) ? `/${route} (${INGEST_ROUTES[route].label})` : route
}

/** The demo's step: ten waves of 10 uploads keep each route on the chart a while, /bad well under the demo's budget (docs/demo.md). */
export const demo = Object.freeze({
  title: 'Buffered vs streamed ingest',
  plans: Object.freeze({
    full: Object.freeze({ route: 'both', bytes: '5MB', concurrency: 10, requests: 100 }),
    quick: Object.freeze({ route: 'both', bytes: '1MB', concurrency: 4, requests: 4 })
  }),
  intro: function demoIntro (params) {
    return [
      `The same gzipped JSON document, ${formatDecimalBytes(parseByteSize(params.bytes))} inflated, ` +
        `uploaded ${params.requests} times to each route, ${params.concurrency} at a time.`,
      'POST /bad buffers the whole body, inflates it, then parses it as one string.',
      'POST /good streams it: gunzip, a record scanner, small batches parsed as they come.',
      '/bad runs first, then /good. Both must give the same answer.'
    ]
  },
  question: function demoQuestion () { return 'which route will make the memory line rise, and by about how much?' },
  prompt: 'run it',
  runs: function demoRuns (params) { return [{ params, report: demoReport }] },
  progress: function demoProgress (state) {
    const p = state.progress ?? {}
    if (p.stage === 'input') return 'getting ready (the input document is made once, then reused); /bad goes first'
    if (!p.route) return 'starting'
    const perRoute = state.params.requests
    const done = p.route === 'good' ? p.done - perRoute : p.done
    return `${routeName(p.route)}: ${Math.max(0, done)} of ${perRoute} uploads answered`
  }
})

/** After the run: the table, the verdict on the answers, the comparison; one line for the closing list. */
function demoReport (state, kit) {
  const { params } = state
  const { routes, input, summariesAgree } = state.result
  const rows = ['bad', 'good'].filter(function ran (r) { return routes[r] }).map(function row (r) {
    const figures = routes[r]
    const errors = Object.entries(figures.errors).map(function err ([type, n]) { return `${n} ${type}` }).join(', ')
    return [
      routeName(r),
      `${figures.ok}/${figures.requests}${errors ? ` (${errors})` : ''}`,
      peakOf(figures.server).text,
      figures.mbPerSecond.toFixed(1),
      `${formatDuration(figures.latencyMs.avg)} / ${formatDuration(figures.latencyMs.p99)}`,
      figures.summary ? `${figures.summary.items.toLocaleString('en')} items, sha256 ${figures.summary.sha256.slice(0, 12)}…` : 'none'
    ]
  })
  let verdict
  const identical = '✔ Answers identical: every upload to both routes gave the same summary, byte for byte.'
  if (summariesAgree === true) verdict = kit.good(identical)
  else if (summariesAgree === false) verdict = kit.warn('✘ Answers differ between the routes (or between uploads).')
  else verdict = kit.warn('? No answer to compare: no upload was answered 200.')
  const bad = peakOf(routes.bad?.server)
  const good = peakOf(routes.good?.server)
  const size = formatDecimalBytes(input.bytes)
  const speeds = `/bad ${routes.bad?.mbPerSecond?.toFixed(1)} MB/s, /good ${routes.good?.mbPerSecond?.toFixed(1)} MB/s`
  return {
    lines: [
      '',
      `Measured (${size} JSON, ${formatDecimalBytes(input.compressedBytes)} gzipped, ${params.concurrency} uploads at a time):`,
      ...kit.table(['route', 'answered 200', 'server peak above idle', 'MB/s inflated', 'latency avg / p99', 'answer'], rows),
      verdict,
      `/bad needed ${times(bad.bytes, good.bytes)} the memory of /good (${bad.text} vs ${good.text}), ` +
        `and /good's throughput was ${times(routes.good?.mbPerSecond, routes.bad?.mbPerSecond)} /bad's.`
    ],
    figures: [`Ingest, ${params.concurrency} x ${size} at once: /bad ${bad.text}, /good ${good.text} above idle; ` +
      `${speeds}; answers ${summariesAgree === true ? 'identical' : 'NOT identical'}.`]
  }
}
