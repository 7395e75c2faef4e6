/** The upload experiment's lesson screenshot and classroom demo step, from the run's own result (experiments/README.md#figures). */
import { formatDecimalBytes, formatDuration, formatMiB, formatMs, parseByteSize } from '../../lib/util/units.js'
import { errorList, peakOf, publishedFigures, times } from '../../lib/measure/figure-lines.js'

export const screenshot = Object.freeze({
  name: 'upload',
  flags: [],
  // the sweep per route: streamed stays flat, buffered climbs a step per cell (every upload of a cell held at once)
  params: { route: 'both', concurrency: 50, sweep: 'steps', bytes: '15MB' },
  timeoutMs: 10 * 60_000,
  figures: uploadFigures
})

function uploadFigures ({ result }) {
  const lines = [`file: ${formatDecimalBytes(result.input.bytes)}`]
  for (const c of result.cells) {
    lines.push(`${c.route} C=${c.concurrency}: ${c.ok}/${c.requests} ok${errorList(c.errors)}; ` +
      `server peak RSS ${formatMiB(c.server?.peakRss)}, above idle ${formatMiB(c.server?.peakAboveIdle)}; ` +
      `latency avg ${formatMs(c.latencyMs?.avg)}, max ${formatMs(c.latencyMs?.max)}; ${c.mbPerSecond} MB/s`)
  }
  return [...lines, ...publishedFigures(result.published)]
}

function routeName (route) {
  return { buffer: '/upload-buffer (buffered)', stream: '/upload-stream (streamed)' }[route] ?? route
}

/** The demo's step: 10 x 15 MB buffered stays well under the demo's memory budget (docs/demo.md). */
export const demo = Object.freeze({
  title: 'Buffered vs streamed upload to disk',
  plans: Object.freeze({
    full: Object.freeze({ route: 'both', bytes: '15MB', concurrency: 10, sweep: 'steps' }),
    quick: Object.freeze({ route: 'both', bytes: '1MB', concurrency: 4, sweep: 'steps' })
  }),
  intro: function demoIntro (params) {
    return [
      `A ${formatDecimalBytes(parseByteSize(params.bytes))} file uploaded 1 at a time, then ${params.concurrency} at once, to each route:`,
      'POST /upload-stream pipes each chunk to the file as it arrives;',
      'POST /upload-buffer keeps every chunk, joins them, and writes the file at the end.',
      'The streamed cells run first, on the worker the bomb left fresh.'
    ]
  },
  question: function demoQuestion (params) { return `with ${params.concurrency} uploads at once, how much memory will each route need?` },
  prompt: 'run it',
  runs: function demoRuns (params) { return [{ params, report: demoReport }] },
  progress: function demoProgress (state) {
    const p = state.progress ?? {}
    if (p.stage === 'input') return 'getting ready (the file is made once, then reused); /upload-stream goes first'
    if (!p.route) return 'starting'
    return `${routeName(p.route)}, ${p.concurrency} at once: ${p.done} of ${p.total} uploads in all`
  }
})

/** After the run: a row per cell, the comparison at the highest concurrency. */
function demoReport (state, kit) {
  const { cells } = state.result
  const rows = cells.map(function row (c) {
    const errors = Object.entries(c.errors).map(function err ([type, n]) { return `${n} ${type}` }).join(', ')
    const answered = `${c.ok}/${c.requests}${errors ? ` (${errors})` : ''}`
    return [routeName(c.route), c.concurrency, answered, peakOf(c.server).text, formatDuration(c.latencyMs.avg), c.mbPerSecond.toFixed(1)]
  })
  const lines = [
    '',
    `Measured (${formatDecimalBytes(state.result.input.bytes)} per upload):`,
    ...kit.table(['route', 'at once', 'answered 200', 'server peak above idle', 'latency avg', 'MB/s'], rows)
  ]
  const figures = []
  const top = Math.max(...cells.map(function level (c) { return c.concurrency }))
  const buffered = cells.find(function cell (c) { return c.route === 'buffer' && c.concurrency === top })
  const streamed = cells.find(function cell (c) { return c.route === 'stream' && c.concurrency === top })
  if (buffered && streamed) {
    const b = peakOf(buffered.server)
    const s = peakOf(streamed.server)
    lines.push(`At ${top} at once, buffered needed ${times(b.bytes, s.bytes)} the memory of streamed (${b.text} vs ${s.text}).`)
    const size = formatDecimalBytes(state.result.input.bytes)
    figures.push(`Upload, ${top} x ${size} at once: buffered ${b.text}, streamed ${s.text} above idle; ` +
      `latency ${formatDuration(buffered.latencyMs.avg)} vs ${formatDuration(streamed.latencyMs.avg)}.`)
  }
  return { lines, figures }
}
