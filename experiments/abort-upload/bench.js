/**
 * `npm run bench -- abort-upload`: the experiment on a fresh lab process,
 * started through POST /experiments as the dashboard and curl start it, so
 * the server measured is nothing but the lab. Its flags are the experiment's
 * parameters (schema-options.js): no default or range is written here.
 *
 *   npm run bench -- abort-upload --uploads 100 --bytes 1MB --abort-at 50
 *
 * Command-line side only: the server never loads this file.
 */
import { startLabProcess } from '../../lib/measure/lab-process.js'
import { createLabClient, describeServerError } from '../../lib/measure/lab-client.js'
import { publishedTable } from '../../lib/measure/published.js'
import { markdownTable } from '../../lib/measure/table.js'
import { DEFAULTS } from '../../lib/options.js'
import { formatDecimalBytes } from '../../lib/units.js'
import * as experiment from './index.js'
import { ROUTE_LABELS, signedMiB } from './result.js'
import { optionsFromSchema, paramsFromFlags, usageFromSchema } from './schema-options.js'

export const name = experiment.name
export const summary = 'pipe() vs pipeline() on aborted uploads: descriptors, files and memory left'
export const usage = usageFromSchema(name, experiment.params)
export const options = optionsFromSchema(experiment.params)

/** Normalise parsed flags: the experiment's own check, a TypeError naming the flag. */
export function normalize (values) {
  // the lab the bench starts runs with the default options
  return paramsFromFlags(experiment, values, DEFAULTS)
}

/**
 * Run it on a fresh lab.
 * @param {object} params normalised by `normalize`
 * @param {(event: object) => void} report progress for the CLI
 * @returns {Promise<{ title: string, markdown: string, charts: object[], data: object }>}
 */
export async function run (params, report) {
  const lab = await startLabProcess()
  let exited = false
  lab.exited.then(function noteExit () { exited = true })
  let state
  try {
    const client = createLabClient({ url: lab.url, hasExited: function hasExited () { return exited } }, new AbortController().signal)
    state = await client.run(name, params, function relayProgress (current) {
      const p = current.progress ?? {}
      const label = [p.stage, p.route ? `/${p.route}` : '', p.cell].filter(Boolean).join(' · ')
      report({ type: 'progress', done: p.done ?? 0, total: p.total ?? 0, label })
    })
  } finally {
    await lab.stop()
  }
  if (state.status !== 'done') throw new Error(`the ${name} run ${state.status}: ${state.error ? describeServerError(state.error.status, state.error) : 'no error given'}`)
  const result = state.result
  return {
    title: experiment.title,
    markdown: `${abortUploadTable(result)}\n${publishedTable(result.published)}`,
    charts: result.charts,
    data: { params, ...result }
  }
}

/** The table: a row per cell, what the descriptors were counted from, then the verdicts. */
export function abortUploadTable (result) {
  const rows = result.cells.map(function row (c) {
    return [ROUTE_LABELS[c.route], c.uploads, c.aborted, c.fdsLeft, c.fdsLeftLater, c.fdsOrphaned, c.filesLeft, c.leftBytes === 0 ? '0' : formatDecimalBytes(c.leftBytes),
      signedMiB(c.heapGrowthBytes), signedMiB(c.rssGrowthBytes), c.fdsClosedByCleanUp, c.cleanedUp ? 'yes' : 'NO']
  })
  const table = markdownTable(['route', 'uploads', 'aborted', 'fds left', 'after GC + wait', 'stream collected', 'files left',
    'bytes left', 'heap', 'RSS', 'closed by clean-up', 'clean after'], rows)
  const { input } = result
  const notes = [
    `Each upload announced ${formatDecimalBytes(input.bytes)} and was aborted after ${formatDecimalBytes(input.abortAtBytes)} (${input.abortAt} %). ` +
      `Descriptors counted from ${result.cells[0]?.fdSource ?? 'n/a'}; heap and RSS after a ${result.gc ? 'forced GC' : 'wait (no GC to force)'}, against the cell's start.`,
    '',
    ...result.verdicts.map(function line (v) { return `- ${v.verdict === 'leaks' ? 'LEAKS' : 'clean'}: ${v.text}` })
  ]
  return `${table}\n\n${notes.join('\n')}\n`
}
