/**
 * Grade a handler: start a lab with it at POST /student (grader/lab.js),
 * run the checks of the five areas in order, and return the card.
 *
 * A handler that crashes the lab or gets it killed past the grader's memory
 * budget fails the check it broke, with the reason; the lab starts again and
 * the rest of that area is marked not run (the next area starts on a fresh
 * lab). A handler that does not answer in time fails that check; the lab
 * starts again (a hung handler may still be burning CPU or memory), and where
 * the check sends only small bodies the rest of the area is marked not run
 * too, so that a handler that never answers costs one timeout per area.
 * The grader itself never runs the handler: nothing the handler does can
 * take it down.
 */
import { randomUUID } from 'node:crypto'
import path from 'node:path'
import { BENCH_DIR } from '../bench/inputs.js'
import { generatedDocument } from './bodies.js'
import { checks as correctness } from './checks/correctness.js'
import { checks as memory } from './checks/memory.js'
import { checks as speed } from './checks/speed.js'
import { checks as safety } from './checks/safety.js'
import { checks as resilience } from './checks/resilience.js'
import { send } from './client.js'
import { crashLine, GradeLab } from './lab.js'
import { normalizeSettings } from './settings.js'

export const AREAS = Object.freeze(['correctness', 'memory', 'speed', 'safety', 'resilience'])

/** Every check, in the order they run. */
export const CHECKS = Object.freeze([...correctness, ...memory, ...speed, ...safety, ...resilience])

const NOTE_INTERVAL_MS = 200

/**
 * @typedef {{ area: string, name: string, pass: boolean, figure: string, limit: string, meaning: string,
 *   hint: string|null, reason: string|null, ms: number, details: object|null }} CheckResult
 * @typedef {{ handler: string, preset: string, settings: object, startedAt: string, ms: number,
 *   checks: CheckResult[], passed: boolean, loadError: string|null, lab: { restarts: number, deaths: number } }} Card
 */

/**
 * Grade the handler in `file`.
 * @param {string} file the student's module
 * @param {{ preset?: 'full'|'quick', settings?: object, port?: number, host?: string, inputDir?: string,
 *   dataDir?: string, keepOpenMs?: number, onProgress?: (event: object) => void }} [options]
 *   `settings`: overrides of the preset (grader/settings.js); `inputDir`: where generated documents are
 *   kept (test-data/bench/, shared with the benches); `onProgress` gets { done, total, area, check, note }
 * @returns {Promise<Card>}
 */
export async function grade (file, options = {}) {
  const preset = options.preset ?? 'full'
  const settings = normalizeSettings(preset, options.settings)
  const started = Date.now()
  const runId = randomUUID()
  const onProgress = options.onProgress ?? function quiet () {}
  let cancelled = false
  const lab = new GradeLab({
    handler: file,
    port: options.port ?? 0,
    host: options.host ?? '127.0.0.1',
    dataDir: options.dataDir,
    budget: settings.memoryBudget,
    onCancel: function cancelFromDashboard (id) { if (id === runId) cancelled = true }
  })
  const card = {
    handler: file,
    preset,
    settings,
    startedAt: new Date(started).toISOString(),
    ms: 0,
    url: null,
    checks: [],
    passed: false,
    loadError: null,
    lab: { restarts: 0, deaths: 0 }
  }
  try {
    await lab.start()
  } catch (err) {
    if (err.code !== 'LOAD_FAILED') throw err
    card.loadError = err.message
    card.checks = CHECKS.map(function notLoaded (check) { return notRun(check, `not run: ${err.message}`) })
    card.ms = Date.now() - started
    return card
  }
  card.url = lab.url
  onProgress({ type: 'lab', url: lab.url, kind: lab.kind })

  const ctx = makeContext(lab, settings, options.inputDir ?? BENCH_DIR)
  lab.runStep({ phase: 'start', id: runId, params: { handler: path.basename(file), preset }, startedAt: started })
  let area = null
  let skip = null
  // the lab must start again before the next check: the handler hung, and may still be busy
  let dirty = false
  try {
    for (const [index, check] of CHECKS.entries()) {
      if (check.area !== area) {
        area = check.area
        skip = null
      }
      const progress = { done: index, total: CHECKS.length, stage: check.area, cell: check.name }
      lab.runStep({ phase: 'progress', id: runId, progress })
      onProgress({ type: 'check', done: index, total: CHECKS.length, area: check.area, check: check.name })
      if (cancelled) {
        card.checks.push(notRun(check, 'not run: the run was cancelled from the dashboard'))
        continue
      }
      if (skip !== null) {
        card.checks.push(notRun(check, skip))
        continue
      }
      // a fresh lab for a memory figure (a bomb's), as the benches measure: what an earlier check
      // left in the allocator's free lists would be reused without a byte of growth
      if (!lab.alive || dirty) await restart(lab, card)
      else if (check.fresh) await lab.restart()
      dirty = false
      const result = await runCheck(check, ctx, lab, { runId, progress, onProgress })
      card.checks.push(result.record)
      if (result.died) {
        skip = `not run: the lab died in "${check.name}" (it was started again for the next area)`
        dirty = true
      } else if (result.hung) {
        dirty = true
        if (result.tripped) skip = `not run: the handler did not answer in "${check.name}"`
      }
    }
    card.passed = card.checks.every(function passed (c) { return c.pass })
    card.ms = Date.now() - started
    card.lab.deaths = lab.deaths
    if (cancelled) lab.runStep({ phase: 'cancelled', id: runId })
    else lab.runStep({ phase: 'result', id: runId, result: dashboardResult(card) })
    if (options.keepOpenMs > 0) {
      onProgress({ type: 'keep-open', url: lab.url, ms: options.keepOpenMs })
      await new Promise(function keepOpen (resolve) { setTimeout(resolve, options.keepOpenMs) })
    }
  } catch (err) {
    lab.runStep({ phase: 'error', id: runId, error: { status: 500, type: 'internal', message: err.message } })
    throw err
  } finally {
    await lab.stop()
  }
  return card
}

