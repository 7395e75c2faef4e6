/**
 * Grade a handler: start the handler at POST /student in a process of its
 * own, isolated and measured from outside, beside a reference lab with the
 * lab's routes and the dashboard that shows the run (grader/lab.js,
 * docs/grading-isolation.md), run the checks of the five areas in order, and
 * return the card once every student process is gone. The memory checks and
 * the bombs measure on processes of their own, a fresh one per figure
 * (FreshLabs); everything else runs on the grading's pair.
 *
 * A handler that crashes a lab or gets it killed past the grader's memory
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
import fs from 'node:fs'
import path from 'node:path'
import { DEFAULTS } from '../lib/config/options.js'
import { generatedDocument, withSeed } from './bodies.js'
import { checks as correctness } from './checks/correctness.js'
import { checks as memory } from './checks/memory.js'
import { checks as speed } from './checks/speed.js'
import { checks as safety } from './checks/safety.js'
import { checks as resilience } from './checks/resilience.js'
import { send } from './client.js'
import { crashLine, FreshLabs, GradeLab } from './lab.js'
import { newSeed, normalizeSeed, normalizeSettings } from './settings.js'
import { fileDigest, labVersion } from './submission.js'

export const AREAS = Object.freeze(['correctness', 'memory', 'speed', 'safety', 'resilience'])

/** Every check, in the order they run. */
export const CHECKS = Object.freeze([...correctness, ...memory, ...speed, ...safety, ...resilience])

const NOTE_INTERVAL_MS = 200

/**
 * @typedef {{ area: string, name: string, pass: boolean, figure: string, limit: string, meaning: string,
 *   hint: string|null, reason: string|null, ms: number, details: object|null }} CheckResult
 * @typedef {{ handler: string, preset: string, settings: object, startedAt: string, ms: number,
 *   checks: CheckResult[], passed: boolean, loadError: string|null, isolation: object|null,
 *   lab: { restarts: number, deaths: number } }} Card `isolation`: how the student's process ran (grader/isolation.js)
 */

/**
 * Grade the handler in `file`.
 * @param {string} file the student's module
 * @param {{ preset?: 'full'|'quick', settings?: object, areas?: string[], port?: number, host?: string,
 *   inputDir?: string, dataDir?: string, keepOpenMs?: number, seed?: number, isolation?: { user?: boolean, network?: boolean },
 *   onProgress?: (event: object) => void }} [options]
 *   `settings`: overrides of the preset (grader/settings.js); `areas`: only these areas' checks (all by
 *   default); `seed`: the seed every body of the run is drawn from (grader/bodies.js; a new random one
 *   by default); `inputDir`: where generated documents are kept (by default a folder of the run's own
 *   under test-data/grade/inputs/, removed when it ends; a caller that gives one keeps it); `isolation`:
 *   false for a layer turns it off (a user and a network of the student's own are used where the machine allows);
 *   `dataDir`: the lab's (test-data/grade/lab/); `onProgress` gets { type, done, total, area, check, note }
 * @returns {Promise<Card>}
 */
export function grade (file, options = {}) {
  const seed = options.seed === undefined || options.seed === null ? newSeed() : normalizeSeed(options.seed)
  return withSeed(seed, function gradeWithSeed () { return gradeRun(file, options, seed) })
}

