#!/usr/bin/env node
/**
 * npm run docs:screenshots: the pictures of the lesson pages (docs/lessons/): for an experiment a
 * lesson has a view of, docs/img/view-<lesson>.png (the view, `/?lesson=<name>`, at 1280x720, as the
 * class sees it); for any other, docs/img/lesson-<experiment>.png (the whole page).
 *
 * For each experiment: a fresh lab process (so nothing one run leaves in
 * the heap shows in the next picture), the lesson's view in headless Chromium,
 * the run started from the page's own control panel as a teacher would,
 * and, once its results table is shown, a picture of the view or of the whole page. The
 * figures each run measured are printed at the end, read from the run's
 * result: a caption must say what its own picture measured.
 *
 *   node scripts/screenshots.js [--only ingest,upload] [--out DIR]
 */
/* global window, document -- the functions given to page.evaluate and waitForFunction run in the page */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { setTimeout as delay } from 'node:timers/promises'
import { PROJECT_ROOT } from '../lib/config/options.js'
import { formatBytes, formatDuration } from '../lib/util/units.js'
import { serverFigure } from '../lib/measure/figure-lines.js'
import { loadFigures } from '../experiments/index.js'
import { chromiumMissing, launchChromium } from '../lib/measure/browser.js'
import { LESSONS } from '../dashboard/lessons.js'
import { startLabProcess } from '../lib/measure/lab-process.js'

const DEFAULT_OUT = path.join(PROJECT_ROOT, 'docs', 'img')
// wide enough for the chart and the panel side by side, small enough to keep each PNG well under 400 KB;
// a shot whose results table has many columns asks for more width, or the table runs under the panel
const VIEWPORT = Object.freeze({ width: 1400, height: 900 })
const MAX_PNG_BYTES = 400 * 1024
// a lesson's view: the projector's screen, and a picture small enough for a lesson page's top
const VIEW_VIEWPORT = Object.freeze({ width: 1280, height: 720 })
const MAX_VIEW_PNG_BYTES = 300 * 1024
// idle samples before the run and after it: the reader sees where the memory starts and where it settles
const LEAD_IN_MS = 3000
const TRAIL_MS = 3000
const PROGRESS_EVERY_MS = 5000
const ENDED = Object.freeze(['done', 'failed', 'cancelled', 'unknown'])

/**
 * What each picture runs: the `screenshot` of every experiment folder that has
 * one (experiments/<name>/figures.js), from the registry. `flags` go to
 * server.js (lib/measure/lab-process.js adds `--memory-limit=0` unless a budget
 * is named: a buffered load that passes the default 1 GiB budget on purpose
 * must be pictured, not killed). `params` are typed into the control panel, so
 * the form in the picture shows them; `prelude` runs go first, on the chart
 * only; `prepare(url, params, note)` readies the lab before the page opens;
 * `figures(run)` gives the caption lines. Sizes are picked to show the lesson
 * within a minute or two on a 2-core machine.
 */
const SHOTS = Object.freeze(Object.values(await loadFigures())
  .map(function shotOf (figures) { return figures.screenshot })
  .filter(Boolean))

const USAGE = `Usage: node scripts/screenshots.js [options]   (npm run docs:screenshots -- [options])

Runs each experiment from its lesson's view of a fresh lab, in headless Chromium
(CHROMIUM_PATH, else Chromium, Chrome or Edge where installed), and saves the lesson's view as
<out>/view-<lesson>.png (1280x720), or the whole page as <out>/lesson-<experiment>.png for an
experiment no lesson has a view of.

Options:
  --only NAMES   comma-separated experiments to redo (default: all of
                 ${SHOTS.map(function shotName (s) { return s.name }).join(', ')})
  --out DIR      where the PNGs go (default docs/img)
  -h, --help     show this help
`

/** Teardown for what is running now: the Ctrl-C handler runs it too. */
const cleanups = new Set()
/** Set by the signal handler: what fails after it is the teardown's doing, not worth a report. */
let interrupted = false

function onCleanup (fn) {
  cleanups.add(fn)
}

async function cleanUpAll () {
  // newest first: the browser goes before the lab it is looking at
  for (const fn of [...cleanups].reverse()) {
    cleanups.delete(fn)
    try {
      await fn()
    } catch {
      // best effort: the rest must still be stopped
    }
  }
}

