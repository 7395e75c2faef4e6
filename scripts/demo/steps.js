/**
 * A step of the demo from an experiment's `demo` (experiments/<name>/figures.js): heading, intro,
 * a question, a pause, its runs through the lab's experiment API, and what each measured, in the
 * words its `report` gives. Nothing here knows an experiment.
 *
 *   demo = { title, plans: { full, quick }, intro(params, lab) -> lines, question(params) | text,
 *            prompt, progress(state) -> text,
 *            runs(params) -> [{ params, report(state, kit) -> { lines, figures }, mayBeLost? }] }
 *
 * Without `runs`: one run, reported as the table of `header` and `rows(result)`, then `summary(result)`.
 */
import { formatMiB } from '../../lib/util/units.js'
import { StepError, describeServerError } from '../../lib/measure/lab-client.js'
import { markdownTable } from '../../lib/measure/table.js'
import { restartLine } from './lab.js'

function failedRun (state) {
  const why = state.error ? describeServerError(state.error.status, state.error) : 'no error given'
  return new StepError(`the ${state.name} run ${state.status}: ${why}`)
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
        const figures = demo.summary ? [demo.summary(state.result)] : []
        return { lines: ['', ...kit.table([...demo.header], demo.rows(state.result))], figures }
      }
    }]
  }
}

/** Step `number` (experiment `name`) with ctx = the demo's term, client, lab, pids, figures, pause, budget, steps. */
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