async function gradeRun (file, options, seed) {
  const preset = options.preset ?? 'full'
  const settings = normalizeSettings(preset, options.settings)
  const checks = selectChecks(options.areas)
  const started = Date.now()
  const runId = randomUUID()
  const onProgress = options.onProgress ?? function quiet () {}
  let cancelled = false
  // a data directory of its own: the lab cleans up uploads under its directory when it starts
  const labDir = options.dataDir ?? path.join(DEFAULTS.dataDir, 'grade', 'lab')
  const lab = new GradeLab({
    handler: file,
    port: options.port ?? 0,
    host: options.host ?? '127.0.0.1',
    dataDir: labDir,
    budget: settings.memoryBudget,
    isolation: options.isolation,
    onCancel: function cancelFromDashboard (id) { if (id === runId) cancelled = true }
  })
  // the digest before the module is loaded: the bytes graded, whatever happens to the file during the run
  // (null for a file that cannot be read: the load fails and says why)
  const digest = await fileDigest(file).catch(function unreadable () { return null })
  const card = {
    handler: file,
    preset,
    areas: options.areas ?? [...AREAS],
    settings,
    seed,
    digest,
    labVersion: await labVersion(),
    startedAt: new Date(started).toISOString(),
    ms: 0,
    url: null,
    checks: [],
    passed: false,
    loadError: null,
    isolation: null,
    lab: { restarts: 0, deaths: 0 }
  }
  try {
    await lab.start()
  } catch (err) {
    card.isolation = lab.isolation
    if (err.code !== 'LOAD_FAILED') throw err
    card.loadError = err.message
    card.checks = checks.map(function notLoaded (check) { return notRun(check, `not run: ${err.message}`) })
    card.ms = Date.now() - started
    return card
  }
  card.url = lab.url
  card.isolation = lab.isolation
  onProgress({ type: 'lab', url: lab.url, kind: lab.kind })

  // labs of their own for memory figures, each with the same handler and budget, on free ports
  const fresh = new FreshLabs({ handler: file, host: options.host ?? '127.0.0.1', dataDir: labDir, budget: settings.memoryBudget, students: lab.students, isolation: options.isolation })
  const inputDir = options.inputDir ?? path.join(DEFAULTS.dataDir, 'grade', 'inputs', runId)
  const ctx = makeContext(lab, fresh, settings, inputDir, seed)
  lab.runStep({ phase: 'start', id: runId, params: { handler: path.basename(file), preset }, startedAt: started })
  let area = null
  let skip = null
  // the lab must start again before the next check: the handler hung, and may still be busy
  let dirty = false
  try {
    for (const [index, check] of checks.entries()) {
      if (check.area !== area) {
        area = check.area
        skip = null
      }
      const progress = { done: index, total: checks.length, stage: check.area, cell: check.name }
      lab.runStep({ phase: 'progress', id: runId, progress })
      onProgress({ type: 'check', done: index, total: checks.length, area: check.area, check: check.name })
      if (cancelled) {
        card.checks.push(notRun(check, 'not run: the run was cancelled from the dashboard'))
        continue
      }
      if (skip !== null) {
        card.checks.push(notRun(check, skip))
        continue
      }
      if (!lab.alive || dirty) await restart(lab, card)
      dirty = false
      const result = await runCheck(check, ctx, lab, { runId, progress, onProgress })
      card.checks.push(result.record)
      dirty = result.restart
      if (result.died) skip = `not run: the student's process died in "${check.name}" (it was started again for the next area)`
      else if (result.tripped) skip = `not run: the handler did not answer in "${check.name}"`
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
    await fresh.close()
    await lab.stop()
    if (options.inputDir === undefined) await fs.promises.rm(inputDir, { recursive: true, force: true })
  }
  return card
}

/**
 * The checks of the areas asked for, in their order.
 * @param {string[]} [areas]
 * @throws {TypeError} for an area that does not exist
 */
function selectChecks (areas) {
  if (areas === undefined || areas === null) return CHECKS
  if (!Array.isArray(areas) || areas.length === 0) throw new TypeError(`areas must be a list of ${AREAS.join(', ')}`)
  for (const area of areas) {
    if (!AREAS.includes(area)) throw new TypeError(`unknown area "${area}": try ${AREAS.join(', ')}`)
  }
  return CHECKS.filter(function asked (check) { return areas.includes(check.area) })
}

/**
 * Run one check. A death of the main lab, or one a check reports from a fresh
 * lab of its own (`outcome.died`), fails it with the reason; a throw is the
 * grader's own failure, reported as such rather than blamed on the handler.
 */
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
      /**
       * For a 5xx, the error the lab logged (the handler's throw, with its file and line), as the reason.
       * @param {object} res the answer
       * @param {GradeLab} [where] the lab that answered: the main one unless a fresh one did
       */
      value: async function explain (res, where = lab) {
        if (res.status < 500) return null
        const from = where === lab ? mark : 0
        // the log and the answer travel apart: give the log a moment to arrive
        for (let wait = 0; wait < 5 && !/Error|Exception/.test(where.output().slice(from)); wait++) {
          await new Promise(function later (resolve) { setTimeout(resolve, 20) })
        }
        return `the student's process logged: ${crashLine(where.output().slice(from))}`
      }
    }
  })
  let outcome
  try {
    outcome = await check.run(local)
  } catch (err) {
    outcome = { pass: false, figure: 'the grader failed on this check', reason: err.stack ?? String(err) }
  } finally {
    await ctx.fresh.releaseTaken()
  }
  // a reset connection can reach us before the child's exit does: let the exit be counted
  const state = await lab.settle()
  if (state === 'blocked') {
    outcome = { ...outcome, pass: false, hung: true, reason: outcome.reason ?? 'the student\'s process stopped answering: the handler blocks its event loop' }
  }
  const mainDied = lab.deaths > deathsBefore
  const died = mainDied || outcome.died === true
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
    reason: mainDied ? lab.lastDeath.message : outcome.reason ?? null,
    ms: Date.now() - startedAt,
    details: outcome.details ?? null
  }
  if (!record.pass) record.hint = check.hint
  // the main lab starts again after it died, or hung; a hang on a fresh lab of the check's own leaves it as it was
  const restart = mainDied || (outcome.hung === true && outcome.elsewhere !== true)
  return { record, died, restart, tripped }
}

/** On a fresh lab: does the handler answer a small, honest body at all? */
async function answersSmallBody (ctx) {
  const fresh = await ctx.freshLab(false)
  try {
    const doc = await generatedDocument({ size: 1000, dir: ctx.inputDir })
    const res = await ctx.postTo(fresh, 'student', { file: doc.file })
    return res.status !== 0
  } finally {
    await ctx.fresh.releaseTaken()
  }
}

function makeContext (lab, fresh, settings, inputDir, seed) {
  return {
    lab,
    fresh,
    settings,
    inputDir,
    seed,
    /** Where a route is served now: /student by the student's process, the others by the reference lab. */
    url: function routeUrl (route) { return lab.urlOf(route) },
    /** POST a body to a route as it is served now (a restart may have moved it). */
    post: function post (route, body) {
      return send(lab.urlOf(route), { timeoutMs: settings.requestMs, ...body })
    },
    /** POST a body to a route of another process (a fresh one). */
    postTo: function postTo (other, route, body) {
      return send(other.urlOf(route), { timeoutMs: settings.requestMs, ...body })
    },
    /**
     * A process that has served nothing yet, for a memory figure; stopped when the check ends.
     * @param {boolean|string} [another] start the next one now: true for another like it, a route's name for one that serves that route
     * @param {string} [route] what it must serve: 'student' (the student's process) or a reference route (a reference lab)
     */
    freshLab: function freshLab (another = true, route = 'student') {
      return fresh.take(another, route)
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
