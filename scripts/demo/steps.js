/**
 * A step of the demo, from an experiment's `demo` (experiments/<name>/figures.js):
 * its heading, what the teacher says, a question for the class, a pause, its
 * runs through the lab's experiment API (followed live on the terminal), and
 * what each run measured, in the words its `report` gives. Nothing here knows
 * an experiment.
 *
 *   demo = { title, plans: { full, quick }, intro(params, lab) -> lines, question(params) | text,
 *            prompt, progress(state) -> text,
 *            runs(params) -> [{ params, report(state, kit) -> { lines, figures }, mayBeLost? }] }
 *
 * An experiment without `runs` gets one run, reported as the table of its
 * `header` and `rows(result)` and the closing line `summary(result)`.
 */
import { formatMiB } from '../../lib/util/units.js'
import { StepError, describeServerError } from '../../lib/measure/lab-client.js'
import { markdownTable } from '../../lib/measure/table.js'
import { restartLine } from './lab.js'

function failedRun (state) {
  return new StepError(`the ${state.name} run ${state.status}: ${state.error ? describeServerError(state.error.status, state.error) : 'no error given'}`)
}

/** Follow a run on the terminal; the final state. */
async function watchRun (ctx, name, params, describe) {
  const state = await ctx.client.run(name, params, function showProgress (current, rss) {
    // noted as they appear, so that a demo stopped mid-run can still check they are gone
    for (const pid of current.pids ?? []) ctx.pids.add(pid)
    ctx.term.progress(describe(current), rss === null ? '' : ` · server RSS ${formatMiB(rss)}`)
  })
  for (const pid of state.pids ?? []) ctx.pids.add(pid)
  ctx.term.clearProgress()
  return state
}

/** One run and a table of rows: for a demo that gives `header`, `rows` and `summary`. */
function tableRuns (demo) {
  return function oneRun (params) {
    return [{
      params,
      report: function tableReport (state, kit) {
        return { lines: ['', ...kit.table([...demo.header], demo.rows(state.result))], figures: demo.summary ? [demo.summary(state.result)] : [] }
      }
    }]
  }
}

/**
 * Run one step.
 * @param {object} ctx the demo's: term, client, lab, pids, figures, pause, budget, steps (how many)
 * @param {number} number the step's place
 * @param {string} name the experiment
 * @param {object} demo its `demo`
 * @param {object} params the plan's parameters
 * @param {boolean} last the last step (no pause after it: the closing list comes)
 * @returns {Promise<'go'|'quit'|'interrupt'>}
 */
export async function runStep (ctx, number, name, demo, params, last) {
  const { term } = ctx
  term.say()
  term.say(term.bold(`━━ Step ${number} of ${ctx.steps}: ${demo.title} ━━`))
  for (const line of demo.intro(params, { budget: ctx.budget })) term.say(`  ${line}`)
  const question = typeof demo.question === 'function' ? demo.question(params) : demo.question
  term.say(`  ${term.bold('Ask the class:')} ${question}`)
  const ready = await ctx.pause(demo.prompt ?? 'run it')
  if (ready !== 'go') return ready
  const runs = (demo.runs ?? tableRuns(demo))(params)
  for (const run of runs) {
    const pidBefore = ctx.lab.pid
    const state = await watchRun(ctx, name, run.params, demo.progress)
    if (state.status !== 'done' && !run.mayBeLost) throw failedRun(state)
    const kit = {
      good: term.good,
      warn: term.warn,
      bold: term.bold,
      table: function table (header, rows) { return markdownTable(header, rows).split('\n') },
      failed: failedRun,
      restart: function restart () { return restartLine(ctx.lab, pidBefore) }
    }
    const shown = await run.report(state, kit)
    for (const line of shown.lines) term.say(line === '' ? '' : `  ${line}`)
    ctx.figures.push(...shown.figures)
  }
  return last ? 'go' : ctx.pause('go on')
}
