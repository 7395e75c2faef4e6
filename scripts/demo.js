#!/usr/bin/env node
/**
 * npm run demo: a five-minute classroom walkthrough. Starts the lab, prints
 * the dashboard's address, then runs three steps through the lab's own
 * experiment API (POST /experiments), so the dashboard the class watches
 * follows every run live:
 *
 *   1. buffered vs streamed ingest (the ingest experiment),
 *   2. a zip bomb against /good, then against an unguarded /bad that the
 *      memory budget kills (the zip-bomb experiment, one run per route),
 *   3. buffered vs streamed uploads to disk (the upload experiment),
 *
 * with a question for the class before each run and a pause after it.
 * Every figure printed comes from the run that just happened. Each step is
 * its experiment's `demo` (experiments/<name>/figures.js, through the
 * registry), run by scripts/demo/steps.js; the terminal and the lab are
 * scripts/demo/terminal.js and scripts/demo/lab.js.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { loadFigures } from '../experiments/index.js'
import { StepError, createLabClient } from '../lib/measure/lab-client.js'
import { BUDGET, openBrowser, startLab, stopLab } from './demo/lab.js'
import { runStep } from './demo/steps.js'
import { createTerminal } from './demo/terminal.js'

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
const EXIT_USAGE = 2
const EXIT_INTERRUPTED = 130

/**
 * The walkthrough: the experiments shown, in order. What each step sends, says and shows is
 * the experiment's own `demo` (experiments/<name>/figures.js), read through the registry.
 */
const WALKTHROUGH = Object.freeze(['ingest', 'zip-bomb', 'upload'])

/**
 * Read the demo's flags.
 * @param {string[]} argv the arguments after the script's name
 * @returns {{ help: boolean, port: number, open: boolean, quick: boolean,
 *   pause: { mode: 'enter'|'timed'|'none', seconds: number } }}
 * @throws {TypeError} for an unknown flag or a bad value, with a message for the user
 */
function parseDemoArgs (argv) {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      port: { type: 'string' },
      open: { type: 'boolean' },
      'no-pause': { type: 'boolean' },
      pause: { type: 'string' },
      quick: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  const portText = values.port ?? String(DEFAULT_PORT)
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) {
    throw new TypeError(`--port takes a port from 0 to 65535, got "${values.port}"`)
  }
  if (values['no-pause'] && values.pause !== undefined) throw new TypeError('give --pause N or --no-pause, not both')
  let pause = { mode: 'enter', seconds: 0 }
  if (values['no-pause']) pause = { mode: 'none', seconds: 0 }
  if (values.pause !== undefined) {
    if (!/^\d+(\.\d+)?$/.test(values.pause) || Number(values.pause) > 600) {
      throw new TypeError(`--pause takes a number of seconds from 0 to 600, got "${values.pause}"`)
    }
    pause = { mode: 'timed', seconds: Number(values.pause) }
  }
  return {
    help: values.help === true,
    port: Number(portText),
    open: values.open === true,
    quick: values.quick === true,
    pause
  }
}

/* ---------- the walkthrough ---------- */

/**
 * Run the demo.
 * @param {string[]} argv the arguments after the script's name
 * @param {{ stdout?: NodeJS.WriteStream, stderr?: NodeJS.WriteStream, stdin?: NodeJS.ReadStream }} [io]
 * @returns {Promise<number>} the exit code: 0, 1 (a step failed or the lab died), 2 (usage), 130 (interrupted)
 */
async function main (argv, io = {}) {
  const stdout = io.stdout ?? process.stdout
  const stderr = io.stderr ?? process.stderr
  const stdin = io.stdin ?? process.stdin
  let options
  try {
    options = parseDemoArgs(argv)
  } catch (err) {
    stderr.write(`demo: ${err.message}\n\n${USAGE}\n`)
    return EXIT_USAGE
  }
  if (options.help) {
    stdout.write(USAGE + '\n')
    return 0
  }
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
  const ctx = { term, client: null, lab: null, pids: new Set(), figures: [], pause: null, steps: WALKTHROUGH.length, budget: BUDGET.replace('MiB', ' MiB') }
  try {
    term.say(term.bold(`streamlab demo${options.quick ? ' (quick: tiny sizes)' : ''}: buffering costs memory in proportion to size and concurrency; streaming costs a constant.`))
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
    term.say(`The lab is running: supervisor pid ${lab.supervisorPid}, worker pid ${lab.pid}, memory budget ${BUDGET.replace('MiB', ' MiB')}, /bad unsafe (no inflate limit).`)
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

    const steps = demos.map(function stepOf ({ name, demo }, index) {
      const params = options.quick ? demo.plans.quick : demo.plans.full
      return function step () { return runStep(ctx, index + 1, name, demo, params, index === demos.length - 1) }
    })
    let answer = await ctx.pause('start step 1 once the dashboard is up')
    for (const step of steps) {
      if (answer !== 'go') break
      try {
        answer = await step()
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
    term.say('  Buffering costs memory in proportion to size and concurrency; streaming costs a constant.')
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

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(function setExitCode (code) {
    process.exitCode = code
  }, function failed (err) {
    console.error(`demo: ${err.stack ?? err.message}`)
    process.exitCode = EXIT_FAILED
  })
}