/**
 * Take the pictures.
 * @param {string[]} [argv] command-line arguments
 * @param {{ write: (text: string) => void }} [out]
 * @returns {Promise<number>} the exit code: 0, 1 when a picture failed, 2 for a usage error
 */
async function main (argv = process.argv.slice(2), out = process.stdout) {
  function say (line = '') { out.write(line + '\n') }
  let values
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { only: { type: 'string' }, out: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true
    }))
  } catch (err) {
    process.stderr.write(`screenshots: ${err.message}\n\n${USAGE}`)
    return 2
  }
  if (values.help) {
    say(USAGE)
    return 0
  }
  let chosen = SHOTS
  if (values.only !== undefined) {
    const names = values.only.split(',').map(function trim (n) { return n.trim() }).filter(Boolean)
    const unknown = names.filter(function isUnknown (n) { return !SHOTS.some(function same (s) { return s.name === n }) })
    if (names.length === 0 || unknown.length > 0) {
      process.stderr.write(`screenshots: --only ${values.only}: unknown experiment ${unknown.join(', ') || '(none named)'}\n\n${USAGE}`)
      return 2
    }
    chosen = SHOTS.filter(function named (s) { return names.includes(s.name) })
  }
  // before any lab is started: without the browser there is nothing to take
  if (chromiumMissing() !== null) {
    process.stderr.write(`screenshots: ${chromiumMissing()}\n`)
    return 1
  }
  const outDir = path.resolve(values.out ?? DEFAULT_OUT)
  fs.mkdirSync(outDir, { recursive: true })

  const began = Date.now()
  const done = []
  const failed = []
  for (const [index, shot] of chosen.entries()) {
    const file = path.join(outDir, Object.hasOwn(LESSONS, shot.name) ? `view-${shot.name}.png` : `lesson-${shot.name}.png`)
    const tag = `[${index + 1}/${chosen.length} ${shot.name}]`
    function note (line) { say(`${tag} ${line}`) }
    const started = Date.now()
    try {
      const taken = await takeShot(shot, file, note)
      const seconds = (Date.now() - started) / 1000
      note(`wrote ${path.relative(process.cwd(), file)} (${formatBytes(taken.bytes)}) in ${formatDuration(seconds * 1000)}`)
      done.push({ shot, file, seconds, ...taken })
    } catch (err) {
      if (interrupted) return 130
      note(`FAILED: ${err.message}`)
      failed.push({ shot, error: err })
    } finally {
      await cleanUpAll()
    }
  }

  say()
  say(`Pictures (${formatDuration(Date.now() - began)} in all):`)
  for (const d of done) {
    say()
    const took = formatDuration(d.seconds * 1000)
    const what = `${d.viewport.width} px wide, ${formatBytes(d.bytes)}, ${took}, chart window ${d.windowMinutes} min`
    say(`${path.relative(process.cwd(), d.file)}  (${what})`)
    for (const prelude of d.preludes) {
      say(`  before it, run ${prelude.id.slice(0, 8)} (on the chart, not in the table): ${JSON.stringify(prelude.params)}`)
      for (const line of d.shot.figures(prelude)) say(`    ${line}`)
    }
    say(`  the run in the table, ${d.run.id.slice(0, 8)}: ${JSON.stringify(d.run.params)}`)
    for (const line of d.shot.figures(d.run)) say(`  ${line}`)
    say(`  whole run, engine's figure: ${serverFigure(d.run.result.server)}`)
    for (const warning of d.warnings) say(`  warning: ${warning}`)
  }
  for (const f of failed) {
    say()
    say(`${f.shot.name}: no picture made: ${f.error.message}`)
  }
  return failed.length > 0 ? 1 : 0
}

/**
 * One picture: a fresh lab, the page, the run from the panel, the screenshot.
 * @returns {Promise<{ run: object, preludes: object[], bytes: number, windowMinutes: number, warnings: string[] }>}
 */
