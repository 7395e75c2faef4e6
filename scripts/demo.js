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
 * Every figure printed comes from the run that just happened.
 */
import { spawn } from 'node:child_process'
import path from 'node:path'
import readline from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { formatDecimalBytes, formatDuration, formatMiB, parseByteSize } from '../lib/units.js'
import { StepError, createLabClient, describeServerError } from '../lib/measure/lab-client.js'
import { startLabProcess } from '../lib/measure/lab-process.js'
import { markdownTable } from '../lib/measure/table.js'
import { processAlive } from '../lib/process-alive.js'

export const USAGE = `Usage: node scripts/demo.js [options]        (npm run demo -- [options])

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

/**
 * The lab runs as a container would, under a memory budget, with /bad's inflate limit taken
 * away (--unsafe-bad), so that the zip bomb really kills a worker and the dashboard shows the
 * crash. Steps 1 and 3 are sized to stay well under this budget (see PLANS).
 */
const BUDGET = '512MiB'
const DEFAULT_PORT = 3000
const EXIT_FAILED = 1
const EXIT_USAGE = 2
const EXIT_INTERRUPTED = 130

/**
 * What each step sends. Only the bomb is meant to reach the budget, so the other loads stay a
 * good way under it on top of an idle worker of about 90 MiB, with room for a slower or busier
 * machine. Buffered, /bad holds several times each body it is sent (the gzip, the inflated
 * bytes, the string, the parsed objects), and V8 gives the heap back late: 10 x 10 MB at once
 * peaked 310 to 360 MiB above idle on the 2-core development machine, too near 512 MiB, while
 * 10 x 5 MB peaked 180 to 200 MiB, and no higher over ten waves of uploads, which keep each
 * route on the chart for about ten seconds. The buffered uploads (10 x 15 MB) peaked about
 * 250 MiB above idle. The bomb is the lab's default: 10 GB of JSON in about 10 MB of gzip.
 */
const PLANS = Object.freeze({
  full: Object.freeze({
    ingest: Object.freeze({ route: 'both', bytes: '5MB', concurrency: 10, requests: 100 }),
    bomb: Object.freeze({ variant: 'ratio' }),
    upload: Object.freeze({ route: 'both', bytes: '15MB', concurrency: 10, sweep: 'steps' })
  }),
  quick: Object.freeze({
    ingest: Object.freeze({ route: 'both', bytes: '1MB', concurrency: 4, requests: 4 }),
    bomb: Object.freeze({ variant: 'ratio' }),
    upload: Object.freeze({ route: 'both', bytes: '1MB', concurrency: 4, sweep: 'steps' })
  })
})

const STEPS = 3

/**
 * Read the demo's flags.
 * @param {string[]} argv the arguments after the script's name
 * @returns {{ help: boolean, port: number, open: boolean, quick: boolean,
 *   pause: { mode: 'enter'|'timed'|'none', seconds: number } }}
 * @throws {TypeError} for an unknown flag or a bad value, with a message for the user
 */
export function parseDemoArgs (argv) {
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

/* ---------- formatting: figures as the class reads them ---------- */

function times (a, b) {
  return Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(a / b >= 10 ? 0 : 1)}x` : 'n/a'
}

/** Above idle where the kernel's peak could be reset (Linux), else the peak itself. */
function peakOf (server) {
  if (Number.isFinite(server?.peakAboveIdle)) return { bytes: server.peakAboveIdle, text: `+${formatMiB(server.peakAboveIdle)}` }
  return { bytes: server?.peakRss ?? null, text: `${formatMiB(server?.peakRss)} (peak RSS)` }
}

function indent (text, by = '  ') {
  return text.split('\n').map(function indentLine (line) { return by + line }).join('\n')
}

/* ---------- the terminal: output, progress, pauses ---------- */

