#!/usr/bin/env node
/**
 * npm run demo: a five-minute classroom walkthrough through the lab's own experiment API, so the
 * dashboard the class watches follows every run live. Each step is its experiment's `demo`
 * (experiments/<name>/figures.js), run by scripts/demo/steps.js; every figure printed comes from
 * the run that just happened.
 */
import { parseArgs } from 'node:util'
import { loadFigures } from '../experiments/index.js'
import { StepError, createLabClient } from '../lib/measure/lab-client.js'
import { BUDGET, openBrowser, startLab, stopLab } from './demo/lab.js'
import { runStep } from './demo/steps.js'
import { createTerminal } from './demo/terminal.js'
import { runScript } from './cli.js'

const USAGE = `Usage: node scripts/demo.js [options]        (npm run demo -- [options])

A five-minute classroom walkthrough: starts the lab, prints the dashboard's
address, then runs buffered vs streamed ingest, a zip bomb, and buffered vs
streamed uploads to disk, pausing for the class between steps.

  --port N      port for the lab (default 3000, as npm start; 0: any free port).
                If it is taken, the demo says so and takes a free one.
  --open        also open the dashboard in the browser (xdg-open, open or start)
  --no-pause    run straight through, without waiting between steps
  --pause N     wait N seconds at each pause instead of for Enter
  --quick       tiny sizes, the whole demo in well under a minute (a dry run)
  -h, --help    this text

At a terminal the demo waits for Enter at each pause (q, then Enter, quits).
When stdin is not a terminal it does not wait, as with --no-pause.
Ctrl-C stops the demo and the lab at any point.`

const DEFAULT_PORT = 3000
const EXIT_FAILED = 1
const EXIT_INTERRUPTED = 130

const LESSON = 'buffering costs memory in proportion to size and concurrency; streaming costs a constant.'
/** The experiments shown, in order. */
const WALKTHROUGH = Object.freeze(['ingest', 'zip-bomb', 'upload'])

/** The demo's flags (null for --help); pause.mode is enter, timed or none. */
function parseDemoArgs (argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      open: { type: 'boolean' },
      'no-pause': { type: 'boolean' },
      pause: { type: 'string' },
      quick: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help) return null
  const portText = values.port ?? String(DEFAULT_PORT)
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) {
    throw new TypeError(`--port takes a port from 0 to 65535, got "${values.port}"`)
  }
  if (values['no-pause'] && values.pause !== undefined) throw new TypeError('give --pause N or --no-pause, not both')
  if (values.pause !== undefined && (!/^\d+(\.\d+)?$/.test(values.pause) || Number(values.pause) > 600)) {
    throw new TypeError(`--pause takes a number of seconds from 0 to 600, got "${values.pause}"`)
  }
  const untimed = { mode: values['no-pause'] ? 'none' : 'enter', seconds: 0 }
  const pause = values.pause === undefined ? untimed : { mode: 'timed', seconds: Number(values.pause) }
  return { port: Number(portText), open: values.open === true, quick: values.quick === true, pause }
}