async function takeShot (shot, file, note) {
  const warnings = []
  note(`starting the lab${shot.flags.length ? ` (${shot.flags.join(' ')})` : ''}`)
  const lab = await startLabProcess(shot.flags)
  onCleanup(lab.stop)
  note(`lab at ${lab.url}, worker pid ${lab.pid}`)
  if (shot.prepare) await shot.prepare(lab.url, shot.params, note)

  const viewport = shot.viewport ?? VIEWPORT
  const lesson = Object.hasOwn(LESSONS, shot.name) ? shot.name : null
  // our own signal handler closes the browser, then the lab: playwright's would exit before the lab is stopped
  const browser = await launchChromium({
    viewport: lesson ? VIEW_VIEWPORT : viewport, deviceScaleFactor: 1, acceptDownloads: false, handleSignals: false
  })
  onCleanup(browser.close)
  const { page } = browser
  // the widest window while the run lasts, so no sample of it is dropped; narrowed to fit afterwards
  await page.goto(`${lab.url}/?window=10${lesson ? `&lesson=${lesson}` : ''}`)
  await page.waitForFunction(function liveAndReady () {
    const run = document.getElementById('run')
    return window.streamlab?.state === 'live' && window.streamlab.samples >= 10 &&
      run !== null && !run.disabled && document.querySelector('#experiment-fields [id^="param-"]') !== null
  }, null, { timeout: 30_000 }).catch(function notReady (err) {
    throw new Error(`the dashboard did not come up live with its control panel: ${err.message.split('\n')[0]}`)
  })
  await delay(LEAD_IN_MS)

  const preludes = []
  for (const params of shot.prelude ?? []) {
    preludes.push(await runFromPanel(page, lab.url, shot, params, note))
    await delay(LEAD_IN_MS)
  }
  const run = await runFromPanel(page, lab.url, shot, shot.params, note)
  await delay(TRAIL_MS)

  // the smallest window that still holds every sample: the run fills the chart, and the select says so
  const spanMs = await page.evaluate(function chartSpan () { return window.streamlab.latest - window.streamlab.oldest })
  const windowMinutes = Math.min(10, Math.max(1, Math.ceil(spanMs / 60_000)))
  if (spanMs > 10 * 60_000) warnings.push(`the run took longer than the widest window (10 min): its start is off the chart`)
  // the select as a reader would change it (a lesson's view does not show it)
  await page.evaluate(function chooseWindow (minutes) {
    const select = document.getElementById('window-minutes')
    select.value = minutes
    select.dispatchEvent(new Event('change'))
  }, String(windowMinutes))
  // the focus ring would be in the picture; then one more redraw at the new window
  await page.evaluate(function blur () { document.activeElement?.blur() })
  await redrawn(page)
  if (lesson) {
    // the lesson's view, as the class sees it: the one picture its page needs
    await page.screenshot({ path: file })
    const bytes = fs.statSync(file).size
    if (bytes > MAX_VIEW_PNG_BYTES) warnings.push(`${formatBytes(bytes)}: larger than ${formatBytes(MAX_VIEW_PNG_BYTES)}`)
    for (const problem of browser.problems) warnings.push(`the page said: ${problem}`)
    await browser.close()
    await lab.stop()
    return { run, preludes, bytes, viewport: VIEW_VIEWPORT, windowMinutes, warnings }
  }
  const overflow = await page.evaluate(function widestTable () {
    const box = document.getElementById('results')
    const widths = [...box.querySelectorAll('table')].map(function tableWidth (t) { return t.scrollWidth })
    return { table: Math.max(0, ...widths), box: box.clientWidth }
  })
  if (overflow.table > overflow.box) {
    warnings.push(`a results table is ${overflow.table} px wide in a ${overflow.box} px column: ` +
      'it runs under the panel (give the shot a wider viewport)')
  }
  // down to the results and the panel: the tools under them say nothing about the lesson
  const height = await page.evaluate(function contentBottom () {
    const bottoms = ['results', 'experiment-form'].map(function bottomOf (id) {
      const box = document.getElementById(id)?.closest('section')?.getBoundingClientRect()
      return box ? box.bottom + window.scrollY : 0
    })
    return Math.ceil(Math.max(...bottoms) + 12)
  })
  const clip = { x: 0, y: 0, width: viewport.width, height: Math.max(viewport.height, height) }
  await page.screenshot({ path: file, fullPage: true, clip })

  const bytes = fs.statSync(file).size
  if (bytes > MAX_PNG_BYTES) warnings.push(`${formatBytes(bytes)}: larger than ${formatBytes(MAX_PNG_BYTES)}`)
  for (const problem of browser.problems) warnings.push(`the page said: ${problem}`)
  await browser.close()
  await lab.stop()
  return { run, preludes, bytes, viewport, windowMinutes, warnings }
}