function createTerminal ({ stdout, stdin, pause }) {
  const tty = stdout.isTTY === true
  const colour = tty && !process.env.NO_COLOR
  let progressShown = false
  let lastLine = ''
  let lastLineAt = 0

  function style (code, text) {
    return colour ? `\x1b[${code}m${text}\x1b[0m` : text
  }
  function clearProgress () {
    if (progressShown) stdout.write('\r\x1b[2K')
    progressShown = false
  }
  function say (line = '') {
    clearProgress()
    stdout.write(line + '\n')
  }
  return {
    say,
    bold: function bold (text) { return style('1', text) },
    good: function good (text) { return style('1;32', text) },
    warn: function warn (text) { return style('1;31', text) },
    clearProgress,
    /**
     * One line that keeps changing at a terminal; in a log, a line when the
     * step changes or every few seconds, so a file does not fill with them.
     */
    progress: function progress (text, extra = '') {
      if (tty) {
        stdout.write(`\r\x1b[2K  ${style('2', `… ${text}${extra}`)}`)
        progressShown = true
        return
      }
      const now = Date.now()
      if (text === lastLine || now - lastLineAt < 2000) return
      lastLine = text
      lastLineAt = now
      stdout.write(`  … ${text}${extra}\n`)
    },
    /**
     * Wait for the teacher: Enter (q quits), a number of seconds, or not at all.
     * @returns {Promise<'go'|'quit'|'interrupt'>}
     */
    pause: async function pauseForClass (next, signal) {
      clearProgress()
      if (pause.mode === 'none') return 'go'
      if (pause.mode === 'timed') {
        stdout.write(style('2', `  (next: ${next}, in ${pause.seconds} s)`) + '\n')
        await sleep(pause.seconds * 1000, undefined, { signal })
        return 'go'
      }
      // readline puts the terminal in raw mode: Ctrl-C arrives as its 'SIGINT' event, not as a signal
      const rl = readline.createInterface({ input: stdin, output: stdout })
      let onAbort = null
      try {
        return await new Promise(function askTeacher (resolve) {
          onAbort = function aborted () { resolve('interrupt') }
          signal.addEventListener('abort', onAbort, { once: true })
          rl.once('SIGINT', function interrupted () { resolve('interrupt') })
          rl.once('close', function endOfInput () { resolve('quit') })
          rl.question(style('1', `Press Enter to ${next} `) + style('2', '(q to quit) '), function answered (answer) {
            resolve(/^\s*q/i.test(answer) ? 'quit' : 'go')
          })
        })
      } finally {
        signal.removeEventListener('abort', onAbort)
        rl.close()
      }
    }
  }
}

/* ---------- the lab ---------- */

async function startLab (port, term) {
  const flags = ['--unsafe-bad', '--memory-limit', BUDGET]
  try {
    return await startLabProcess(['--port', String(port), ...flags])
  } catch (err) {
    if (port === 0 || !/EADDRINUSE/.test(err.message)) throw err
    term.say(term.warn(`Port ${port} is taken (is \`npm start\` or another demo running?): the lab takes a free port instead.`))
    return startLabProcess(['--port', '0', ...flags])
  }
}

/** Every worker pid the supervisor has announced: the first, and each one after a restart. */
function workerPids (lab) {
  return [...new Set([...lab.output().matchAll(/worker pid (\d+)/g)].map(function pid (m) { return Number(m[1]) }))]
}

/**
 * Stop the lab and check that nothing it started is left: the supervisor, its workers and the
 * experiments' load processes. Anything still there after a grace period is killed, by pid.
 */
async function stopLab (lab, pids, term) {
  await lab.stop()
  const all = [lab.supervisorPid, ...workerPids(lab), ...pids]
  const deadline = Date.now() + 5000
  let left = all.filter(processAlive)
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(100)
    left = left.filter(processAlive)
  }
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // gone between the check and the kill: what was wanted
    }
  }
  const workers = workerPids(lab)
  if (left.length > 0) {
    term.say(term.warn(`The lab has stopped, but processes ${left.join(', ')} were still running: killed.`))
    return false
  }
  term.say(`The lab has stopped: supervisor ${lab.supervisorPid}, worker${workers.length > 1 ? 's' : ''} ${workers.join(', ')} ` +
    `and ${pids.length} load process${pids.length === 1 ? '' : 'es'} are gone.`)
  return true
}

