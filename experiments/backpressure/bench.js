/**
 * `npm run bench -- backpressure`: the measured cases, each a run of the
 * experiment on a fresh lab process (lib/measure/experiment-bench.js):
 *
 *   a  a slow consumer (50 ms a 64 KiB batch), the client as fast as it can, "pipeline"
 *   b  the same with the switch on "ignore"
 *   flags  one run of the flags as given
 *
 * The other flags are the experiment's parameters (its schema): a case sets
 * mode, delayMs and rate itself, and refuses a flag that would change them.
 *
 *   npm run bench -- backpressure --figures backpressure
 *   npm run bench -- backpressure --cases flags --mode ignore --delay-ms 20 --cap 256MiB
 *
 * Command-line side only: the server never loads this file.
 */
import { experimentBench } from '../../lib/measure/experiment-bench.js'
import { markdownTable, mib } from '../../lib/measure/table.js'
import { list } from '../../lib/measure/args.js'
import * as experiment from './index.js'

/** The cases the figures come from: what each sets over the flags. */
export const CASES = Object.freeze({
  a: Object.freeze({ label: 'A: slow consumer, pipeline', params: Object.freeze({ mode: 'pipeline', delayMs: 50, rate: 0 }) }),
  b: Object.freeze({ label: 'B: slow consumer, ignore', params: Object.freeze({ mode: 'ignore', delayMs: 50, rate: 0 }) }),
  flags: Object.freeze({ label: 'the flags as given', params: Object.freeze({}) })
})
const CASE_FLAGS = Object.freeze({ mode: 'mode', delayMs: 'delay-ms', rate: 'rate' })

/**
 * Each case follows a short run on the same lab (docs/backpressure.md, "Measured cases"): a fresh
 * process's first upload grows its code and heap once, which is no buffer's.
 */
function warmUp (params) {
  return { ...params, mode: 'pipeline', seconds: WARM_UP_SECONDS }
}
const WARM_UP_SECONDS = 10

const single = experimentBench(experiment, { summary: 'one run', table: function noTable () { return '' }, warmUp })

export const name = experiment.name
export const summary = 'a slow consumer behind pipeline() and behind writes that ignore write()\'s return: every buffer, live'
/** The schema's flags, then --cases, in their column. */
const column = /^\s*--\S+ \S+\s+/.exec(single.usage.split('\n')[1])[0].length
export const usage = `${single.usage}
${'  --cases LIST'.padEnd(column)}a (slow consumer, pipeline), b (the same, ignore), flags (the flags as given); default a,b`

export const options = Object.freeze({ ...single.options, cases: Object.freeze({ type: 'string', default: 'a,b' }) })

/** Normalise parsed flags; a TypeError names the bad flag. */
export function normalize (values) {
  const cases = list(values.cases, function caseName (c) {
    if (!Object.hasOwn(CASES, c)) throw new TypeError(`--cases takes ${Object.keys(CASES).join(', ')}, got "${c}"`)
    return c
  })
  const runs = cases.map(function paramsOf (c) {
    for (const [param, flag] of Object.entries(CASE_FLAGS)) {
      if (values[flag] !== undefined && Object.hasOwn(CASES[c].params, param)) {
        throw new TypeError(`--${flag} is set by case ${c} (${CASES[c].params[param]}): use --cases flags to set it`)
      }
    }
    const flags = { ...values }
    delete flags.cases
    return { case: c, params: single.normalize({ ...flags, ...flagValues(CASES[c].params) }) }
  })
  return { runs }
}

/** A case's params as the flags would give them. */
function flagValues (params) {
  return Object.fromEntries(Object.entries(params).map(function asFlag ([param, value]) { return [CASE_FLAGS[param], String(value)] }))
}

/**
 * Run each case on a fresh lab.
 * @returns {Promise<{ title: string, markdown: string, charts: object[], data: object }>}
 */
export async function run (opts, report) {
  const results = []
  for (const [k, { case: c, params }] of opts.runs.entries()) {
    const outcome = await single.run(params, function relay (event) {
      report(event.type === 'progress' ? { ...event, label: `case ${c} (${k + 1}/${opts.runs.length}) ${event.label}` } : event)
    })
    results.push({ case: c, label: CASES[c].label, params, result: outcome.data, runId: outcome.runId })
  }
  return {
    title: experiment.title,
    markdown: casesTable(results),
    charts: results.flatMap(function chartsOf (r) {
      return (r.result.charts ?? []).map(function labelled (chart) { return { ...chart, title: `${r.label}: ${chart.title}` } })
    }),
    data: { cases: results.map(caseFigures) },
    // the record kept is the last case's (lib/runs/recorder.js)
    runId: results.at(-1)?.runId
  }
}

/** One case as the figures file keeps it. */
function caseFigures ({ case: name, label, params, result }) {
  const { cells, tables, verdicts, stop, kernel, server } = result
  return { case: name, label, params, cell: cells[0], stages: tables[0], verdicts, stop, kernel, server }
}

/** How a verdict's `ok` reads in the bench's notes. */
const OK_WORDS = Object.freeze({ true: 'holds', false: 'FAILS', null: 'n/a' })

/** A row per case, then each case's verdicts. */
function casesTable (results) {
  const rows = results.map(function row ({ label, result }) {
    const c = result.cells[0]
    return [label, c.stoppedBy, String(c.seconds), mib(c.server?.peakAboveIdle), mib(c.peakHeldBytes),
      String(c.arrivedInflatedMBps ?? 'n/a'), String(c.consumerMBps ?? 'n/a'), mib(c.kernelReceivePeakBytes), mib(c.unreadPeakBytes),
      c.stagesAtBound || 'none']
  })
  const table = markdownTable(['case', 'stopped by', 's', 'peak RSS above idle MiB', 'peak held MiB', 'client MB/s arriving (inflated)',
    'consumer MB/s', 'kernel receive queue peak MiB', 'unread in the kernels peak MiB', 'streams at their bound'], rows)
  const notes = results.flatMap(function verdictLines ({ label, result }) {
    return result.verdicts.map(function line (v) { return `- ${label}: ${OK_WORDS[v.ok]}, ${v.verdict}: ${v.text}` })
  })
  return `${table}\n\n${notes.join('\n')}\n`
}