/** Wait for two more redraws of the page's charts. */
async function redrawn (page) {
  const redraws = await page.evaluate(function redrawCount () { return window.streamlab.redraws })
  await page.waitForFunction(function redrawnTwice (before) { return window.streamlab.redraws > before + 1 }, redraws)
}

/**
 * One run from the panel, waited for until its results table is shown.
 * @returns {Promise<object>} the run as GET /experiments/:id gives it, result included
 */
async function runFromPanel (page, url, shot, params, note) {
  const id = await startFromPanel(page, shot.name, params)
  note(`run ${id.slice(0, 8)} started from the panel: ${JSON.stringify(params)}`)
  const status = await waitForEnd(page, id, shot.timeoutMs, note)
  if (status !== 'done') {
    const message = await page.textContent('#run-message')
    throw new Error(`run ${id.slice(0, 8)} ended ${status}: ${message}`)
  }
  await page.waitForSelector(`#results table.results[data-run-id="${id}"]`, { state: 'visible', timeout: 10_000 })
  const res = await fetch(`${url}/experiments/${encodeURIComponent(id)}`)
  const run = await res.json()
  if (res.status !== 200 || run.status !== 'done') throw new Error(`GET /experiments/${id} answered ${res.status}, status ${run.status}`)
  note(`run ${id.slice(0, 8)} done, its results shown`)
  return run
}

/**
 * Choose the experiment and type its parameters into the panel, press Run,
 * and return the id of the run it started.
 * @throws {Error} when a control is missing or the server refused the run (its words)
 */
async function startFromPanel (page, name, params) {
  // with more than one experiment on the server the panel offers a choice (a lesson's view has made it)
  if (await page.$('#experiment-name') && await page.inputValue('#experiment-name') !== name) {
    await page.selectOption('#experiment-name', name)
  }
  for (const [key, value] of Object.entries(params)) {
    const selector = `#param-${key}`
    const tag = await page.$eval(selector, function tagName (el) { return el.tagName }).catch(function missing () {
      throw new Error(`the control panel has no ${selector} for ${name}: has the page or the experiment's schema changed?`)
    })
    if (tag === 'SELECT') await page.selectOption(selector, String(value))
    else await page.fill(selector, String(value))
  }
  const before = await page.getAttribute('#experiment-form', 'data-run-id')
  await page.click('#run')
  const handle = await page.waitForFunction(function startedOrRefused (previous) {
    const message = document.getElementById('run-message')
    if (message?.dataset.kind === 'error') return { error: message.textContent }
    const id = document.getElementById('experiment-form')?.dataset.runId
    return id && id !== previous ? { id } : null
  }, before ?? '', { timeout: 30_000 })
  const started = await handle.jsonValue()
  if (started.error) throw new Error(`the server refused the run: ${started.error}`)
  return started.id
}

/** Wait for the form to say the run ended, saying how far it got now and then. */
async function waitForEnd (page, id, timeoutMs, note) {
  const deadline = Date.now() + timeoutMs
  let lastNote = Date.now()
  let lastText = ''
  for (;;) {
    const state = await page.evaluate(function runState () {
      const form = document.getElementById('experiment-form')
      const text = document.getElementById('run-progress-text')?.textContent ?? ''
      return { id: form.dataset.runId, status: form.dataset.runStatus, text }
    })
    if (state.id !== id) throw new Error(`the panel stopped following run ${id.slice(0, 8)} (now ${state.id})`)
    if (ENDED.includes(state.status)) return state.status
    if (Date.now() > deadline) throw new Error(`run ${id.slice(0, 8)} still ${state.status} after ${timeoutMs / 1000} s`)
    if (Date.now() - lastNote >= PROGRESS_EVERY_MS && state.text !== lastText) {
      note(state.text)
      lastText = state.text
      lastNote = Date.now()
    }
    await delay(250)
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // Ctrl-C (or a kill) must not leave a lab holding a port or a Chromium running
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]]) {
    process.once(signal, function stopEverything () {
      interrupted = true
      process.stderr.write(`\nscreenshots: ${signal}: closing the browser and the lab\n`)
      cleanUpAll().finally(function exit () { process.exit(code) })
    })
  }
  main().then(function setExitCode (code) {
    process.exitCode = code
  }, function failed (err) {
    process.stderr.write(`screenshots: ${err.stack ?? err.message}\n`)
    return cleanUpAll().finally(function setFailure () { process.exitCode = 1 })
  })
}