/** Try to open the dashboard; null when the opener started, else why not. */
function openBrowser (url) {
  let command = 'xdg-open'
  let args = [url]
  if (process.platform === 'darwin') command = 'open'
  if (process.platform === 'win32') {
    command = 'cmd'
    args = ['/c', 'start', '', url]
  }
  return new Promise(function launch (resolve) {
    // its own process group: Ctrl-C in the demo must not close the class's browser
    const child = spawn(command, args, { stdio: 'ignore', detached: true })
    const timer = setTimeout(function stillRunning () {
      child.unref()
      resolve(null)
    }, 3000)
    child.once('error', function failed (err) {
      clearTimeout(timer)
      resolve(`${command}: ${err.code ?? err.message}`)
    })
    child.once('exit', function exited (code) {
      clearTimeout(timer)
      resolve(code === 0 ? null : `${command} exited with code ${code}`)
    })
  })
}

/* ---------- the steps ---------- */

function heading (term, number, title) {
  term.say()
  term.say(term.bold(`━━ Step ${number} of ${STEPS}: ${title} ━━`))
}

function askClass (term, question) {
  term.say(`  ${term.bold('Ask the class:')} ${question}`)
}

function routeName (route) {
  return { bad: '/bad (buffered)', good: '/good (streamed)', buffer: '/upload-buffer (buffered)', stream: '/upload-stream (streamed)' }[route] ?? route
}

function ingestProgress (state) {
  const p = state.progress ?? {}
  if (p.stage === 'input') return 'getting ready (the input document is made once, then reused); /bad goes first'
  if (!p.route) return 'starting'
  const perRoute = state.params.requests
  const done = p.route === 'good' ? p.done - perRoute : p.done
  return `${routeName(p.route)}: ${Math.max(0, done)} of ${perRoute} uploads answered`
}

function bombProgress (state) {
  const p = state.progress ?? {}
  if (!p.route) return 'warming up'
  if (p.done > 0) return `/${p.route} has answered`
  return p.stage?.includes('unsafe') ? `the bomb is going into /${p.route} (no inflate limit: watch RSS)` : `the bomb is going into /${p.route}`
}

