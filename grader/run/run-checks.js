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
 *
 * gradeService runs the same checks, through the same runner (runChecks),
 * on a service at a URL in any language (grader/service.js): the graded
 * target is the service in place of the student's process, a fresh
 * process is the service started again, and answers are judged by the
 * contract it keeps (grader/contract.js). Where no pid is known the memory
 * lines are "not judged", and fail.
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
import { HANDLER_CONTRACT, detectContract } from './contract.js'
import { crashLine, FreshLabs, GradeLab } from './lab.js'
import { classifyUrl, ServiceFresh, ServiceLab } from './service.js'
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
  const { preset, settings, checks, run, labDir, host } = runSetup(options)
  const lab = new GradeLab({
    handler: file,
    port: options.port ?? 0,
    host,
    dataDir: labDir,
    budget: settings.memoryBudget,
    isolation: options.isolation,
    onCancel: run.cancel
  })
  // the digest before the module is loaded: the bytes graded, whatever happens to the file during the run
  // (null for a file that cannot be read: the load fails and says why)
  const digest = await fileDigest(file).catch(function unreadable () { return null })
  const card = await newCard({ handler: file, preset, areas: options.areas, settings, seed, digest, started: run.started })
  return runChecks({
    card,
    lab,
    checks,
    run,
    options,
    params: { handler: path.basename(file), preset },
    startFailure: 'LOAD_FAILED',
    // labs of their own for memory figures, each with the same handler and budget, on free ports
    makeFresh: function freshHandlerLabs () {
      return new FreshLabs({ handler: file, host, dataDir: labDir, budget: settings.memoryBudget, students: lab.students, isolation: options.isolation })
    },
    findContract: async function handlerContract () { return HANDLER_CONTRACT }
  })
}

/**
 * Grade a service: an ingest endpoint at `url`, in any language, started
 * by the grader (`command`), watched (`pid`) or reached only over HTTP
 * (grader/service.js), with the checks a handler gets. Memory is judged
 * only where a pid is known: without one the memory lines say "not
 * judged", and fail (a check passes only on what was measured). Answers
 * are judged by the contract the service keeps (grader/contract.js),
 * found before the first check.
 * @param {{ url: string, command?: string, pid?: number, headers?: Record<string, string>, allowRemote?: boolean,
 *   preset?: 'full'|'quick', settings?: object, areas?: string[], port?: number, host?: string, inputDir?: string,
 *   dataDir?: string, keepOpenMs?: number, seed?: number, startMs?: number, onProgress?: (event: object) => void }} options
 *   `headers`: sent with every body (a token, a content type); `allowRemote`: grade a URL that is not loopback;
 *   `port`, `host`: the reference lab's (its dashboard); the rest as grade()'s
 * @returns {Promise<Card>} with `service`: { url, mode, command, pid, remote, contract, contractProbe, headers, notes }
 * @throws {TypeError} for a URL that is not http://, a remote one without allowRemote, or both command and pid
 */
export function gradeService (options) {
  const target = classifyUrl(options.url)
  if (!target.ok) throw new TypeError(target.problem)
  if (!target.loopback && options.allowRemote !== true) throw new TypeError(remoteRefusal(target.url))
  if (options.command && options.pid !== undefined && options.pid !== null) throw new TypeError('give --start or --pid, not both: the lab either starts the service or watches one that runs')
  if ((options.command || (options.pid !== undefined && options.pid !== null)) && !target.loopback) {
    throw new TypeError('--start and --pid are for a service on this machine: its URL must be a loopback one')
  }
  const seed = options.seed === undefined || options.seed === null ? newSeed() : normalizeSeed(options.seed)
  return withSeed(seed, function gradeServiceWithSeed () { return serviceRun(target, options, seed) })
}

/** Why a URL that is not loopback is refused, and how to grade it anyway. */
export function remoteRefusal (url) {
  return `${url.href} is not a loopback address (127.0.0.0/8, ::1, localhost): the lab aims zip bombs and bounded but heavy load at it. Give --allow-remote to grade a service on another machine you are allowed to load (its memory cannot be read from here)`
}

async function serviceRun (target, options, seed) {
  const { preset, settings, checks, run, labDir, host } = runSetup(options)
  const mode = options.command ? 'started' : options.pid !== undefined && options.pid !== null ? 'watched' : 'unwatched'
  const lab = new ServiceLab({
    mode,
    url: target.url,
    command: options.command,
    pid: options.pid,
    budget: settings.memoryBudget,
    port: options.port ?? 0,
    host,
    dataDir: labDir,
    startMs: options.startMs,
    onCancel: run.cancel
  })
  const headers = { ...options.headers }
  const card = await newCard({ handler: target.url.href, preset, areas: options.areas, settings, seed, digest: null, started: run.started })
  card.service = {
    url: target.url.href,
    mode,
    command: options.command ?? null,
    pid: mode === 'watched' ? options.pid : null,
    remote: !target.loopback,
    contract: null,
    contractProbe: null,
    // the names only: a header's value may be a token
    headers: Object.keys(headers),
    notes: []
  }
  try {
    return await runChecks({
      card,
      lab,
      checks,
      run,
      options: { ...options, headers },
      params: { handler: target.url.href, preset },
      startFailure: 'START_FAILED',
      makeFresh: function freshService () { return new ServiceFresh(lab, { host, dataDir: labDir, budget: settings.memoryBudget }) },
      findContract: async function serviceContract (ctx) {
        const found = await detectContract(function postToService (body) { return ctx.post('student', body) }, seed)
        card.service.contract = found.contract.name
        card.service.contractProbe = found.probe
        return found.contract
      }
    })
  } finally {
    if (mode === 'started') card.service.pid = lab.pid
    card.service.notes.push(...lab.notes())
  }
}