/** The walkthrough: 0, 1 (a step failed or the lab died), 130 (interrupted). */
async function main (options) {
  const { stdout, stderr, stdin } = process
  // Enter needs someone at a terminal to press it
  const pause = options.pause.mode === 'enter' && stdin.isTTY !== true ? { mode: 'none', seconds: 0 } : options.pause
  const term = createTerminal({ stdout, stdin, pause })
  const figures = await loadFigures()
  const demos = WALKTHROUGH.map(function demoOf (name) { return { name, demo: figures[name].demo } })

  const interrupt = new AbortController()
  function onSignal (signal) {
    if (interrupt.signal.aborted) return
    term.say()
    term.say(term.warn(`${signal}: stopping the lab…`))
    interrupt.abort()
  }
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP']
  for (const s of signals) process.on(s, onSignal)
  // whatever read the demo has gone (EPIPE, `| head`): nobody is watching, so stop the lab too.
  // Left attached: a write after that fails again, later, and must not crash the clean-up.
  stdout.on('error', function outputGone () {
    if (!interrupt.signal.aborted) interrupt.abort()
  })

  let lab = null
  let labExited = false
  let code = 0
  const budget = BUDGET.replace('MiB', ' MiB')
  const ctx = { term, client: null, lab: null, pids: new Set(), figures: [], pause: null, steps: WALKTHROUGH.length, budget }
  try {
    term.say(term.bold(`streamlab demo${options.quick ? ' (quick: tiny sizes)' : ''}: ${LESSON}`))
    lab = await startLab(options.port, term)
    lab.exited.then(function noteExit () { labExited = true })
    ctx.lab = lab
    ctx.client = createLabClient({ url: lab.url, hasExited: function hasExited () { return labExited } }, interrupt.signal)
    ctx.pause = async function pauseOrStop (prompt) {
      const answer = await term.pause(prompt, interrupt.signal)
      if (answer === 'interrupt') onSignal('SIGINT')
      return answer
    }
    interrupt.signal.throwIfAborted()
    // five minutes on the chart at once: the whole lesson stays in view (the page's default is two)
    const dashboard = `${lab.url}/?window=5`
    const box = `  Dashboard:  ${dashboard}  `
    term.say(`The lab is running: supervisor pid ${lab.supervisorPid}, worker pid ${lab.pid}, memory budget ${budget}, ` +
      '/bad unsafe (no inflate limit).')
    term.say()
    term.say(term.bold(`  ╔${'═'.repeat(box.length)}╗`))
    term.say(term.bold(`  ║${box}║`))
    term.say(term.bold(`  ╚${'═'.repeat(box.length)}╝`))
    term.say()
    if (options.open) {
      const why = await openBrowser(dashboard)
      term.say(why === null ? '  Opening it in the browser…' : `  Could not open a browser (${why}): open the address by hand.`)
    }
    term.say('  Open the dashboard on the projector before step 1: every run below shows on it live,')
    term.say('  with /bad\'s requests shaded vermillion and /good\'s green.')

    let answer = await ctx.pause('start step 1 once the dashboard is up')
    for (const [index, { name, demo }] of demos.entries()) {
      if (answer !== 'go') break
      try {
        answer = await runStep(ctx, index + 1, name, demo, options.quick ? demo.plans.quick : demo.plans.full, index === demos.length - 1)
      } catch (err) {
        if (!(err instanceof StepError)) throw err
        term.clearProgress()
        term.say(`  ${term.warn('✘ This step failed:')} ${err.message}`)
        ctx.figures.push(`(a step failed: ${err.message})`)
        code = EXIT_FAILED
        // a lab that has gone takes the remaining steps with it
        if (err.labGone) break
        answer = await ctx.pause('go on to the next step')
      }
    }
    interrupt.signal.throwIfAborted()

    term.say()
    term.say(term.bold('━━ What we measured, in this run ━━'))
    for (const line of ctx.figures) term.say(`  • ${line}`)
    if (ctx.figures.length === 0) term.say('  (nothing: the demo stopped before the first run)')
    term.say(`  ${LESSON[0].toUpperCase()}${LESSON.slice(1)}`)
    term.say('  To go further: npm start and the dashboard\'s control panel, npm run bench -- --help, npm run demo:bomb.')
    if (answer === 'go') await ctx.pause('stop the lab')
  } catch (err) {
    term.clearProgress()
    if (!interrupt.signal.aborted) {
      stderr.write(`demo: ${err.stack ?? err.message}\n`)
      code = EXIT_FAILED
    }
  } finally {
    if (interrupt.signal.aborted) code = EXIT_INTERRUPTED
    if (lab !== null) {
      term.say()
      if (!await stopLab(lab, [...ctx.pids], term)) code = code || EXIT_FAILED
    }
    for (const s of signals) process.removeListener(s, onSignal)
  }
  return code
}

runScript('demo', { usage: USAGE, readOptions: parseDemoArgs, run: main })