function uploadProgress (state) {
  const p = state.progress ?? {}
  if (p.stage === 'input') return 'getting ready (the file is made once, then reused); /upload-stream goes first'
  if (!p.route) return 'starting'
  return `${routeName(p.route)}, ${p.concurrency} at once: ${p.done} of ${p.total} uploads in all`
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

function failedRun (state) {
  return new StepError(`the ${state.name} run ${state.status}: ${state.error ? describeServerError(state.error.status, state.error) : 'no error given'}`)
}

async function ingestStep (ctx, params) {
  const { term } = ctx
  heading(term, 1, 'Buffered vs streamed ingest')
  term.say(`  The same gzipped JSON document, ${formatDecimalBytes(parseByteSize(params.bytes))} inflated, uploaded ${params.requests} times to each route, ` +
    `${params.concurrency} at a time.`)
  term.say('  POST /bad buffers the whole body, inflates it, then parses it as one string.')
  term.say('  POST /good streams it: gunzip, a record scanner, small batches parsed as they come.')
  term.say('  /bad runs first, then /good. Both must give the same answer.')
  askClass(term, 'which route will make the memory line rise, and by about how much?')
  const ready = await ctx.pause('run it')
  if (ready !== 'go') return ready
  const state = await watchRun(ctx, 'ingest', params, ingestProgress)
  if (state.status !== 'done') throw failedRun(state)
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
  term.say()
  term.say(`  Measured (${formatDecimalBytes(input.bytes)} JSON, ${formatDecimalBytes(input.compressedBytes)} gzipped, ${params.concurrency} uploads at a time):`)
  term.say(indent(markdownTable(['route', 'answered 200', 'server peak above idle', 'MB/s inflated', 'latency avg / p99', 'answer'], rows)))
  let verdict
  if (summariesAgree === true) verdict = term.good('✔ Answers identical: every upload to both routes gave the same summary, byte for byte.')
  else if (summariesAgree === false) verdict = term.warn('✘ Answers differ between the routes (or between uploads).')
  else verdict = term.warn('? No answer to compare: no upload was answered 200.')
  term.say(`  ${verdict}`)
  const bad = peakOf(routes.bad?.server)
  const good = peakOf(routes.good?.server)
  term.say(`  /bad needed ${times(bad.bytes, good.bytes)} the memory of /good (${bad.text} vs ${good.text}), ` +
    `and /good's throughput was ${times(routes.good?.mbPerSecond, routes.bad?.mbPerSecond)} /bad's.`)
  ctx.figures.push(`Ingest, ${params.concurrency} x ${formatDecimalBytes(input.bytes)} at once: /bad ${bad.text}, /good ${good.text} above idle; ` +
    `/bad ${routes.bad?.mbPerSecond?.toFixed(1)} MB/s, /good ${routes.good?.mbPerSecond?.toFixed(1)} MB/s; answers ${summariesAgree === true ? 'identical' : 'NOT identical'}.`)
  return ctx.pause('go on')
}

async function bombStep (ctx, params) {
  const { term, lab } = ctx
  heading(term, 2, 'The zip bomb')
  term.say('  A zip bomb: a few MB of gzip that inflate to gigabytes of valid JSON.')
  term.say(`  The lab runs under a ${BUDGET.replace('MiB', ' MiB')} memory budget, as in a container: past it, the supervisor kills the worker.`)
  term.say('  Today /bad has no inflate limit at all (--unsafe-bad). /good goes first, then /bad.')
  askClass(term, 'what will each route do with it? Will the lab survive?')
  const ready = await ctx.pause('send the bomb')
  if (ready !== 'go') return ready

  const good = await watchRun(ctx, 'zip-bomb', { ...params, route: 'good' }, bombProgress)
  if (good.status !== 'done') throw failedRun(good)
  const bomb = good.result.bomb
  const g = good.result.routes.good
  term.say(`  The bomb: ${formatDecimalBytes(bomb.inflatedBytes)} of JSON in ${formatDecimalBytes(bomb.compressedBytes)} of gzip (${bomb.ratio}:1).`)
  const refused = g.status === 200 ? 'ACCEPTED it (200)' : `refused it: ${g.status} ${g.errorType}`
  term.say(`  /good ${refused} after ${formatDecimalBytes(g.inflatedBytesReached)} inflated, in ${formatDuration(g.ms)}; ` +
    `server peak ${peakOf(g.server).text} above idle.`)
  ctx.figures.push(`Zip bomb (${formatDecimalBytes(bomb.inflatedBytes)} in ${formatDecimalBytes(bomb.compressedBytes)}): /good ${refused} after ${formatDecimalBytes(g.inflatedBytesReached)}, ` +
    `${formatDuration(g.ms)}, ${peakOf(g.server).text}.`)

  const pidBefore = lab.pid
  const bad = await watchRun(ctx, 'zip-bomb', { ...params, route: 'bad' }, bombProgress)
  if (bad.status === 'done') {
    const b = bad.result.routes.bad
    term.say(`  /bad answered ${b.status} ${b.errorType ?? ''} in ${formatDuration(b.ms)}; server peak ${peakOf(b.server).text} above idle.`)
    ctx.figures.push(`Zip bomb: /bad answered ${b.status} ${b.errorType ?? ''} (not killed), ${peakOf(b.server).text}.`)
  } else if (bad.error?.type === 'worker.crashed') {
    const restart = await restartLine(lab, pidBefore)
    const killed = bad.error.reason === 'memory-limit'
      ? `passed its ${formatMiB(bad.error.budget)} budget (RSS ${formatMiB(bad.error.rss)}) and was killed`
      : `died (${bad.error.reason})`
    term.say(`  /bad: the worker ${term.warn(killed)}, ${formatDuration(bad.endedAt - bad.startedAt)} into the run.`)
    term.say(`  The lab restarted it${restart ? ` in ${restart.ms} ms (worker pid ${restart.oldPid} → ${restart.newPid})` : ''}; ` +
      'the port never closed. The dashboard shows a crash banner.')
    const fate = bad.error.reason === 'memory-limit'
      ? `was killed at ${formatMiB(bad.error.rss)} (budget ${formatMiB(bad.error.budget)})`
      : `died (${bad.error.reason})`
    ctx.figures.push(`Zip bomb: /bad's worker ${fate}${restart ? ` and back in ${restart.ms} ms` : ''}.`)
  } else {
    throw failedRun(bad)
  }
  return ctx.pause('go on')
}

/** The supervisor's own line about the restart: how long it took and the pids. */
async function restartLine (lab, oldPid) {
  const deadline = Date.now() + 5000
  for (;;) {
    const lines = [...lab.output().matchAll(/streamlab: worker (\d+) killed: .*?; restarted in (\d+) ms \(worker pid (\d+)\)/g)]
    const line = lines.find(function ofThisWorker (m) { return Number(m[1]) === oldPid })
    if (line) return { oldPid, ms: Number(line[2]), newPid: Number(line[3]) }
    if (Date.now() > deadline) return null
    await sleep(50)
  }
}

async function uploadStep (ctx, params) {
  const { term } = ctx
  heading(term, 3, 'Buffered vs streamed upload to disk')
  term.say(`  A ${formatDecimalBytes(parseByteSize(params.bytes))} file uploaded 1 at a time, then ${params.concurrency} at once, to each route:`)
  term.say('  POST /upload-stream pipes each chunk to the file as it arrives;')
  term.say('  POST /upload-buffer keeps every chunk, joins them, and writes the file at the end.')
  term.say('  The streamed cells run first, on the worker the bomb left fresh.')
  askClass(term, `with ${params.concurrency} uploads at once, how much memory will each route need?`)
  const ready = await ctx.pause('run it')
  if (ready !== 'go') return ready
  const state = await watchRun(ctx, 'upload', params, uploadProgress)
  if (state.status !== 'done') throw failedRun(state)
  const { cells } = state.result
  const rows = cells.map(function row (c) {
    const errors = Object.entries(c.errors).map(function err ([type, n]) { return `${n} ${type}` }).join(', ')
    return [
      routeName(c.route),
      c.concurrency,
      `${c.ok}/${c.requests}${errors ? ` (${errors})` : ''}`,
      peakOf(c.server).text,
      formatDuration(c.latencyMs.avg),
      c.mbPerSecond.toFixed(1)
    ]
  })
  term.say()
  term.say(`  Measured (${formatDecimalBytes(state.result.input.bytes)} per upload):`)
  term.say(indent(markdownTable(['route', 'at once', 'answered 200', 'server peak above idle', 'latency avg', 'MB/s'], rows)))
  const top = Math.max(...cells.map(function level (c) { return c.concurrency }))
  const buffered = cells.find(function cell (c) { return c.route === 'buffer' && c.concurrency === top })
  const streamed = cells.find(function cell (c) { return c.route === 'stream' && c.concurrency === top })
  if (buffered && streamed) {
    const b = peakOf(buffered.server)
    const s = peakOf(streamed.server)
    term.say(`  At ${top} at once, buffered needed ${times(b.bytes, s.bytes)} the memory of streamed (${b.text} vs ${s.text}).`)
    ctx.figures.push(`Upload, ${top} x ${formatDecimalBytes(state.result.input.bytes)} at once: buffered ${b.text}, streamed ${s.text} above idle; ` +
      `latency ${formatDuration(buffered.latencyMs.avg)} vs ${formatDuration(streamed.latencyMs.avg)}.`)
  }
  return 'go'
}

/* ---------- the walkthrough ---------- */

/**
 * Run the demo.
 * @param {string[]} argv the arguments after the script's name
 * @param {{ stdout?: NodeJS.WriteStream, stderr?: NodeJS.WriteStream, stdin?: NodeJS.ReadStream }} [io]
 * @returns {Promise<number>} the exit code: 0, 1 (a step failed or the lab died), 2 (usage), 130 (interrupted)
 */
export async function main (argv, io = {}) {
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
  const plan = options.quick ? PLANS.quick : PLANS.full

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
  const ctx = { term, client: null, lab: null, pids: new Set(), figures: [], pause: null }
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

    const steps = [
      function stepIngest () { return ingestStep(ctx, plan.ingest) },
      function stepBomb () { return bombStep(ctx, plan.bomb) },
      function stepUpload () { return uploadStep(ctx, plan.upload) }
    ]
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
