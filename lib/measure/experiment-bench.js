/**
 * A bench made from an experiment alone: `npm run bench -- <name>` runs the
 * experiment on a fresh lab process, started through POST /experiments as
 * the dashboard and curl start it, so the server measured is nothing but
 * the lab. Its flags are the experiment's parameters
 * (lib/experiments/schema-options.js): no default or range is written in the
 * bench. An experiment folder's bench.js is then a few lines:
 *
 *   export const { name, summary, usage, options, normalize, run } =
 *     experimentBench(experiment, { summary: '...', table: myTable })
 *
 * Command-line side only: the server never loads this file.
 */
import { DEFAULTS } from '../config/options.js'
import { optionsFromSchema, paramsFromFlags, usageFromSchema } from '../experiments/schema-options.js'
import { createLabClient, describeServerError } from './lab-client.js'
import { startLabProcess } from './lab-process.js'
import { publishedTable } from './published.js'

/**
 * @param {{ summary: string, table: (result: object) => string, labFlags?: string[], appOptions?: object,
 *   warmUp?: (params: object) => object }} settings
 *   `table`: the markdown of a result (the published figures are added after it);
 *   `labFlags`: extra server.js flags for the fresh lab; `appOptions`: what the lab runs with (limits some params);
 *   `warmUp`: the params of a run made first on the same lab, its result dropped, where a fresh process's
 *   one-time growth (code compiled, heap grown) would otherwise count as the measured run's
 * @returns {Readonly<{ name: string, summary: string, usage: string, options: object,
 *   normalize: (values: object) => object, run: (params: object, report: Function) => Promise<object> }>}
 */
export function experimentBench (experiment, settings) {
  const { name } = experiment
  const { summary, table, labFlags = [], appOptions = DEFAULTS, warmUp = null } = settings
  if (typeof summary !== 'string' || typeof table !== 'function') throw new TypeError('experimentBench needs { summary, table }')

  /** Normalise parsed flags: the experiment's own check, a TypeError naming the flag. */
  function normalize (values) {
    return paramsFromFlags(experiment, values, appOptions)
  }

  /**
   * Run it on a fresh lab.
   * @param {object} params normalised by `normalize`
   * @param {(event: object) => void} report progress for the CLI
   */
  async function run (params, report) {
    const lab = await startLabProcess(labFlags)
    let exited = false
    lab.exited.then(function noteExit () { exited = true })
    let state
    try {
      const client = createLabClient({ url: lab.url, hasExited: function hasExited () { return exited } }, new AbortController().signal)
      function relayProgress (prefix) {
        return function relay (current) {
          const p = current.progress ?? {}
          const label = [prefix, p.stage, p.route ? `/${p.route}` : '', p.cell].filter(Boolean).join(' · ')
          report({ type: 'progress', done: p.done ?? 0, total: p.total ?? 0, label })
        }
      }
      if (warmUp !== null) {
        const warm = await client.run(name, warmUp(params), relayProgress('warm-up'))
        if (warm.status !== 'done') throw new Error(`the ${name} warm-up run ${warm.status}: ${warm.error ? describeServerError(warm.error.status, warm.error) : 'no error given'}`)
      }
      state = await client.run(name, params, relayProgress(''))
    } finally {
      await lab.stop()
    }
    if (state.status !== 'done') throw new Error(`the ${name} run ${state.status}: ${state.error ? describeServerError(state.error.status, state.error) : 'no error given'}`)
    const result = state.result
    return {
      title: experiment.title,
      markdown: result.published?.length > 0 ? `${table(result)}\n${publishedTable(result.published)}` : table(result),
      charts: result.charts ?? [],
      data: { params, ...result },
      // the lab kept the run's record under this id (lib/runs/recorder.js)
      runId: state.id
    }
  }

  return Object.freeze({
    name,
    summary,
    usage: usageFromSchema(name, experiment.params),
    options: optionsFromSchema(experiment.params),
    normalize,
    run
  })
}
