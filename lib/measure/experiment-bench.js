// A bench made from an experiment alone, run on a fresh lab through POST /experiments; its flags are the
// experiment's parameters. Command-line side only: the server never loads it. Usage: README.md.
import { DEFAULTS } from '../config/options.js'
import { optionsFromSchema, paramsFromFlags, usageFromSchema } from '../experiments/schema-options.js'
import { createLabClient, describeServerError } from './lab-client.js'
import { startLabProcess } from './lab-process.js'
import { publishedTable } from './published.js'

/** The error of a run that did not end `done`, with the server's words. */
function runFailed (what, state) {
  const why = state.error ? describeServerError(state.error.status, state.error) : 'no error given'
  return new Error(`the ${what} run ${state.status}: ${why}`)
}

/**
 * `table`: a result's markdown (published figures follow it); `labFlags`: more server.js flags; `appOptions`: what
 * the lab runs with; `warmUp`: params of a run made first and dropped, so a fresh process's one-time growth does
 * not count as the measured run's.
 */
export function experimentBench (experiment, settings) {
  const { name } = experiment
  const { summary, table, labFlags = [], appOptions = DEFAULTS, warmUp = null } = settings
  if (typeof summary !== 'string' || typeof table !== 'function') throw new TypeError('experimentBench needs { summary, table }')

  /** Normalise parsed flags: the experiment's own check, a TypeError naming the flag. */
  function normalize (values) {
    return paramsFromFlags(experiment, values, appOptions)
  }

  /** Run it on a fresh lab (`params` normalised, `report` progress for the CLI). */
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
        if (warm.status !== 'done') throw runFailed(`${name} warm-up`, warm)
      }
      state = await client.run(name, params, relayProgress(''))
    } finally {
      await lab.stop()
    }
    if (state.status !== 'done') throw runFailed(name, state)
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
