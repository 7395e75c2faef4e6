/**
 * The runner both gradings share. A check that kills or hangs the target fails, the target starts again and the rest
 * of its area is not run; a throw in a check is the grader's own failure.
 */
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { DEFAULTS } from '../../lib/config/options.js'
import { generatedDocument } from '../checks/bodies.js'
import { probeEncodings } from '../checks/encodings.js'
import { AREAS, checksOf } from '../checks/index.js'
import { normalizeSettings } from '../checks/settings.js'
import { labVersion } from '../student/lab-version.js'
import { checkContext, runContext } from './check-context.js'

/**
 * @typedef {{ area: string, name: string, pass: boolean, figure: string, limit: string, meaning: string,
 *   hint: string|null, reason: string|null, ms: number, details: object|null }} CheckResult
 * @typedef {{ handler: string, preset: string, seed: number, digest: string|null, labVersion: string,
 *   settings: object, startedAt: string, ms: number, checks: CheckResult[], passed: boolean,
 *   loadError: string|null, isolation: object|null, lab: { restarts: number, deaths: number } }} Card
 */

/** A grading's settings, checks, run, lab folder and host; TypeError for a setting or area that does not exist. */
export function runSetup (options) {
  const preset = options.preset ?? 'full'
  return {
    preset,
    settings: normalizeSettings(preset, options.settings),
    checks: checksOf(options.areas),
    run: newRun(),
    // a data directory of its own: the lab cleans up uploads under its directory when it starts
    labDir: options.dataDir ?? path.join(DEFAULTS.dataDir, 'grade', 'lab'),
    host: options.host ?? '127.0.0.1'
  }
}

function newRun () {
  const run = {
    id: randomUUID(),
    started: Date.now(),
    cancelled: false,
    cancel: function cancelFromDashboard (id) { if (id === run.id) run.cancelled = true }
  }
  return run
}

export async function newCard ({ handler, preset, areas, settings, seed, digest, started }) {
  return {
    handler, preset, areas: areas ?? [...AREAS], settings, seed, digest, labVersion: await labVersion(),
    startedAt: new Date(started).toISOString(), ms: 0, url: null, checks: [], passed: false, loadError: null,
    isolation: null, encodings: null,
    lab: { restarts: 0, deaths: 0 }
  }
}

/** Start the lab, run the checks in order, stop everything; `findContract(ctx)`: how answers are judged. */
export async function runChecks ({ card, lab, checks, run, options, params, startFailure, findContract }) {
  const onProgress = options.onProgress ?? function quiet () {}
  try {
    await lab.start()
  } catch (err) {
    card.isolation = lab.isolation
    if (err.code !== startFailure) throw err
    card.loadError = err.message
    card.checks = checks.map(function notLoaded (check) { return notRun(check, `not run: ${err.message}`) })
    card.ms = Date.now() - run.started
    return card
  }
  card.url = lab.url
  card.isolation = lab.isolation
  onProgress({ type: 'lab', url: lab.url, kind: lab.kind })

  const { settings, seed } = card
  const fresh = lab.freshProcesses()
  const inputDir = options.inputDir ?? path.join(DEFAULTS.dataDir, 'grade', 'inputs', run.id)
  const ctx = runContext(lab, fresh, settings, inputDir, seed, options.headers ?? {})
  ctx.contentType = options.contentType ?? null
  lab.runStep({ phase: 'start', id: run.id, params, startedAt: run.started })
  let area = null
  let skip = null
  // the target is gone and the lab may not start it again: every check left is not run
  let gone = null
  // the lab must start again before the next check: the handler hung, and may still be busy
  let dirty = false
  try {
    ctx.contract = await findContract(ctx)
    for (const [index, check] of checks.entries()) {
      if (check.area !== area) {
        area = check.area
        skip = null
      }
      const progress = { done: index, total: checks.length, stage: check.area, cell: check.name }
      lab.runStep({ phase: 'progress', id: run.id, progress })
      onProgress({ type: 'check', done: index, total: checks.length, area: check.area, check: check.name })
      if (run.cancelled) {
        card.checks.push(notRun(check, 'not run: the run was cancelled from the dashboard'))
        continue
      }
      if (check.area === 'memory' && lab.measurable === false) {
        card.checks.push(notJudged(check))
        continue
      }
      if (gone === null && lab.restartable === false && !lab.alive) {
        gone = `not run: ${lab.label} is gone (${lab.lastDeath?.message ?? 'it stopped answering'}), ` +
          'and the lab did not start it, so it does not start it again'
      }
      if (gone !== null || skip !== null) {
        card.checks.push(notRun(check, gone ?? skip))
        continue
      }
      // a service the lab did not start is never restarted: the next check meets it as it is
      if ((!lab.alive || dirty) && lab.restartable !== false) await restart(lab, card)
      dirty = false
      if (check.area === 'safety' && ctx.encodings === null) {
        onProgress({ type: 'note', area: check.area, check: 'encodings', note: 'a small document in each encoding' })
        ctx.encodings = card.encodings = await probe(ctx, lab, card)
      }
      const result = await runCheck(check, ctx, lab, { runId: run.id, progress, onProgress })
      card.checks.push(result.record)
      dirty = result.restart
      const after = lab.restartable === false ? 'the lab did not start it, so it does not start it again'
        : 'it was started again for the next area'
      if (result.died) skip = `not run: ${lab.label ?? 'the student\'s process'} died in "${check.name}" (${after})`
      else if (result.tripped) skip = `not run: ${lab.label === undefined ? 'the handler' : lab.label} did not answer in "${check.name}"`
    }
    card.passed = card.checks.every(function passed (c) { return c.pass })
    card.ms = Date.now() - run.started
    card.lab.deaths = lab.deaths
    if (run.cancelled) lab.runStep({ phase: 'cancelled', id: run.id })
    else lab.runStep({ phase: 'result', id: run.id, result: dashboardResult(card) })
    if (options.keepOpenMs > 0) {
      onProgress({ type: 'keep-open', url: lab.url, ms: options.keepOpenMs })
      await new Promise(function keepOpen (resolve) { setTimeout(resolve, options.keepOpenMs) })
    }
  } catch (err) {
    lab.runStep({ phase: 'error', id: run.id, error: { status: 500, type: 'internal', message: err.message } })
    throw err
  } finally {
    await fresh.close()
    await lab.stop()
    if (options.inputDir === undefined) await fs.promises.rm(inputDir, { recursive: true, force: true })
  }
  return card
}