/** Run one check; a throw is the grader's own failure, reported as such rather than blamed on the handler. */
async function runCheck (check, ctx, lab, { runId, progress, onProgress }) {
  const startedAt = Date.now()
  const deathsBefore = lab.deaths
  const mark = lab.output().length
  let lastNote = 0
  const local = Object.create(ctx, {
    note: {
      value: function note (text) {
        const now = Date.now()
        if (now - lastNote < NOTE_INTERVAL_MS) return
        lastNote = now
        lab.runStep({ phase: 'progress', id: runId, progress: { ...progress, cell: `${check.name} · ${text}` } })
        onProgress({ type: 'note', area: check.area, check: check.name, note: text })
      }
    },
    explain: {
      /** For a 5xx, the error the lab logged during this check (the handler's throw), as the reason. */
      value: async function explain (res) {
        if (res.status < 500) return null
        // the log and the answer travel apart: give the log a moment to arrive
        for (let wait = 0; wait < 5 && !/Error|Exception/.test(lab.output().slice(mark)); wait++) {
          await new Promise(function later (resolve) { setTimeout(resolve, 20) })
        }
        return `the lab's log: ${crashLine(lab.output().slice(mark))}`
      }
    },
    referenceFailed: {
      value: async function referenceFailed () {
        // /bad (or /good) took the lab down: not the handler's doing; start it again and go on
        if (!lab.alive) {
          local.referenceDeaths++
          await lab.restart()
        }
      }
    },
    referenceDeaths: { value: 0, writable: true },
    freshLab: {
      value: async function freshLab () {
        // a measurement's own restart: not a death, not counted on the card
        await lab.restart()
      }
    }
  })
  let outcome
  try {
    outcome = await check.run(local)
  } catch (err) {
    outcome = { pass: false, figure: 'the grader failed on this check', reason: err.stack ?? String(err) }
  }
  // a reset connection can reach us before the child's exit does: let the exit be counted
  const state = await lab.settle()
  if (state === 'blocked') {
    outcome = { ...outcome, pass: false, hung: true, reason: outcome.reason ?? 'the lab stopped answering: the handler blocks its event loop' }
  }
  const died = lab.deaths - deathsBefore - local.referenceDeaths > 0
  let tripped = outcome.hung === true && check.trips
  if (outcome.hung === true && !check.trips && !died) {
    // a slow refusal (a bomb) is that check's failure; a handler that answers nothing at all fails the rest too
    tripped = !(await answersSmallBody(local))
    if (tripped) outcome = { ...outcome, reason: 'it does not answer a small body either' }
  }
  const record = {
    area: check.area,
    name: check.name,
    pass: died ? false : outcome.pass === true,
    figure: outcome.figure,
    limit: check.limit,
    meaning: check.meaning,
    hint: null,
    reason: died ? lab.lastDeath.message : outcome.reason ?? null,
    ms: Date.now() - startedAt,
    details: outcome.details ?? null
  }
  if (!record.pass) record.hint = check.hint
  return { record, died, hung: outcome.hung === true, tripped }
}

/** On a fresh lab: does the handler answer a small, honest body at all? */
async function answersSmallBody (ctx) {
  await ctx.lab.restart()
  const doc = await generatedDocument({ size: 1000, dir: ctx.inputDir })
  const res = await ctx.post('student', { file: doc.file })
  return res.status !== 0
}

function makeContext (lab, settings, inputDir) {
  return {
    lab,
    settings,
    inputDir,
    url: function routeUrl (route) { return `${lab.url}/${route}` },
    /** POST a body to a route of the lab as it is now (a restart may have moved it). */
    post: function post (route, body) {
      return send(`${lab.url}/${route}`, { timeoutMs: settings.requestMs, ...body })
    }
  }
}

async function restart (lab, card, counted = true) {
  if (counted) card.lab.restarts++
  await lab.restart()
}

function notRun (check, reason) {
  return {
    area: check.area,
    name: check.name,
    pass: false,
    figure: 'not run',
    limit: check.limit,
    meaning: check.meaning,
    hint: check.hint,
    reason,
    ms: 0,
    details: null
  }
}

/**
 * The run's result as the dashboard shows it: the checks as a table
 * (`cells`: dashboard/control-panel.js renders any experiment's cells).
 */
function dashboardResult (card) {
  const passed = card.checks.filter(function passed (c) { return c.pass }).length
  return {
    handler: path.basename(card.handler),
    preset: card.preset,
    verdict: card.passed ? 'pass' : 'fail',
    passed,
    total: card.checks.length,
    cells: card.checks.map(function cell (c) {
      return { area: c.area, check: c.name, result: c.pass ? '✔ pass' : '✘ fail', figure: c.figure, limit: c.limit }
    })
  }
}