/** What a grading of either kind starts from: the preset's settings, the checks asked for, the run, the lab's folder and host. */
function runSetup (options) {
  const preset = options.preset ?? 'full'
  return {
    preset,
    settings: normalizeSettings(preset, options.settings),
    checks: selectChecks(options.areas),
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

async function newCard ({ handler, preset, areas, settings, seed, digest, started }) {
  return {
    handler,
    preset,
    areas: areas ?? [...AREAS],
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
}

/**
 * Start the lab, run the checks in order on it, and stop everything: the
 * run a handler and a service share. `lab` is the graded target beside the
 * reference lab (GradeLab, ServiceLab); `makeFresh` gives the processes of
 * the memory figures; `findContract` says how answers are judged.
 */
async function runChecks ({ card, lab, checks, run, options, params, startFailure, makeFresh, findContract }) {
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
  const fresh = makeFresh()
  const inputDir = options.inputDir ?? path.join(DEFAULTS.dataDir, 'grade', 'inputs', run.id)
  const ctx = makeContext(lab, fresh, settings, inputDir, seed, options.headers ?? {})
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
        gone = `not run: ${lab.label} is gone (${lab.lastDeath?.message ?? 'it stopped answering'}), and the lab did not start it, so it does not start it again`
      }
      if (gone !== null || skip !== null) {
        card.checks.push(notRun(check, gone ?? skip))
        continue
      }
      // a service the lab did not start is never restarted: the next check meets it as it is
      if ((!lab.alive || dirty) && lab.restartable !== false) await restart(lab, card)
      dirty = false
      const result = await runCheck(check, ctx, lab, { runId: run.id, progress, onProgress })
      card.checks.push(result.record)
      dirty = result.restart
      if (result.died) skip = `not run: ${lab.label ?? 'the student\'s process'} died in "${check.name}" (${lab.restartable === false ? 'the lab did not start it, so it does not start it again' : 'it was started again for the next area'})`
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
        if (where.owned === false) return null // its output is its own: the grader never saw it
        const from = where === lab ? mark : 0
        // the log and the answer travel apart: give the log a moment to arrive
        for (let wait = 0; wait < 5 && !/Error|Exception/.test(where.output().slice(from)); wait++) {
          await new Promise(function later (resolve) { setTimeout(resolve, 20) })
        }
        return `${where.label ?? 'the student\'s process'} logged: ${crashLine(where.output().slice(from))}`
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
    limit: outcome.limit ?? check.limit,
    meaning: check.meaning,
    hint: null,
    reason: mainDied ? lab.lastDeath.message : outcome.reason ?? null,
    ms: Date.now() - startedAt,
    details: outcome.details ?? null
  }
  if (!record.pass) record.hint = check.hint
  // the main lab starts again after it died, or hung; a hang on a fresh lab of the check's own leaves it as it was
  // (a service's fresh process is the service itself: its hang is the main one's)
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

function makeContext (lab, fresh, settings, inputDir, seed, headers) {
  /** The graded endpoint gets the run's headers beside the body's own; the lab's routes get the lab's. */
  function withHeaders (route, body) {
    return route === 'student' ? { ...headers, ...body.headers } : body.headers
  }
  return {
    lab,
    fresh,
    settings,
    inputDir,
    seed,
    /** Sent with every body beside the body's own (a service's token or content type: --header). */
    headers,
    /** How answers are judged (grader/contract.js): set once the lab has started. */
    contract: HANDLER_CONTRACT,
    /** Where a route is served now: /student by the student's process, the others by the reference lab. */
    url: function routeUrl (route) { return lab.urlOf(route) },
    /** POST a body to a route as it is served now (a restart may have moved it). */
    post: function post (route, body) {
      return send(lab.urlOf(route), { timeoutMs: settings.requestMs, ...body, headers: withHeaders(route, body) })
    },
    /** POST a body to a route of another process (a fresh one). */
    postTo: function postTo (other, route, body) {
      return send(other.urlOf(route), { timeoutMs: settings.requestMs, ...body, headers: withHeaders(route, body) })
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

/** A memory check where no pid is known: not measured, so not passed, and the card says why and how to fix it. */
function notJudged (check) {
  return {
    area: check.area,
    name: check.name,
    pass: false,
    figure: 'not judged: no pid, so memory could not be read',
    limit: check.limit,
    meaning: check.meaning,
    hint: 'Give the grader a process to read: --start "CMD" (it starts the service, and reads its memory from outside), or --pid N of the running service. Without either, grade the other areas with --only correctness,speed,safety,resilience.',
    reason: 'the grader has no pid of the service: neither --start nor --pid was given, or the target is remote',
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