/** The codings the target takes, before safety bombs them; a death on one is that coding's answer (restarted where allowed). */
function probe (ctx, lab, card) {
  const asked = ctx.contentType ?? ctx.headers['content-type'] ?? null
  return probeEncodings({
    post: function postToTarget (body) { return ctx.post('student', body) },
    seed: card.seed,
    contract: ctx.contract,
    mediaType: asked === null ? null : asked.split(';')[0].trim().toLowerCase(),
    afterEach: async function startAgainIfDead (res) {
      if (res.status !== 0 && res.status < 500) return null
      if ((await lab.settle()) !== 'dead') return null
      const died = lab.lastDeath?.message ?? `${lab.label ?? 'the student\'s process'} died`
      if (lab.restartable !== false) await restart(lab, card)
      return died
    }
  })
}

/** A check's figure when the grader itself failed on it (a throw): not the handler's failure. */
export const GRADER_FAILED = 'the grader failed on this check'

/** One check: a death (of the main lab, or `outcome.died` on a fresh one) fails it; a throw is the grader's failure. */
async function runCheck (check, ctx, lab, { runId, progress, onProgress }) {
  const startedAt = Date.now()
  const deathsBefore = lab.deaths
  const local = checkContext(ctx, check, { runId, progress, onProgress })
  let outcome
  try {
    outcome = await check.run(local)
  } catch (err) {
    outcome = { pass: false, figure: GRADER_FAILED, reason: err.stack ?? String(err) }
  } finally {
    await ctx.fresh.releaseTaken()
  }
  // a reset connection can reach us before the child's exit does: let the exit be counted
  const state = await lab.settle()
  if (state === 'blocked') {
    const reason = outcome.reason ?? 'the student\'s process stopped answering: the handler blocks its event loop'
    outcome = { ...outcome, pass: false, hung: true, reason }
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
    area: check.area, name: check.name, pass: died ? false : outcome.pass === true, figure: outcome.figure,
    limit: outcome.limit ?? check.limit, meaning: check.meaning, hint: null,
    reason: mainDied ? lab.lastDeath.message : outcome.reason ?? null,
    ms: Date.now() - startedAt,
    details: outcome.details ?? null
  }
  // a check may give a hint of its own (a memory check names the line: checks/memory-sites.js)
  if (!record.pass) record.hint = outcome.hint ?? check.hint
  // the main lab starts again after it died or hung; a hang on a check's own fresh lab leaves it (a service's is the main one)
  const restart = mainDied || (outcome.hung === true && (outcome.elsewhere !== true || lab.freshIsMain === true))
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

async function restart (lab, card) {
  card.lab.restarts++
  await lab.restart()
}

function notRun (check, reason) {
  return {
    area: check.area, name: check.name, pass: false, figure: 'not run', limit: check.limit, meaning: check.meaning,
    hint: check.hint, reason, ms: 0, details: null
  }
}

/** A memory check where no pid is known: not measured, so not passed, and the card says why and how to fix it. */
function notJudged (check) {
  return {
    area: check.area,
    name: check.name,
    pass: false,
    figure: 'not judged: no pid, so memory could not be read',
    limit: check.limit,
    meaning: check.meaning,
    hint: 'Give the grader a process to read: --start "CMD" (it starts the service, and reads its memory from outside), or --pid N of ' +
      'the running service. Without either, grade the other areas with --only correctness,speed,safety,resilience.',
    reason: 'the grader has no pid of the service: neither --start nor --pid was given, or the target is remote',
    ms: 0,
    details: null
  }
}

/** The result as the dashboard shows it (`cells`: dashboard/control-panel.js renders any experiment's cells). */
function dashboardResult (card) {
  const passed = card.checks.filter(function passed (c) { return c.pass }).length
  return {
    handler: card.service ? card.service.url : path.basename(card.handler),
    preset: card.preset,
    verdict: card.passed ? 'pass' : 'fail',
    passed,
    total: card.checks.length,
    cells: card.checks.map(function cell (c) {
      return { area: c.area, check: c.name, result: c.pass ? '✔ pass' : '✘ fail', figure: c.figure, limit: c.limit }
    })
  }
}
